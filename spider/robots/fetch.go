package robots

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/kspider/kspider/collector"
)

// Doer sends one HTTP request; *http.Client is one. It must not follow
// redirects itself (NewClient returns such a client): the Fetcher counts
// and follows them. An *http.Client without a CheckRedirect is used through
// a copy that does not follow them.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// NewClient returns an *http.Client that leaves redirects to the Fetcher.
func NewClient(t http.RoundTripper) *http.Client {
	return &http.Client{
		Transport:     t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Outcome is how a robots.txt fetch ended, in RFC 9309 section 2.3 terms.
type Outcome uint8

const (
	// Fetched: a 2xx answer; its body is the robots.txt.
	Fetched Outcome = iota
	// Unavailable: a 4xx answer, or more redirects than allowed; there is no
	// robots.txt and everything may be crawled.
	Unavailable
	// Unreachable: a 5xx answer or a network failure; nothing may be
	// crawled until a later fetch succeeds.
	Unreachable
)

func (o Outcome) String() string {
	switch o {
	case Fetched:
		return "fetched"
	case Unavailable:
		return "unavailable"
	case Unreachable:
		return "unreachable"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Result is what Fetch found out about one origin.
type Result struct {
	Outcome    Outcome
	HTTPStatus int    // the last status code, 0 when no answer came
	URL        string // the last URL asked (after redirects)
	Redirects  int
	File       *File  // the parsed body when Fetched
	Rules      *Rules // the rules for the Fetcher's agent under Outcome
	Err        error  // why it was Unreachable or Unavailable, when known
}

// Fetcher fetches and interprets robots.txt files.
type Fetcher struct {
	Client       Doer          // required
	UserAgent    string        // sent, and the agent whose rules are compiled
	MaxBody      int           // bytes read and parsed; DefaultMaxSize when 0
	MaxRedirects int           // redirects followed; 5 when 0 (RFC 9309: at least 5)
	Timeout      time.Duration // for the whole fetch, redirects included; 30 s when 0
}

// Fetch fetches origin + "/robots.txt" (origin is "scheme://authority").
func (f *Fetcher) Fetch(ctx context.Context, origin string) Result {
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	maxRedirects := f.MaxRedirects
	if maxRedirects <= 0 {
		maxRedirects = 5
	}
	u, err := url.Parse(origin + "/robots.txt")
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return f.result(Result{Outcome: Unreachable, URL: origin, Err: fmt.Errorf("robots: bad origin %q", origin)})
	}
	res := Result{}
	for {
		res.URL = u.String()
		resp, err := f.get(ctx, u)
		if err != nil {
			res.Outcome, res.Err = Unreachable, err
			return f.result(res)
		}
		res.HTTPStatus = resp.StatusCode
		switch c := resp.StatusCode; {
		case c >= 200 && c < 300:
			body, err := f.readBody(resp.Body)
			resp.Body.Close()
			if err != nil {
				res.Outcome, res.Err = Unreachable, fmt.Errorf("robots: reading %s: %w", res.URL, err)
				return f.result(res)
			}
			res.Outcome, res.File = Fetched, ParseLimit(body, f.maxBody())
			return f.result(res)
		case c >= 300 && c < 400:
			drain(resp.Body)
			loc := resp.Header.Get("Location")
			next, err := u.Parse(loc)
			if fixed, stray := collector.EscapeStrayPercent(loc); err != nil && stray {
				// "/home%": browsers follow it as written, and so do we
				// (keepLocationPath); taken for a bad Location, it meant
				// "no robots.txt", everything allowed, a site's own
				// Disallow lines ignored by its broken redirect.
				next, err = u.Parse(fixed)
			}
			switch {
			case loc == "" || err != nil:
				res.Outcome, res.Err = Unavailable, fmt.Errorf("robots: %s: status %d with bad Location %q", res.URL, c, loc)
				return f.result(res)
			case next.Scheme != "http" && next.Scheme != "https":
				res.Outcome, res.Err = Unavailable, fmt.Errorf("robots: %s: redirect to non-HTTP %q", res.URL, loc)
				return f.result(res)
			case next.Hostname() == "":
				// Not followed: a client would fail (Unreachable, the site
				// disallowed) or, for "http://:80/", dial its own machine.
				res.Outcome, res.Err = Unavailable, fmt.Errorf("robots: %s: redirect to %q, which names no host", res.URL, loc)
				return f.result(res)
			case res.Redirects >= maxRedirects:
				// RFC 9309 2.3.1.2: after five redirects the file may be
				// taken as unavailable.
				res.Outcome, res.Err = Unavailable, fmt.Errorf("robots: %s: more than %d redirects", origin, maxRedirects)
				return f.result(res)
			}
			res.Redirects++
			keepLocationPath(next, u, loc)
			u = next
		case c >= 400 && c < 500:
			drain(resp.Body)
			res.Outcome = Unavailable
			return f.result(res)
		default: // 5xx, and anything HTTP does not define
			drain(resp.Body)
			res.Outcome, res.Err = Unreachable, fmt.Errorf("robots: %s: status %d", res.URL, c)
			return f.result(res)
		}
	}
}

func (f *Fetcher) get(ctx context.Context, u *url.URL) (*http.Response, error) {
	// u itself, not u.String() parsed again: a path kept as written
	// (keepLocationPath) would be rebuilt from its decoded form, and one
	// holding a '%' that starts no escape would not parse.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "", nil)
	if err != nil {
		return nil, err
	}
	cu := *u
	req.URL, req.Host = &cu, cu.Host
	if f.UserAgent != "" {
		req.Header.Set("User-Agent", f.UserAgent)
	}
	client := f.Client
	switch c := client.(type) {
	case nil:
		return nil, errors.New("robots: Fetcher has no Client")
	case *http.Client:
		if c.CheckRedirect == nil {
			// A default client would follow ten redirects on its own and
			// hide them from the count; a copy that returns them is cheap.
			cc := *c
			cc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			client = &cc
		}
	}
	return client.Do(req)
}

// keepLocationPath makes next, resolved from base and a Location header's
// loc, carry loc's path as written (in next.Opaque, "//host/path": String
// gives it back, a request sends it in absolute form). net/url resolves a
// reference from its decoded path, so "/a%2Fb|c" became "/a/b%7Cc" and
// "%2B" '+': another resource, whose rules were taken for the site's. The
// path is resolved as RFC 3986 section 5.2 does, on the escaped text: a
// relative one ("x.txt", "../x") against base's path as sent. It is kept
// when it holds only bytes a request line may carry and decodes to the
// path net/url resolved, or differs from it by dot segments alone; any
// other is left as net/url writes it.
func keepLocationPath(next, base *url.URL, loc string) {
	path := loc
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	switch i := strings.Index(path, "//"); {
	case i == 0 || i > 0 && path[i-1] == ':' && !strings.ContainsAny(path[:i-1], "/:"):
		// "scheme://authority/path" or "//authority/path".
		j := strings.IndexByte(path[i+2:], '/')
		if j < 0 {
			return
		}
		path = path[i+2+j:]
	case strings.HasPrefix(path, "/"):
	case strings.Contains(path, ":") && !strings.Contains(path[:strings.IndexByte(path, ':')], "/"):
		return // "scheme:opaque", or a first segment net/url refuses
	default:
		// Relative to base's directory (empty: base's own path).
		basePath := sentPath(base)
		if path == "" {
			path = basePath
		} else {
			path = basePath[:strings.LastIndexByte(basePath, '/')+1] + path
		}
	}
	resolved := removeDotSegments(path)
	// net/url removes dot segments from the decoded path, where "%2F" is a
	// separator: "/d%2Fe/../x" became "/d/x", not RFC 3986's "/x".
	dots := resolved != path
	path = resolved
	if path == next.EscapedPath() {
		return
	}
	for i := 0; i < len(path); i++ {
		if path[i] <= ' ' || path[i] >= 0x7f {
			return
		}
	}
	escaped, _ := collector.EscapeStrayPercent(path)
	p, err := url.PathUnescape(escaped)
	if err != nil || p != next.Path && !dots {
		return // not the path net/url resolved, and not for dot segments
	}
	next.Path, next.RawPath, next.Opaque = p, "", "//"+next.Host+path
}

// sentPath is the path of u as a request for it sends it: kept as
// written (keepLocationPath), or net/url's.
func sentPath(u *url.URL) string {
	if rest, ok := strings.CutPrefix(u.Opaque, "//"); ok {
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			return rest[i:]
		}
		return "/"
	}
	if p := u.EscapedPath(); p != "" {
		return p
	}
	return "/"
}

// removeDotSegments is RFC 3986 section 5.2.4's, on an escaped path
// starting with '/': "." and ".." segments go, ".." taking the segment
// before it.
func removeDotSegments(path string) string {
	if !strings.Contains(path, "/.") {
		return path
	}
	var out []string
	segs := strings.Split(path[1:], "/")
	for i, seg := range segs {
		last := i == len(segs)-1
		switch seg {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, seg)
		}
	}
	return "/" + strings.Join(out, "/")
}

func (f *Fetcher) maxBody() int {
	if f.MaxBody > 0 {
		return f.MaxBody
	}
	return DefaultMaxSize
}

// readBody reads up to maxBody bytes and one more, so ParseLimit can tell a
// body of exactly the limit from a longer one.
func (f *Fetcher) readBody(r io.Reader) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, int64(f.maxBody())+1))
}

func (f *Fetcher) result(res Result) Result {
	switch res.Outcome {
	case Fetched:
		res.Rules = res.File.Rules(f.UserAgent)
	case Unavailable:
		res.Rules = AllowAll()
	default:
		res.Rules = DisallowAll()
	}
	return res
}

// drain reads a little of an unwanted body so the connection can be reused,
// and closes it.
func drain(b io.ReadCloser) {
	io.Copy(io.Discard, io.LimitReader(b, 4<<10))
	b.Close()
}
