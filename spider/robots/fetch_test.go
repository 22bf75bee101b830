package robots

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// robotsServer is a loopback HTTP server whose /robots.txt answer the test
// sets, counting requests.
type robotsServer struct {
	*httptest.Server
	mu      sync.Mutex
	handler http.HandlerFunc
	hits    atomic.Int64
	agent   atomic.Value
}

func newRobotsServer(t *testing.T, h http.HandlerFunc) *robotsServer {
	t.Helper()
	s := &robotsServer{handler: h}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.agent.Store(r.UserAgent())
		s.mu.Lock()
		h := s.handler
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *robotsServer) set(h http.HandlerFunc) { s.mu.Lock(); s.handler = h; s.mu.Unlock() }

func body(text string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, text)
	}
}

func status(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code) }
}

func newFetcher(timeout time.Duration) *Fetcher {
	return &Fetcher{Client: NewClient(http.DefaultTransport), UserAgent: "KSpider/1.0 (+http://127.0.0.1/bot)", Timeout: timeout}
}

func TestFetchOutcomes(t *testing.T) {
	srv := newRobotsServer(t, body("user-agent: kspider\ndisallow: /no\nsitemap: http://x/s.xml\n"))
	f := newFetcher(5 * time.Second)
	ctx := context.Background()

	res := f.Fetch(ctx, srv.URL)
	if res.Outcome != Fetched || res.HTTPStatus != 200 || res.Rules.Allowed("/no") || !res.Rules.Allowed("/yes") {
		t.Fatalf("200: %+v", res)
	}
	if got := srv.agent.Load(); got != f.UserAgent {
		t.Errorf("User-Agent sent = %q", got)
	}
	if len(res.File.Sitemaps) != 1 {
		t.Errorf("sitemaps = %q", res.File.Sitemaps)
	}
	for _, c := range []struct {
		code    int
		outcome Outcome
		allowed bool
	}{
		{404, Unavailable, true}, {403, Unavailable, true}, {401, Unavailable, true}, {410, Unavailable, true},
		{500, Unreachable, false}, {503, Unreachable, false},
	} {
		srv.set(status(c.code))
		res := f.Fetch(ctx, srv.URL)
		if res.Outcome != c.outcome || res.HTTPStatus != c.code || res.Rules.Allowed("/a") != c.allowed {
			t.Errorf("status %d: outcome %v allowed %v, want %v %v", c.code, res.Outcome, res.Rules.Allowed("/a"), c.outcome, c.allowed)
		}
		if !res.Rules.Allowed("/robots.txt") {
			t.Errorf("status %d: /robots.txt itself disallowed", c.code)
		}
	}
}

func TestFetchRedirects(t *testing.T) {
	other := newRobotsServer(t, body("user-agent: *\ndisallow: /moved\n"))
	srv := newRobotsServer(t, nil)
	// /robots.txt -> /r/1 -> ... -> /r/n -> other server's /robots.txt
	chain := func(n int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var i int
			if r.URL.Path != "/robots.txt" {
				fmt.Sscanf(r.URL.Path, "/r/%d", &i)
			}
			if i+1 < n {
				http.Redirect(w, r, fmt.Sprintf("/r/%d", i+1), http.StatusMovedPermanently)
				return
			}
			http.Redirect(w, r, other.URL+"/robots.txt", http.StatusFound)
		}
	}
	f := newFetcher(5 * time.Second)
	srv.set(chain(5))
	res := f.Fetch(context.Background(), srv.URL)
	if res.Outcome != Fetched || res.Redirects != 5 || res.Rules.Allowed("/moved") {
		t.Fatalf("5 redirects: outcome %v, %d redirects, err %v", res.Outcome, res.Redirects, res.Err)
	}
	srv.set(chain(6))
	res = f.Fetch(context.Background(), srv.URL)
	if res.Outcome != Unavailable || !res.Rules.Allowed("/moved") {
		t.Fatalf("6 redirects: outcome %v, err %v", res.Outcome, res.Err)
	}
	// A plain http.Client would follow redirects itself; the Fetcher
	// still counts them.
	plain := &Fetcher{Client: &http.Client{}, UserAgent: "KSpider"}
	if res := plain.Fetch(context.Background(), srv.URL); res.Outcome != Unavailable || res.Redirects != 5 {
		t.Errorf("plain client, 6 redirects: outcome %v after %d redirects", res.Outcome, res.Redirects)
	}
	srv.set(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(302) })
	if res := f.Fetch(context.Background(), srv.URL); res.Outcome != Unavailable {
		t.Errorf("302 without Location: %v", res.Outcome)
	}
}

