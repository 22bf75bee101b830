package collector

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kspider/kspider/tools/testweb"
)

// hostileWeb serves a test web with every hostile kind, with short bounds.
func hostileWeb(t *testing.T) (*testweb.Server, *lockedBuffer, LookupFunc) {
	return startWeb(t, testweb.Config{Hosts: 80, Seed: 21, MaxPages: 40}, testweb.ServeConfig{
		SlowDelay: 200 * time.Millisecond, StallFor: time.Second,
		EndlessFor: 3 * time.Second, EndlessBytes: 8 << 20, BombSize: 64 << 20})
}

// hostsWith returns the web's hosts with behaviour b that resolve.
func hostsWith(srv *testweb.Server, b testweb.Behaviour) []*testweb.Host {
	var hs []*testweb.Host
	for _, h := range srv.Web().Hosts() {
		if h.Behaviour == b && !h.Wildcard && (h.DNS == testweb.DNSNormal || h.DNS == testweb.DNSCNAME) {
			hs = append(hs, h)
		}
	}
	return hs
}

func originURL(srv *testweb.Server, h *testweb.Host) string {
	port := srv.Ports().HTTP
	if h.Scheme == "https" {
		port = srv.Ports().HTTPS
	}
	return h.Scheme + "://" + h.Name + ":" + strconv.Itoa(port)
}

// pageURLs lists the host's own pages linked from its front page, "/" first.
func pageURLs(t *testing.T, srv *testweb.Server, h *testweb.Host, n int) []string {
	o := originURL(srv, h)
	d, err := srv.Truth().Lookup(o + "/")
	if err != nil {
		t.Fatal(err)
	}
	urls := []string{o + "/"}
	for _, l := range d.Links {
		if len(urls) == n {
			break
		}
		if ld, err := srv.Truth().Lookup(l); err == nil && ld.Kind == "page" && strings.HasPrefix(l, o+"/") && !slices.Contains(urls, l) {
			urls = append(urls, l)
		}
	}
	return urls
}

// TestHostileWeb fetches from every hostile kind of the test web, with
// pipelining off and on, and checks each result and its time bound, and
// that the web's audit saw one connection per host at a time.
func TestHostileWeb(t *testing.T) {
	for _, depth := range []int{1, 8} {
		t.Run("pipeline="+strconv.Itoa(depth), func(t *testing.T) { hostile(t, depth) })
	}
}

