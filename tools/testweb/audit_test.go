package testweb

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawClient is one connection from a chosen loopback source address.
type rawClient struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
	h  *Host
	pt int
}

func dialFrom(t *testing.T, src string, h *Host, port int) *rawClient {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp4", netip.AddrPortFrom(h.Addr, uint16(port)).String())
	if err != nil {
		t.Fatal(err)
	}
	return &rawClient{t: t, c: c, br: bufio.NewReader(c), h: h, pt: port}
}

func (rc *rawClient) send(target, ua string) {
	fmt.Fprintf(rc.c, "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: %s\r\n\r\n", target, rc.h.Name, rc.pt, ua)
}

func (rc *rawClient) receive() int {
	rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		rc.t.Errorf("%s: %v", rc.h.Name, err)
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func (rc *rawClient) get(target, ua string) int {
	rc.send(target, ua)
	return rc.receive()
}

// TestAuditExact runs deliberately impolite and polite clients and checks
// every audit figure against what they did.
func TestAuditExact(t *testing.T) {
	var logBuf bytes.Buffer
	srv, err := Start(t.Context(), Generate(Config{Hosts: 60, Seed: 11, MaxPages: 300}), ServeConfig{
		HTTPAddr: "127.0.0.1:0", Log: &logBuf, SlowDelay: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	port := srv.Ports().HTTP
	used := map[netip.Addr]bool{}
	find := func(ok func(h *Host) bool) *Host {
		for _, h := range srv.Web().Hosts() {
			if !used[h.Addr] && !h.Wildcard && h.Scheme == "http" && ok(h) {
				used[h.Addr] = true
				return h
			}
		}
		t.Fatal("no suitable host")
		return nil
	}
	normal := func(h *Host) bool { return h.Behaviour == BehaviourNormal && h.robotsAllowed("kspider", "/") }
	hostN := find(func(h *Host) bool { return normal(h) && h.Pages > 2 })
	hostD := find(func(h *Host) bool { return normal(h) && h.Robots == RobotsDisallow })
	hostP := find(func(h *Host) bool { return normal(h) && h.Pages > 10 })
	hostS := find(func(h *Host) bool { return h.Behaviour == BehaviourSlow && h.robotsAllowed("kspider", "/") })
	const rude, polite = "127.0.0.2", "127.0.0.3"
	ua := "kspider/1.0 (+http://example.invalid/bot)"

	// Impolite: three connections to one host at once.
	var par []*rawClient
	for i := 0; i < 3; i++ {
		par = append(par, dialFrom(t, rude, hostN, port))
	}
	for _, rc := range par {
		rc.get("/", ua)
	}
	// Held open together well past the stamps' slack (an open is moved
	// later and a FIN earlier by kernelStampSlack, hiding overlaps up to
	// twice it): closed at once, a loaded machine's three were seen as two.
	time.Sleep(5 * kernelStampSlack)
	for _, rc := range par {
		rc.c.Close()
	}
	// The server sees a close when it reads EOF; wait for that, or the next
	// connection could start before it and count as simultaneous.
	waitIdle(t, srv)
	// Impolite: the same page four times.
	rc := dialFrom(t, rude, hostN, port)
	p1 := escapeTarget(pagePath(hostN, 1))
	for i := 0; i < 4; i++ {
		rc.get(p1, ua)
	}
	rc.c.Close()
	waitIdle(t, srv)
	// Impolite: two forbidden URLs, one allowed.
	rc = dialFrom(t, rude, hostD, port)
	rc.get("/private/a.html", ua)
	rc.get("/private/b.html", ua)
	rc.get("/", ua)
	rc.c.Close()
	// Polite: one connection, a pause between requests.
	rc = dialFrom(t, polite, hostP, port)
	fetched := 0
	for i := 1; i < hostP.Pages && fetched < 3; i++ {
		target := escapeTarget(pagePath(hostP, i))
		if !hostP.robotsAllowed("kspider", target) {
			continue
		}
		if fetched > 0 {
			// 30 ms more than the gap checked below: the server stamps a
			// request's end after its write returns, which under load can
			// come after the client has read the response and begun its pause.
			time.Sleep(80 * time.Millisecond)
		}
		rc.get(target, ua)
		fetched++
	}
	rc.c.Close()
	// Two clients on one slow host at the same time.
	a, b := dialFrom(t, rude, hostS, port), dialFrom(t, polite, hostS, port)
	var wg sync.WaitGroup
	for _, x := range []*rawClient{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x.get("/", ua)
			x.c.Close()
		}()
	}
	wg.Wait()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}

	rep, err := Audit(strings.NewReader(logBuf.String()), AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, got, want any) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if testing.Verbose() {
		t.Log(logBuf.String())
	}
	if testing.Verbose() {
		t.Logf("%+v", rep.Hosts)
	}
	check("requests", rep.Requests, 15)
	check("connections", rep.Connections, 8)
	check("distinct URLs", rep.DistinctURLs, 9)
	check("duplicate fetches", rep.DuplicateFetches, 6)
	check("duplicates", rep.Duplicates, []URLCount{{"http://" + hostN.Name + p1, 4}, {"http://" + hostN.Name + "/", 3}, {"http://" + hostS.Name + "/", 2}})
	check("forbidden", rep.Forbidden, 2)
	check("max conns per host", rep.MaxConnsPerHost, 3)
	check("max conns host", rep.MaxConnsHost, hostN.Name)
	check("max conns per IP", rep.MaxConnsPerIP, 3)
	check("max conns IP", rep.MaxConnsIP, hostN.Addr.String())
	check("max in flight per host", rep.MaxInFlightPerHost, 2) // the slow host
	check("clients", rep.Clients, []ClientReport{{rude, 11, 6, 3}, {polite, 4, 2, 2}})
	if len(rep.Overlaps) != 1 || rep.Overlaps[0].Host != hostS.Name || rep.Overlaps[0].A != rude || rep.Overlaps[0].B != polite {
		t.Errorf("overlaps = %+v, want one on %s", rep.Overlaps, hostS.Name)
	}
	if len(rep.SharedHosts) != 1 || !rep.SharedHosts[0].Interleaved {
		t.Errorf("shared hosts = %+v", rep.SharedHosts)
	}
	for _, h := range rep.Hosts {
		switch h.Host {
		case hostP.Name:
			check("polite max conns", h.MaxConns, 1)
			if h.MinGap < 50*time.Millisecond || h.MinIdleGap < 50*time.Millisecond {
				t.Errorf("polite host gaps %v / %v, want >= 50ms", h.MinGap, h.MinIdleGap)
			}
		case hostD.Name:
			check("forbidden on D", h.Forbidden, 2)
		case hostS.Name:
			if h.MinIdleGap >= 0 {
				t.Errorf("slow host: overlapping requests should give a negative idle gap, got %v", h.MinIdleGap)
			}
		}
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	if !strings.Contains(text.String(), "duplicate fetches   6") {
		t.Errorf("text report:\n%s", text.String())
	}
}

func waitIdle(t *testing.T, srv *Server) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); srv.active.Load() > 0; {
		if time.Now().After(deadline) {
			t.Fatal("server connections did not close")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestAuditRejectsBadLog(t *testing.T) {
	for _, in := range []string{"{not json\n", `{"ev":"other"}` + "\n", `{"ev":"req","start":5,"end":1}` + "\n"} {
		if _, err := Audit(strings.NewReader(in), AuditOptions{}); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: err = %v", in, err)
		}
	}
	// A line over the limit is named too: it said only "bufio.Scanner:
	// token too long".
	long := `{"ev":"req","host":"h"}` + "\n" + `{"ev":"req","host":"` + strings.Repeat("a", 2<<20) + `"}` + "\n"
	if _, err := Audit(strings.NewReader(long), AuditOptions{}); err == nil || !strings.Contains(err.Error(), "line 2: longer than") {
		t.Errorf("long line: err = %v", err)
	}
}

func TestMaxSimultaneous(t *testing.T) {
	ivs := []interval{{0, 10, ""}, {10, 20, ""}, {5, 15, ""}, {14, 16, ""}}
	if got := maxSimultaneous(ivs); got != 3 {
		t.Errorf("got %d, want 3 (touching intervals do not overlap)", got)
	}
}

// TestClientOverlapsAgainstBruteForce: clientOverlaps compares a request
// only with the clients in flight at its start (it compared it with every
// client seen so far, requests × clients: 50 s for 200,000 requests from
// 20,000 addresses on one host). The pairs and the moments found must be
// those of comparing every earlier request.
func TestClientOverlapsAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for round := range 200 {
		n, clients := 1+rng.IntN(60), 1+rng.IntN(8)
		reqs := make([]interval, n)
		for i := range reqs {
			start := int64(rng.IntN(100))
			reqs[i] = interval{start, start + int64(rng.IntN(30)), fmt.Sprintf("127.0.0.%d", rng.IntN(clients))}
		}
		sort.SliceStable(reqs, func(i, j int) bool { return reqs[i].start < reqs[j].start })
		want := map[[2]string]int64{}
		for i, iv := range reqs {
			for _, prev := range reqs[:i] {
				if prev.who != iv.who && prev.end > iv.start {
					pair := [2]string{min(prev.who, iv.who), max(prev.who, iv.who)}
					if _, ok := want[pair]; !ok {
						want[pair] = iv.start
					}
				}
			}
		}
		out, _ := clientOverlaps("h", reqs)
		got := map[[2]string]int64{}
		for _, o := range out {
			got[[2]string{o.A, o.B}] = o.At
		}
		if len(out) != len(got) || !maps.Equal(got, want) {
			t.Fatalf("round %d: overlaps %v, want %v\nrequests %v", round, got, want, reqs)
		}
	}
}