// TestFetchRedirectPathAsWritten: a redirect to a path holding '|' or '^'
// beside an escape ("/a%2Fb|c") was followed to the path net/url rebuilt
// from its decoded form ("/a/b%7Cc"), another resource, whose answer was
// taken for the site's robots.txt. Each form of Location is tried; the
// target answers the rules only when asked for as written.
func TestFetchRedirectPathAsWritten(t *testing.T) {
	srv := newRobotsServer(t, nil)
	var mu sync.Mutex
	var seen []string
	for _, target := range []string{"/a%2Fb|c", "/x%2By^z?q=%2F|", srv.URL + "/abs%2F^", "//" + strings.TrimPrefix(srv.URL, "http://") + "/sr%2B|"} {
		path := target[strings.LastIndex(target, "/"):] // with the query
		srv.set(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.RequestURI)
			mu.Unlock()
			if r.URL.Path == "/robots.txt" {
				http.Redirect(w, r, target, http.StatusMovedPermanently)
				return
			}
			if !strings.HasSuffix(r.RequestURI, path) {
				http.NotFound(w, r)
				return
			}
			fmt.Fprint(w, "user-agent: *\ndisallow: /private\n")
		})
		res := newFetcher(5*time.Second).Fetch(context.Background(), srv.URL)
		mu.Lock()
		if res.Outcome != Fetched || res.Rules.Allowed("/private") {
			t.Errorf("redirect to %q: outcome %v (%v), the server saw %q", target, res.Outcome, res.Err, seen)
		}
		seen = seen[:0]
		mu.Unlock()
	}
}

func TestFetchFailures(t *testing.T) {
	// A closed server: connection refused.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	f := newFetcher(5 * time.Second)
	if res := f.Fetch(context.Background(), dead.URL); res.Outcome != Unreachable || res.Err == nil || res.Rules.Allowed("/") {
		t.Errorf("refused: %+v", res)
	}
	// A server slower than the timeout.
	release := make(chan struct{})
	slow := newRobotsServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) })
	f = newFetcher(100 * time.Millisecond)
	if res := f.Fetch(context.Background(), slow.URL); res.Outcome != Unreachable {
		t.Errorf("timeout: %v", res.Outcome)
	}
	// A bad origin.
	if res := f.Fetch(context.Background(), "ftp://127.0.0.1"); res.Outcome != Unreachable || res.Err == nil {
		t.Errorf("ftp origin: %+v", res)
	}
}

func TestFetchBodyLimit(t *testing.T) {
	var b strings.Builder
	b.WriteString("user-agent: *\ndisallow: /early\n")
	for b.Len() < 100<<10 {
		b.WriteString("# filler filler filler filler filler filler\n")
	}
	b.WriteString("disallow: /late\n")
	srv := newRobotsServer(t, body(b.String()))
	f := newFetcher(5 * time.Second)
	f.MaxBody = 64 << 10
	res := f.Fetch(context.Background(), srv.URL)
	if res.Outcome != Fetched || !res.File.Truncated || res.Rules.Allowed("/early") || !res.Rules.Allowed("/late") {
		t.Fatalf("limit: outcome %v truncated %v", res.Outcome, res.File.Truncated)
	}
}