func hostile(t *testing.T, depth int) {
	srv, log, lookup := hostileWeb(t)
	const maxBody = 2 << 20
	c := newCollector(t, srv, lookup, Config{Pipeline: depth, MaxBody: maxBody, FirstByte: 5 * time.Second,
		IdleRead: 500 * time.Millisecond, ResponseTimeout: 8 * time.Second, Linger: 2 * time.Second})
	truth := srv.Truth()
	type check struct {
		name  string
		b     testweb.Behaviour
		paths []string // empty: the host's pages
		bound time.Duration
		check func(t *testing.T, h *testweb.Host, b *Batch)
	}
	exact := func(t *testing.T, r *Result) {
		t.Helper()
		want, err := truth.Body(r.URL)
		if err != nil {
			t.Fatal(err)
		}
		if r.Kind != OK || r.Status != 200 || !bytes.Equal(r.Body, want) {
			t.Errorf("%s: %s (%v) status %d, %d bytes, want %d", r.URL, r.Kind, r.Err, r.Status, len(r.Body), len(want))
		}
	}
	allExact := func(t *testing.T, h *testweb.Host, b *Batch) {
		for i := range b.Results {
			exact(t, &b.Results[i])
		}
	}
	checks := []check{
		{"redirects", testweb.BehaviourRedirects, []string{"/go/3/0", "/go/2/1"}, 8 * time.Second, func(t *testing.T, h *testweb.Host, b *Batch) {
			for i := range b.Results {
				r := &b.Results[i]
				d, _ := truth.Lookup(r.URL)
				if r.Kind != OK || r.Status != d.Status || r.Location != d.Location || r.Status/100 != 3 {
					t.Errorf("%s: %s %d %q, want %d %q", r.URL, r.Kind, r.Status, r.Location, d.Status, d.Location)
				}
			}
		}},
		{"redirect loop", testweb.BehaviourRedirectLoop, []string{"/loop/a/0", "/loop/b/0"}, 8 * time.Second, func(t *testing.T, h *testweb.Host, b *Batch) {
			for i := range b.Results {
				if r := &b.Results[i]; r.Status/100 != 3 || r.Location == "" {
					t.Errorf("%s: %d %q", r.URL, r.Status, r.Location)
				}
			}
		}},
		{"status", testweb.BehaviourStatus, []string{"/status/404/0", "/status/410/0", "/status/500/0", "/status/503/0", "/status/429/0"}, 8 * time.Second, func(t *testing.T, h *testweb.Host, b *Batch) {
			for i := range b.Results {
				r := &b.Results[i]
				code, _ := strconv.Atoi(strings.Split(r.URL, "/")[4])
				if r.Kind != OK || r.Status != code || (code == 503 || code == 429) != (r.RetryAfter != "") {
					t.Errorf("%s: %s %d Retry-After %q", r.URL, r.Kind, r.Status, r.RetryAfter)
				}
			}
		}},
		{"slow", testweb.BehaviourSlow, nil, 10 * time.Second, func(t *testing.T, h *testweb.Host, b *Batch) {
			allExact(t, h, b)
			if ft := b.Results[0].Timings.FirstByte; ft < 200*time.Millisecond {
				t.Errorf("slow host answered after %v", ft)
			}
		}},
		{"stall", testweb.BehaviourStall, []string{"/stall/1", "/stall/0", "/"}, 12 * time.Second, func(t *testing.T, h *testweb.Host, b *Batch) {
			if r := &b.Results[0]; r.Kind != Timeout || !r.Short || r.Status != 200 || len(r.Body) == 0 {
				t.Errorf("%s: %s short %v status %d, %d bytes; want the quarter body it sent", r.URL, r.Kind, r.Short, r.Status, len(r.Body))
			}
			// The timeout ended the list (unsent; pipelined behind it,
			// sent and not answered).
			for _, r := range b.Results[1:] {
				if r.Status != 0 || r.Err == nil || r.Attempts > min(depth-1, 1) {
					t.Errorf("%s: %s (%v) status %d after %d attempts, want no response", r.URL, r.Kind, r.Err, r.Status, r.Attempts)
				}
			}
		}},
		{"endless", testweb.BehaviourEndless, []string{"/stream/0", "/"}, 12 * time.Second, func(t *testing.T, h *testweb.Host, b *Batch) {
			if r := &b.Results[0]; r.Kind != TooLarge || !r.Truncated || len(r.Body) != maxBody {
				t.Errorf("%s: %s truncated %v, %d bytes", r.URL, r.Kind, r.Truncated, len(r.Body))
			}
			exact(t, &b.Results[1])
		}},
		{"gzip bomb", testweb.BehaviourGzipBomb, []string{"/bomb/0", "/"}, 8 * time.Second, func(t *testing.T, h *testweb.Host, b *Batch) {
			r := &b.Results[0]
			if r.Kind != TooLarge || !r.Truncated || len(r.Body) != maxBody || r.ContentEncoding != "gzip" || len(r.WireBody) > 256<<10 {
				t.Errorf("%s: %s truncated %v, %d bytes from %d on the wire (%q)", r.URL, r.Kind, r.Truncated, len(r.Body), len(r.WireBody), r.ContentEncoding)
			}
			if !bytes.Contains(r.Head, []byte("\r\nContent-Encoding: gzip\r\n")) {
				t.Errorf("head lost Content-Encoding: %q", r.Head)
			}
			exact(t, &b.Results[1])
		}},
		{"wrong length", testweb.BehaviourWrongLength, nil, 10 * time.Second, func(t *testing.T, h *testweb.Host, b *Batch) {
			for i := range b.Results {
				r := &b.Results[i]
				want, _ := truth.Body(r.URL)
				switch {
				case r.Kind == Reset && r.Short && bytes.Equal(r.Body, want):
					// Content-Length too long: all the body, then a hang-up.
				case r.Kind == OK && len(r.Body) == len(want)-100 && bytes.HasPrefix(want, r.Body):
					// Content-Length too short: what it announced.
				default:
					t.Errorf("%s: %s (%v) %d bytes, truth %d", r.URL, r.Kind, r.Err, len(r.Body), len(want))
				}
			}
		}},
		{"chunked", testweb.BehaviourChunked, nil, 8 * time.Second, func(t *testing.T, h *testweb.Host, b *Batch) {
			allExact(t, h, b)
			if !bytes.Contains(b.Results[0].Head, []byte("Transfer-Encoding: chunked")) {
				t.Errorf("head %q", b.Results[0].Head)
			}
		}},
		{"close after 3", testweb.BehaviourCloseAfter, nil, 10 * time.Second, func(t *testing.T, h *testweb.Host, b *Batch) {
			allExact(t, h, b)
			if want := (len(b.Results) + 1 + testweb.CloseAfterRequests - 1) / testweb.CloseAfterRequests; b.Connections != want {
				t.Errorf("%d connections for %d requests, want %d", b.Connections, len(b.Results)+1, want)
			}
		}},
		{"pipeline break", testweb.BehaviourPipelineBreak, nil, 10 * time.Second, func(t *testing.T, h *testweb.Host, b *Batch) {
			allExact(t, h, b)
			if depth > 1 && !b.NoPipeline {
				t.Errorf("host not on the no-pipelining list")
			}
		}},
		{"non-utf8", testweb.BehaviourNonUTF8, nil, 8 * time.Second, allExact},
	}
	var wg sync.WaitGroup
	for _, ck := range checks {
		hs := hostsWith(srv, ck.b)
		if len(hs) == 0 {
			t.Errorf("%s: no host", ck.name)
			continue
		}
		h := hs[0]
		var urls []string
		if ck.paths == nil {
			urls = pageURLs(t, srv, h, 10)
		} else {
			for _, p := range ck.paths {
				urls = append(urls, originURL(srv, h)+p)
			}
		}
		wg.Go(func() {
			start := time.Now()
			b := c.Fetch(context.Background(), &List{Requests: listOf(urls).Requests, Robots: true})
			defer c.Release(b)
			if d := time.Since(start); d > ck.bound {
				t.Errorf("%s (%s): %v, bound %v", ck.name, h.Name, d, ck.bound)
			}
			if b.Robots.Status == 0 {
				t.Errorf("%s: robots.txt: %s %v", ck.name, b.Robots.Kind, b.Robots.Err)
			}
			t.Run(ck.name, func(t *testing.T) { ck.check(t, h, b) })
		})
	}
	wg.Wait()
	rep := audit(t, srv, log)
	if rep.MaxConnsPerHost != 1 || rep.MaxInFlightPerHost != 1 {
		t.Errorf("audit: %d connections at once on %s, %d requests in flight", rep.MaxConnsPerHost, rep.MaxConnsHost, rep.MaxInFlightPerHost)
	}
	if rep.Forbidden != 0 && false {
		t.Errorf("forbidden")
	}
}

