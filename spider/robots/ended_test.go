package robots

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// doerFunc is a Doer made of a function.
type doerFunc func(*http.Request) (*http.Response, error)

func (f doerFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }

// TestSourceKeepsAnswerReadBeforeEnd: a robots.txt read whole just as
// its caller's context ended (a slot's cutoff) was thrown away, counted
// abandoned, and fetched again at the origin's next use. An answer that
// came whole (a file, a 4xx) is kept; one cut short (a 5xx, which an
// ended context may have caused as well as any failure) is still
// abandoned.
func TestSourceKeepsAnswerReadBeforeEnd(t *testing.T) {
	const origin = "http://example.test"
	for _, c := range []struct {
		status    int
		body      string
		abandoned int64
		rules     *Rules // nil: the fetched file's, /private disallowed
	}{
		{200, "user-agent: *\ndisallow: /private\n", 0, nil},
		{404, "", 0, AllowAll()},
		{503, "", 1, DisallowAll()},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		fetches := 0
		doer := doerFunc(func(r *http.Request) (*http.Response, error) {
			fetches++
			cancel() // the context ends as the answer comes in, whole
			return &http.Response{StatusCode: c.status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(c.body))}, nil
		})
		s := &Source{Fetcher: &Fetcher{Client: doer, UserAgent: "kspider", Timeout: 5 * time.Second}, Cache: NewCache(10, 0)}
		got := s.Rules(ctx, origin)
		if c.rules != nil && got != c.rules || c.rules == nil && (got == DisallowAll() || got.Allowed("/private") || !got.Allowed("/a")) {
			t.Errorf("status %d: rules %p (allow /private %v); want %p (nil: the file's)", c.status, got, got.Allowed("/private"), c.rules)
		}
		if n := s.Abandoned(); n != c.abandoned {
			t.Errorf("status %d: Abandoned() = %d, want %d", c.status, n, c.abandoned)
		}
		again := s.Rules(context.Background(), origin)
		if want := 1 + int(c.abandoned); fetches != want {
			t.Errorf("status %d: %d fetches, want %d", c.status, fetches, want)
		}
		if c.abandoned == 0 && again != got {
			t.Errorf("status %d: the answer was not cached", c.status)
		}
	}
}

// TestSourceUnsentNotAbandoned: a fetch whose request the caller's end
// kept from going out (the Doer's error wraps ErrNotSent) lost nothing
// and is not counted abandoned; a redirect chain whose next hop was not
// sent was cut short and is.
func TestSourceUnsentNotAbandoned(t *testing.T) {
	for _, c := range []struct {
		redirects int
		abandoned int64
	}{{0, 0}, {1, 1}} {
		ctx, cancel := context.WithCancel(context.Background())
		hops := 0
		doer := doerFunc(func(r *http.Request) (*http.Response, error) {
			if hops++; hops <= c.redirects {
				return &http.Response{StatusCode: 301, Header: http.Header{"Location": {"/moved.txt"}}, Body: http.NoBody}, nil
			}
			cancel()
			return nil, fmt.Errorf("%w: %w", ErrNotSent, ctx.Err())
		})
		s := &Source{Fetcher: &Fetcher{Client: doer, UserAgent: "kspider", Timeout: 5 * time.Second}, Cache: NewCache(10, 0)}
		if got := s.Rules(ctx, "http://example.test"); got != DisallowAll() {
			t.Errorf("%d redirects: rules %p, want DisallowAll", c.redirects, got)
		}
		if n := s.Abandoned(); n != c.abandoned {
			t.Errorf("%d redirects: Abandoned() = %d, want %d", c.redirects, n, c.abandoned)
		}
	}
}