// fakeClock is a settable clock for the cache and the back-off.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func TestSourceBackoffAndTTL(t *testing.T) {
	srv := newRobotsServer(t, status(503))
	clock := &fakeClock{t: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)}
	s := &Source{Fetcher: newFetcher(5 * time.Second), Cache: NewCache(100, 0),
		TTL: 24 * time.Hour, RetryMin: time.Minute, RetryMax: 8 * time.Minute, Now: clock.Now}
	ctx := context.Background()
	u := srv.URL + "/page"
	want := []struct {
		wait time.Duration
		hits int64
	}{{0, 1}, {59 * time.Second, 1}, {time.Second, 2}, {time.Minute, 2}, {time.Minute, 3}, {4 * time.Minute, 4},
		{8 * time.Minute, 5}, {8 * time.Minute, 6}}
	for i, w := range want {
		clock.Advance(w.wait)
		if s.Allowed(ctx, u) {
			t.Fatalf("step %d: allowed while the server answers 503", i)
		}
		if got := srv.hits.Load(); got != w.hits {
			t.Fatalf("step %d (after +%v): %d fetches, want %d", i, w.wait, got, w.hits)
		}
	}
	if _, failures := s.Cache.ID(srv.URL); failures != 6 {
		t.Errorf("failures = %d, want 6", failures)
	}
	srv.set(body("user-agent: *\ndisallow: /private\n"))
	clock.Advance(8 * time.Minute)
	if !s.Allowed(ctx, u) || s.Allowed(ctx, srv.URL+"/private/x") {
		t.Fatal("rules not used after recovery")
	}
	if _, failures := s.Cache.ID(srv.URL); failures != 0 {
		t.Errorf("failures after success = %d", failures)
	}
	hits := srv.hits.Load()
	clock.Advance(23 * time.Hour)
	s.Allowed(ctx, u)
	if srv.hits.Load() != hits {
		t.Error("refetched before the TTL")
	}
	clock.Advance(time.Hour)
	s.Allowed(ctx, u)
	if srv.hits.Load() != hits+1 {
		t.Error("not refetched after 24 h")
	}
}

func TestSourceOneFetchPerOrigin(t *testing.T) {
	release := make(chan struct{})
	srv := newRobotsServer(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
		fmt.Fprint(w, "user-agent: *\ndisallow: /x\n")
	})
	s := &Source{Fetcher: newFetcher(5 * time.Second), Cache: NewCache(10, 0)}
	var wg sync.WaitGroup
	var allowed atomic.Int64
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if s.Allowed(context.Background(), srv.URL+"/y") {
				allowed.Add(1)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond) // let the callers pile up on the fetch
	close(release)
	wg.Wait()
	if srv.hits.Load() != 1 || allowed.Load() != 20 {
		t.Fatalf("%d fetches, %d allowed; want 1 and 20", srv.hits.Load(), allowed.Load())
	}
}

func TestCacheSharingAndBounds(t *testing.T) {
	c := NewCache(3, time.Hour)
	now := time.Unix(1e9, 0)
	a := Parse([]byte("user-agent: *\ndisallow: /a\n")).Rules("x")
	a2 := Parse([]byte("# same rules\nUser-Agent: *\nDisallow: /a\n")).Rules("x")
	b := Parse([]byte("user-agent: *\ndisallow: /b\n")).Rules("x")
	id1 := c.Put("http://one", a, now, 0, 0)
	id2 := c.Put("http://two", a2, now, 0, 0)
	id3 := c.Put("http://three", b, now, 0, 0)
	if id1 != id2 || id1 == id3 {
		t.Errorf("ids %d %d %d: equal rules must share an id, others not", id1, id2, id3)
	}
	if o, s := c.Len(); o != 3 || s != 2 {
		t.Errorf("Len = %d origins, %d sets", o, s)
	}
	if allowed, ok := c.Allowed("http://one/a/x", now); !ok || allowed {
		t.Errorf("cached check: allowed %v cached %v", allowed, ok)
	}
	if _, ok := c.Allowed("http://four/a", now); ok {
		t.Error("uncached origin reported cached")
	}
	c.Put("http://four", AllowAll(), now, 0, 0)
	if o, _ := c.Len(); o != 3 {
		t.Errorf("cache grew past its bound: %d", o)
	}
	if _, ok := c.Get("http://four", now.Add(time.Hour)); ok {
		t.Error("entry alive after its TTL")
	}
	if _, ok := c.Get("http://four", now.Add(time.Hour-1)); !ok {
		t.Error("entry dead before its TTL")
	}
	// Replacing every origin's rules frees the old sets.
	for _, o := range []string{"http://one", "http://two", "http://three", "http://four"} {
		c.Put(o, DisallowAll(), now, 0, 0)
	}
	if _, s := c.Len(); s != 1 {
		t.Errorf("%d rule sets left, want 1", s)
	}
	if c.Put("http://five", AllowAll(), now, 0, 0) == c.Put("http://six", DisallowAll(), now, 0, 0) {
		t.Error("allow-all and disallow-all share a rule-set id")
	}
	empty := Parse(nil).Rules("x")
	if c.Put("http://seven", empty, now, 0, 0) != c.Put("http://eight", AllowAll(), now, 0, 0) {
		t.Error("an empty robots.txt and allow-all do not share a rule-set id")
	}
}

