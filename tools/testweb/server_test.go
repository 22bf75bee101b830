package testweb

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// startTest serves a small web with DNS and a log on free ports.
func startTest(t *testing.T, cfg Config, sc ServeConfig) (*Server, *bytes.Buffer) {
	t.Helper()
	var logBuf bytes.Buffer
	sc.HTTPAddr = "127.0.0.1:0"
	sc.DNSAddr = "127.0.0.1:0"
	sc.Log = &lockedBuffer{b: &logBuf}
	srv, err := Start(context.Background(), Generate(cfg), sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, &logBuf
}

type lockedBuffer struct{ b *bytes.Buffer }

func (l *lockedBuffer) Write(p []byte) (int, error) { return l.b.Write(p) }

// dnsDial resolves through the web's DNS server, as a crawler would.
func dnsDial(srv *Server) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		c := &dns.Client{Timeout: 2 * time.Second}
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(host), dns.TypeA)
		in, _, err := c.Exchange(m, srv.DNSAddr())
		if err != nil {
			return nil, err
		}
		for _, rr := range in.Answer {
			if a, ok := rr.(*dns.A); ok {
				var d net.Dialer
				return d.DialContext(ctx, "tcp4", net.JoinHostPort(a.A.String(), port))
			}
		}
		return nil, fmt.Errorf("%s: rcode %s, no A record", host, dns.RcodeToString[in.Rcode])
	}
}

func TestServeMatchesTruth(t *testing.T) {
	srv, logBuf := startTest(t, Config{Hosts: 60, Seed: 2, MaxPages: 300}, ServeConfig{})
	client := &http.Client{
		Transport:     &http.Transport{DialContext: dnsDial(srv), TLSClientConfig: &tls.Config{RootCAs: srv.CertPool()}, DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       10 * time.Second,
	}
	tr := srv.Truth()
	docs := tr.Reachable(2, 150)
	fetched, https := 0, 0
	for _, d := range docs {
		if d.Kind == "dns-failure" || d.Kind == "trap" {
			continue
		}
		h, _, _, _ := tr.split(d.URL)
		if h.Behaviour != BehaviourNormal {
			continue
		}
		resp, err := client.Get(d.URL)
		if err != nil {
			t.Fatalf("GET %s: %v", d.URL, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != d.Status || int64(len(body)) != d.Bytes && d.Status == 200 {
			t.Errorf("GET %s: %d, %d bytes; truth %d, %d bytes", d.URL, resp.StatusCode, len(body), d.Status, d.Bytes)
		}
		if d.Status == 200 {
			want, err := tr.Body(d.URL)
			if err != nil || !bytes.Equal(body, want) {
				t.Errorf("GET %s: body differs from Truth.Body (%v)", d.URL, err)
			}
		}
		if d.Kind == "page" {
			got := extractLinks(t, d.URL, body)
			if len(got) == 0 {
				t.Errorf("%s: no links", d.URL)
			}
		}
		if strings.HasPrefix(d.URL, "https:") {
			https++
		}
		fetched++
	}
	if fetched < 50 || https == 0 {
		t.Errorf("fetched %d URLs (%d https); want more of both", fetched, https)
	}
	srv.Close()
	lines := strings.Count(logBuf.String(), "\"ev\":\"req\"")
	if lines != fetched {
		t.Errorf("log has %d requests, made %d", lines, fetched)
	}
}

func TestPipelining(t *testing.T) {
	srv, _ := startTest(t, Config{Hosts: 30, Seed: 4, MaxPages: 50}, ServeConfig{})
	h := srv.Web().SeedHosts()[0]
	c, err := net.Dial("tcp4", netip.AddrPortFrom(h.Addr, uint16(srv.Ports().HTTP)).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var req bytes.Buffer
	paths := []string{"/", pagePath(h, 1), "/robots.txt"}
	for _, p := range paths {
		fmt.Fprintf(&req, "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: pipeliner\r\n\r\n", escapeTarget(p), h.Name, srv.Ports().HTTP)
	}
	if _, err := c.Write(req.Bytes()); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	for i := range paths {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i+1, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if i < 2 && resp.StatusCode != 200 {
			t.Errorf("response %d: status %d", i+1, resp.StatusCode)
		}
	}
}

func TestAddressChecks(t *testing.T) {
	srv, _ := startTest(t, Config{Hosts: 30, Seed: 4, MaxPages: 50}, ServeConfig{})
	hosts := srv.Web().Hosts()
	var a, b *Host
	for _, h := range hosts {
		if a == nil {
			a = h
		} else if h.Addr != a.Addr {
			b = h
			break
		}
	}
	get := func(addr, host string) int {
		c, err := net.Dial("tcp4", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", host)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode
	}
	port := srv.Ports().HTTP
	if s := get(netip.AddrPortFrom(b.Addr, uint16(port)).String(), a.Name); s != 421 {
		t.Errorf("host %s asked at %s: status %d, want 421", a.Name, b.Addr, s)
	}
	if s := get(srv.HTTPAddr(), a.Name); s != 200 && s != 503 {
		t.Errorf("host %s at the front address: status %d", a.Name, s)
	}
	if s := get(netip.AddrPortFrom(a.Addr, uint16(port)).String(), "unknown.example"); s != 404 {
		t.Errorf("unknown host: status %d, want 404", s)
	}
}

func TestHTTPSNames(t *testing.T) {
	srv, _ := startTest(t, Config{Hosts: 400, Seed: 3, MaxPages: 20}, ServeConfig{})
	var idn, wild *Host
	for _, h := range srv.Web().Hosts() {
		if h.Wildcard && wild == nil {
			wild = h
		}
		if strings.Contains(h.Name, "xn--") && h.Behaviour == BehaviourNormal && idn == nil {
			idn = h
		}
	}
	client := srv.Client()
	for _, name := range []string{idn.Name, "abc." + wild.Name, wild.Name} {
		u := fmt.Sprintf("https://%s:%d/robots.txt", name, srv.Ports().HTTPS)
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 {
			t.Errorf("%s: no TLS", u)
		}
	}
	// The Unicode form is not what goes on the wire: a client must send punycode.
	if idn.Display == idn.Name {
		t.Errorf("IDN host %s has no Unicode display form", idn.Name)
	}
}

func TestCloseEndsSlowResponses(t *testing.T) {
	srv, _ := startTest(t, Config{Hosts: 80, Seed: 21, MaxPages: 40}, ServeConfig{StallFor: time.Hour, SlowDelay: time.Hour})
	h := hostWith(t, srv, BehaviourStall)
	c, br := rawConn(t, srv, h)
	writeGet(c, h, srv.Ports().HTTP, "/stall/0")
	if _, err := http.ReadResponse(br, nil); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { srv.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end a stalled response")
	}
}