// TestDialFailures checks that names that do not resolve (NXDOMAIN,
// SERVFAIL, no answer) end as dns and a refused port as connect, for every
// URL of the list, within bounds.
func TestDialFailures(t *testing.T) {
	srv, _, lookup := hostileWeb(t)
	c := newCollector(t, srv, lookup, Config{})
	for _, kind := range []testweb.DNSKind{testweb.DNSNXDomain, testweb.DNSServFail, testweb.DNSTimeout} {
		var h *testweb.Host
		for _, x := range srv.Web().Hosts() {
			if x.DNS == kind {
				h = x
				break
			}
		}
		if h == nil {
			t.Errorf("no host with DNS %s", kind)
			continue
		}
		start := time.Now()
		b := c.Fetch(context.Background(), listOf([]string{originURL(srv, h) + "/", originURL(srv, h) + "/a"}))
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: %v", kind, d)
		}
		for _, r := range b.Results {
			if r.Kind != DNS || r.Attempts != 0 {
				t.Errorf("%s %s: %s (%v), %d attempts", kind, r.URL, r.Kind, r.Err, r.Attempts)
			}
		}
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	b := c.Fetch(context.Background(), listOf([]string{"http://" + addr + "/", "http://" + addr + "/b", "ftp://" + addr + "/"}))
	for i, r := range b.Results {
		if want := []Kind{Connect, Connect, BadURL}[i]; r.Kind != want {
			t.Errorf("%s: %s (%v), want %s", r.URL, r.Kind, r.Err, want)
		}
	}
}

// TestAnnouncedLengthNotAllocated: a server announcing a 10 MiB body and
// hanging up after 100 bytes had the collector allocate the whole 10 MiB for
// each response (the buffer was sized from Content-Length): 20 responses,
// 200 MiB. The buffer now grows as bytes come.
func TestAnnouncedLengthNotAllocated(t *testing.T) {
	s := startRaw(t, func(cs *rawConn, req *http.Request) bool {
		fmt.Fprintf(cs.bw, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", 10<<20, strings.Repeat("x", 100))
		return false
	})
	c := rawCollector(t, Config{MaxBody: 10 << 20})
	const lists = 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range lists {
		b := c.Fetch(context.Background(), &List{Requests: []Request{{URL: s.url(fmt.Sprintf("/%d", i))}}})
		if r := &b.Results[0]; !r.Short || len(r.WireBody) != 100 {
			t.Errorf("%s: %s, %d bytes, short %v; want 100 bytes, cut short", r.URL, r.Kind, len(r.WireBody), r.Short)
		}
		c.Release(b)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > lists<<20 {
		t.Errorf("%d responses of 100 bytes announcing 10 MiB allocated %d MiB", lists, got>>20)
	}
}
