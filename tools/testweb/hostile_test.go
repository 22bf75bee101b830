package testweb

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jimsmart/grobotstxt"
)

func hostWith(t *testing.T, srv *Server, b Behaviour) *Host {
	t.Helper()
	for _, h := range srv.Web().Hosts() {
		if h.Behaviour == b && !h.Wildcard {
			return h
		}
	}
	t.Fatalf("no host with behaviour %s", b)
	return nil
}

func hostileServer(t *testing.T) *Server {
	srv, _ := startTest(t, Config{Hosts: 80, Seed: 21, MaxPages: 40}, ServeConfig{
		SlowDelay: 200 * time.Millisecond, StallFor: 300 * time.Millisecond,
		EndlessFor: 2 * time.Second, EndlessBytes: 2 << 20, BombSize: 16 << 20})
	return srv
}

func rawConn(t *testing.T, srv *Server, h *Host) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp4", netip.AddrPortFrom(h.Addr, uint16(srv.Ports().HTTP)).String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

func writeGet(c net.Conn, h *Host, port int, targets ...string) {
	var b bytes.Buffer
	for _, tg := range targets {
		fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n", tg, h.Name, port)
	}
	c.Write(b.Bytes())
}

func TestHostileBehaviours(t *testing.T) {
	srv := hostileServer(t)
	client := srv.Client()
	port := srv.Ports().HTTP
	url := func(h *Host, p string) string { return origin(h, h.Name, srv.Ports()) + p }
	get := func(u string) (*http.Response, []byte, error) {
		resp, err := client.Get(u)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp, body, err
	}

	t.Run("redirect chain", func(t *testing.T) {
		h := hostWith(t, srv, BehaviourRedirects)
		u := url(h, "/go/3/0")
		var codes []int
		for i := 0; i < 10; i++ {
			resp, _, err := get(u)
			if err != nil {
				t.Fatal(err)
			}
			codes = append(codes, resp.StatusCode)
			if resp.StatusCode == 200 {
				break
			}
			u = resp.Header.Get("Location")
		}
		if fmt.Sprint(codes) != "[308 307 302 302 200]" {
			t.Errorf("codes %v", codes)
		}
	})
	t.Run("redirect loop", func(t *testing.T) {
		h := hostWith(t, srv, BehaviourRedirectLoop)
		u := url(h, "/loop/a/0")
		for i := 0; i < 4; i++ {
			resp, _, err := get(u)
			if err != nil || resp.StatusCode/100 != 3 {
				t.Fatalf("%s: %v %v", u, resp, err)
			}
			u = resp.Header.Get("Location")
		}
		if u != url(h, "/loop/a/0") {
			t.Errorf("loop ended at %s", u)
		}
	})
	t.Run("status codes", func(t *testing.T) {
		h := hostWith(t, srv, BehaviourStatus)
		for _, code := range trapStatusCodes {
			resp, _, err := get(url(h, fmt.Sprintf("/status/%d/0", code)))
			if err != nil || resp.StatusCode != code {
				t.Fatalf("%d: %v %v", code, resp, err)
			}
			if (code == 503 || code == 429) != (resp.Header.Get("Retry-After") != "") {
				t.Errorf("%d: Retry-After %q", code, resp.Header.Get("Retry-After"))
			}
		}
	})
	t.Run("slow", func(t *testing.T) {
		h := hostWith(t, srv, BehaviourSlow)
		start := time.Now()
		resp, _, err := get(url(h, "/"))
		if err != nil || resp.StatusCode != 200 && resp.StatusCode != 503 && resp.StatusCode != 404 {
			t.Fatal(resp, err)
		}
		if d := time.Since(start); d < 200*time.Millisecond {
			t.Errorf("slow host answered in %v", d)
		}
	})
	t.Run("stall", func(t *testing.T) {
		h := hostWith(t, srv, BehaviourStall)
		start := time.Now()
		_, body, err := get(url(h, "/stall/0"))
		if err == nil {
			t.Fatalf("stalled response read completely (%d bytes)", len(body))
		}
		if d := time.Since(start); d < 300*time.Millisecond || d > 5*time.Second {
			t.Errorf("stall lasted %v", d)
		}
	})
	t.Run("endless", func(t *testing.T) {
		h := hostWith(t, srv, BehaviourEndless)
		_, body, err := get(url(h, "/stream/0"))
		if err == nil || len(body) < 1<<20 || len(body) > 3<<20 {
			t.Errorf("endless body: %d bytes, err %v", len(body), err)
		}
	})
	t.Run("gzip bomb", func(t *testing.T) {
		h := hostWith(t, srv, BehaviourGzipBomb)
		resp, body, err := get(url(h, "/bomb/0"))
		if err != nil || resp.Header.Get("Content-Encoding") != "gzip" {
			t.Fatal(resp, err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, zr)
		if err != nil || n != 16<<20 || len(body) > 64<<10 {
			t.Errorf("bomb: %d bytes on the wire inflate to %d (err %v)", len(body), n, err)
		}
	})
	t.Run("wrong length", func(t *testing.T) {
		h := hostWith(t, srv, BehaviourWrongLength)
		if _, _, err := get(url(h, "/")); err == nil {
			t.Errorf("too-long Content-Length read without error")
		}
		odd := escapeTarget(pagePath(h, 1))
		c, br := rawConn(t, srv, h)
		writeGet(c, h, port, odd, odd)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		if _, err := http.ReadResponse(br, nil); err == nil {
			t.Errorf("the response after a too-short Content-Length parsed cleanly")
		}
	})
	t.Run("chunked", func(t *testing.T) {
		h := hostWith(t, srv, BehaviourChunked)
		resp, body, err := get(url(h, "/"))
		d, _ := srv.Truth().Lookup(url(h, "/"))
		if err != nil || len(resp.TransferEncoding) == 0 || int64(len(body)) != d.Bytes {
			t.Errorf("chunked: %v %v, %d bytes, want %d", resp.TransferEncoding, err, len(body), d.Bytes)
		}
	})
	t.Run("close after", func(t *testing.T) {
		h := hostWith(t, srv, BehaviourCloseAfter)
		c, br := rawConn(t, srv, h)
		for i := 1; i <= CloseAfterRequests; i++ {
			writeGet(c, h, port, "/")
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			if resp.Close != (i == CloseAfterRequests) {
				t.Errorf("request %d: close %v", i, resp.Close)
			}
		}
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("connection still open: %v", err)
		}
	})
	t.Run("pipeline break", func(t *testing.T) {
		h := hostWith(t, srv, BehaviourPipelineBreak)
		c, br := rawConn(t, srv, h)
		writeGet(c, h, port, "/", "/", "/")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		if _, err := http.ReadResponse(br, nil); err == nil {
			t.Errorf("pipeline-breaking host answered a second pipelined request")
		}
	})
	t.Run("calendar", func(t *testing.T) {
		h := hostWith(t, srv, BehaviourCalendar)
		d, err := srv.Truth().Lookup(url(h, "/calendar/2026/12/"))
		if err != nil || d.Status != 200 || !strings.Contains(strings.Join(d.Links, " "), "/calendar/2027/01/") {
			t.Errorf("calendar: %+v %v", d, err)
		}
		for _, p := range []string{"/calendar/2026/13/", "/calendar/2026/1/"} {
			if resp, _, _ := get(url(h, p)); resp.StatusCode != 404 {
				t.Errorf("%s: %d", p, resp.StatusCode)
			}
		}
	})
	t.Run("symlink", func(t *testing.T) {
		h := hostWith(t, srv, BehaviourSymlink)
		if resp, _, err := get(url(h, "/a/loop/loop/loop/")); err != nil || resp.StatusCode != 200 {
			t.Errorf("%v %v", resp, err)
		}
		if resp, _, _ := get(url(h, "/a/"+strings.Repeat("loop/", maxTrapDepth+1))); resp.StatusCode != 414 {
			t.Errorf("too deep: %d", resp.StatusCode)
		}
	})
	t.Run("session", func(t *testing.T) {
		h := hostWith(t, srv, BehaviourSession)
		d, _ := srv.Truth().Lookup(url(h, "/"))
		n := 0
		for _, l := range d.Links {
			if strings.Contains(l, "//"+h.Name+":") && !strings.Contains(l, "/images/") && !strings.Contains(l, "/files/") && !strings.Contains(l, "/static/") {
				n++
				if !strings.Contains(l, "sid=") {
					t.Errorf("link without session id: %s", l)
				}
				ld, _ := srv.Truth().Lookup(l)
				if ld.Status != 200 {
					t.Errorf("%s: %d", l, ld.Status)
				}
			}
		}
		if n == 0 {
			t.Error("no same-host links")
		}
	})
	t.Run("non-utf8", func(t *testing.T) {
		h := hostWith(t, srv, BehaviourNonUTF8)
		resp, body, err := get(url(h, "/"))
		if err != nil || utf8.Valid(body) {
			t.Errorf("non-UTF-8 host served valid UTF-8 (%v), Content-Type %q", err, resp.Header.Get("Content-Type"))
		}
	})
	t.Run("spam", func(t *testing.T) {
		var h *Host
		for _, x := range srv.Web().Hosts() {
			if x.Wildcard {
				h = x
			}
		}
		d, err := srv.Truth().Lookup(origin(h, "q1w2e3."+h.Name, srv.Ports()) + "/")
		if err != nil || len(d.Links) < 10 {
			t.Fatalf("%+v %v", d, err)
		}
		resp, _, err := get(d.Links[0])
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("%s: %v %v", d.Links[0], resp, err)
		}
	})
}