// TestCacheConcurrent hammers a small cache from several goroutines so the
// race detector sees Put, Get and eviction interleave, then checks the
// reference counts add up.
func TestCacheConcurrent(t *testing.T) {
	c := NewCache(50, time.Hour)
	now := time.Unix(1e9, 0)
	sets := []*Rules{AllowAll(), DisallowAll(),
		Parse([]byte("user-agent: *\ndisallow: /a\n")).Rules("x"),
		Parse([]byte("user-agent: *\ndisallow: /b\n")).Rules("x")}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				o := fmt.Sprintf("http://h%d", (i*7+g)%120)
				if i%3 == 0 {
					c.Put(o, sets[(i+g)%len(sets)], now, 0, 0)
				} else {
					c.Allowed(o+"/a/b", now)
				}
			}
		}()
	}
	wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.origins) > 50 {
		t.Errorf("%d origins in a cache of 50", len(c.origins))
	}
	refs := map[uint32]int{}
	for _, e := range c.origins {
		refs[e.id]++
	}
	for id, s := range c.sets {
		if s.rules == nil {
			continue
		}
		if s.refs != refs[uint32(id)] {
			t.Errorf("set %d: refs %d, origins using it %d", id, s.refs, refs[uint32(id)])
		}
	}
	if len(c.byKey) != len(refs) {
		t.Errorf("%d sets indexed, %d in use", len(c.byKey), len(refs))
	}
}

// TestFetchRedirectStrayPercent: a redirect whose Location holds a '%'
// that starts no escape ("/home%") failed url.Parse and was taken for no
// robots.txt: everything allowed, the Disallow lines of the file it named
// ignored. Browsers follow it as written, and so does the Fetcher now. The
// server reads request lines itself: net/http refuses such a target.
func TestFetchRedirectStrayPercent(t *testing.T) {
	for _, loc := range []string{"/home%", "/50%-off.txt", "/a%zz|b?q=%", "//HOST/h%", "http://HOST/x%"} {
		var mu sync.Mutex
		var seen []string
		want := loc
		srv := startRawRobots(t, func(target string) string {
			mu.Lock()
			seen = append(seen, target)
			mu.Unlock()
			switch {
			case target == "/robots.txt":
				return "HTTP/1.1 301 Moved\r\nLocation: " + want + "\r\nContent-Length: 0\r\n\r\n"
			case strings.HasSuffix(target, want[strings.LastIndex(want, "/"):]):
				b := "user-agent: *\ndisallow: /private\n"
				return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(b), b)
			}
			return "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
		})
		want = strings.ReplaceAll(loc, "HOST", srv)
		// The Doer a node uses sends one request, as a transport does; an
		// *http.Client fails on such a Location itself (Unreachable).
		f := &Fetcher{Client: roundTripDoer{http.DefaultTransport}, Timeout: 5 * time.Second}
		res := f.Fetch(context.Background(), "http://"+srv)
		mu.Lock()
		if res.Outcome != Fetched || res.Rules.Allowed("/private") {
			t.Errorf("redirect to %q: outcome %v (%v), the server saw %q", want, res.Outcome, res.Err, seen)
		}
		mu.Unlock()
	}
}

// startRawRobots serves HTTP/1.1 on loopback, reading request lines
// itself, one request per connection; answer returns the whole response
// for a request-target (in origin form, or the path of an absolute one).
// It returns the server's host:port.
func startRawRobots(t *testing.T, answer func(target string) string) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	host := ln.Addr().String()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				br := bufio.NewReader(c)
				line, err := br.ReadString('\n')
				if err != nil {
					return
				}
				for {
					h, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if h == "\r\n" || h == "\n" {
						break
					}
				}
				f := strings.Fields(line)
				if len(f) != 3 {
					return
				}
				target := strings.TrimPrefix(f[1], "http://"+host)
				io.WriteString(c, strings.Replace(answer(target), "\r\n\r\n", "\r\nConnection: close\r\n\r\n", 1))
			}()
		}
	}()
	return host
}

// roundTripDoer sends one request through a transport, following nothing,
// as the node's Doer does through the collector.
type roundTripDoer struct{ t http.RoundTripper }