func TestRobotsKinds(t *testing.T) {
	srv := hostileServer(t)
	client := srv.Client()
	want := map[RobotsKind]int{RobotsNone: 404, RobotsServerErr: 503, RobotsRedirect: 301}
	seen := map[RobotsKind]bool{}
	for _, h := range srv.Web().Hosts() {
		if seen[h.Robots] || h.Behaviour == BehaviourSlow || h.Behaviour == BehaviourPipelineBreak || h.Wildcard {
			continue
		}
		seen[h.Robots] = true
		resp, err := client.Get(origin(h, h.Name, srv.Ports()) + "/robots.txt")
		if err != nil {
			t.Fatalf("%s %s: %v", h.Robots, h.Name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		code := want[h.Robots]
		if code == 0 {
			code = 200
		}
		if h.Robots == RobotsForbidden {
			code = resp.StatusCode // 401 or 403
			if code != 401 && code != 403 {
				t.Errorf("403 kind: %d", code)
			}
		}
		if resp.StatusCode != code {
			t.Errorf("%s: status %d, want %d", h.Robots, resp.StatusCode, code)
		}
		switch h.Robots {
		case RobotsHuge:
			if len(body) <= 500<<10 {
				t.Errorf("huge robots.txt is %d bytes", len(body))
			}
		case RobotsHTML:
			if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
				t.Errorf("html robots.txt: %s", resp.Header.Get("Content-Type"))
			}
		}
	}
	if len(seen) < len(allRobotsKinds)-2 {
		t.Errorf("saw only %d robots kinds", len(seen))
	}
}

// TestRobotsMatcherAgreesWithGoogle checks the small matcher against
// Google's parser (grobotstxt) on every generated robots.txt and many paths.
func TestRobotsMatcherAgreesWithGoogle(t *testing.T) {
	w := Generate(Config{Hosts: 300, Seed: 5, MaxPages: 200})
	checked := 0
	for _, h := range w.Hosts() {
		body := robotsRules(h)
		if body == "" || h.Robots == RobotsHuge {
			continue
		}
		var targets []string
		for i := 0; i < h.Pages && i < 60; i++ {
			targets = append(targets, escapeTarget(pagePath(h, i)))
		}
		for j := 0; j < 10; j++ {
			targets = append(targets, resourcePath(j))
		}
		targets = append(targets, "/private", "/private/", "/private/open.html", "/private/open.html?x", "/private/index.html", "/privately", "/a.pdf", "/a.pdf?x")
		for _, agent := range []string{"kspider", "googlebot", "otherbot"} {
			for _, tg := range targets {
				got := h.robotsAllowed(agent, tg)
				want := grobotstxt.AgentAllowed(body, agent, "http://"+h.Name+tg)
				if got != want {
					t.Errorf("%s (%s) agent %s %s: testweb %v, grobotstxt %v\n%s", h.Name, h.Robots, agent, tg, got, want, body)
				}
				checked++
			}
		}
	}
	t.Logf("%d decisions compared", checked)
}

func TestRobotsMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, path string
		want          bool
	}{
		{"/", "/x", true}, {"/a", "/abc", true}, {"/a$", "/a", true}, {"/a$", "/ab", false},
		{"/*.pdf$", "/x/y.pdf", true}, {"/*.pdf$", "/x/y.pdf?z", false}, {"/*?*lang=", "/v.php?id=1&lang=th", true},
		{"/*?*lang=", "/v.php", false}, {"/a*b*c", "/axxbyyc", true}, {"/a*b*c", "/axxcyyb", false},
	} {
		if got := robotsMatch(c.pattern, c.path); got != c.want {
			t.Errorf("robotsMatch(%q, %q) = %v", c.pattern, c.path, got)
		}
	}
}