func (d roundTripDoer) Do(req *http.Request) (*http.Response, error) { return d.t.RoundTrip(req) }

// TestFetchRedirectRelativePathAsWritten: a redirect to a relative path
// ("x%2By|z.txt", "../u%2F^.txt") was resolved by net/url from its decoded
// form, so '|' or '^' beside an escape sent another path ("x+y%7Cz.txt"),
// whose answer (a 404: everything allowed) was taken for the site's rules.
// The chain's first hop goes to a directory written with an escape, which
// the relative ones resolve against.
func TestFetchRedirectRelativePathAsWritten(t *testing.T) {
	srv := newRobotsServer(t, nil)
	for _, c := range []struct{ loc, want string }{
		{"x%2By|z.txt", "/d%2Fe|f/x%2By|z.txt"},
		{"./x%2By^z.txt", "/d%2Fe|f/x%2By^z.txt"},
		{"../u%2F^.txt?q=1", "/u%2F^.txt?q=1"},
		{"/d%2Fe|f/../abs%2F|.txt", "/abs%2F|.txt"},
	} {
		var mu sync.Mutex
		var seen []string
		srv.set(func(w http.ResponseWriter, r *http.Request) {
			// A path kept as written goes in absolute form.
			target := strings.TrimPrefix(r.RequestURI, "http://"+r.Host)
			mu.Lock()
			seen = append(seen, target)
			mu.Unlock()
			switch target {
			case "/robots.txt":
				w.Header().Set("Location", "/d%2Fe|f/first.txt")
				w.WriteHeader(http.StatusMovedPermanently)
			case "/d%2Fe|f/first.txt":
				w.Header().Set("Location", c.loc)
				w.WriteHeader(http.StatusFound)
			case c.want:
				fmt.Fprint(w, "user-agent: *\ndisallow: /private\n")
			default:
				http.NotFound(w, r)
			}
		})
		res := newFetcher(5*time.Second).Fetch(context.Background(), srv.URL)
		mu.Lock()
		if res.Outcome != Fetched || res.Rules.Allowed("/private") {
			t.Errorf("redirect to %q: outcome %v (%v), the server saw %q, want %q last", c.loc, res.Outcome, res.Err, seen, c.want)
		}
		mu.Unlock()
	}
}

// A caller whose context ends mid-fetch gets DisallowAll and caches
// nothing; a caller that waited for that fetch with a live context must
// not get the same DisallowAll (an unreachable file to it, its URLs failed)
// but the origin's rules, fetched again.
func TestSourceAbandonedFetchNotHandedOn(t *testing.T) {
	arrived := make(chan struct{})
	var first atomic.Bool
	srv := newRobotsServer(t, func(w http.ResponseWriter, r *http.Request) {
		if first.CompareAndSwap(false, true) {
			close(arrived)
			<-r.Context().Done() // the client gave up
			return
		}
		fmt.Fprint(w, "user-agent: *\ndisallow: /x\n")
	})
	// Each caller reads the clock twice before it fetches or joins a
	// fetch, the second time under the Source's lock, which the leader's
	// abandoned fetch takes before it leaves: the waiter's second read
	// (the fourth) says it joins the leader's fetch however late it runs.
	joined := make(chan struct{})
	var reads atomic.Int32
	now := func() time.Time {
		if reads.Add(1) == 4 {
			close(joined)
		}
		return time.Now()
	}
	s := &Source{Fetcher: newFetcher(5 * time.Second), Cache: NewCache(10, 0), Now: now}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leader := make(chan bool)
	go func() { leader <- s.Allowed(ctx, srv.URL+"/y") }()
	<-arrived
	waiter := make(chan bool)
	go func() { waiter <- s.Allowed(context.Background(), srv.URL+"/y") }()
	<-joined
	cancel()
	if <-leader {
		t.Error("the caller that gave up was told allowed")
	}
	if !<-waiter {
		t.Error("the waiting caller got the abandoned fetch's DisallowAll, not the rules")
	}
	if n := s.Abandoned(); n != 1 {
		t.Errorf("Abandoned() = %d, want 1", n)
	}
	if got := srv.hits.Load(); got != 2 {
		t.Errorf("%d fetches, want 2 (the abandoned one, then the waiter's)", got)
	}
}
