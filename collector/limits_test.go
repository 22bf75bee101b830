package collector

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestHostileHeadsNamed: a head of a million short header lines, a status
// line with a 10 MB reason and 1xx responses without end each fail at
// once, bounded, and the error names the limit and its value: they said
// "response header block over the limit" and "too many 1xx responses",
// and an operator could not tell which setting to look at.
func TestHostileHeadsNamed(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		kind       Kind
		send       func(cs *rawConn) bool
	}{
		{"million headers", "MaxHeader (65536 bytes)", TooLarge, func(cs *rawConn) bool {
			cs.bw.WriteString("HTTP/1.1 200 OK\r\n")
			for range 1_000_000 {
				if _, err := cs.bw.WriteString("a:b\r\n"); err != nil {
					return false
				}
			}
			cs.bw.WriteString("Content-Length: 0\r\n\r\n")
			return true
		}},
		{"10 MB reason", "MaxHeader (65536 bytes)", TooLarge, func(cs *rawConn) bool {
			cs.bw.WriteString("HTTP/1.1 200 " + strings.Repeat("r", 10<<20) + "\r\nContent-Length: 0\r\n\r\n")
			return true
		}},
		{"1xx without end", "MaxInterim (8)", BadResponse, func(cs *rawConn) bool {
			for range 1_000_000 {
				if _, err := cs.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
					return false
				}
			}
			return true
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startRaw(t, func(cs *rawConn, req *http.Request) bool { return tc.send(cs) })
			c := rawCollector(t, Config{Linger: 50 * time.Millisecond})
			start := time.Now()
			b := c.Fetch(context.Background(), rawList(s, 2))
			defer c.Release(b)
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
			for _, r := range b.Results {
				if r.Kind != tc.kind || r.Err == nil || !strings.Contains(r.Err.Error(), tc.want) {
					t.Errorf("%s: %s (%v); want %s naming %s", r.URL, r.Kind, r.Err, tc.kind, tc.want)
				}
			}
		})
	}
}

// TestHugeChunkLineNamed: a chunked body whose chunk-size line runs on
// (10 MB of leading zeros, or of extension) fails at once, bounded, and
// says so: it said "header line too long", a header, where the head was
// fine.
func TestHugeChunkLineNamed(t *testing.T) {
	for _, line := range []string{"0", ";"} {
		s := startRaw(t, func(cs *rawConn, req *http.Request) bool {
			cs.bw.WriteString("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
			if line == ";" {
				cs.bw.WriteString("5")
			}
			for range 160 {
				if _, err := cs.bw.WriteString(strings.Repeat(line, 64<<10)); err != nil {
					return false
				}
			}
			cs.bw.WriteString("5\r\nhello\r\n0\r\n\r\n")
			return true
		})
		c := rawCollector(t, Config{Linger: 50 * time.Millisecond})
		start := time.Now()
		b := c.Fetch(context.Background(), rawList(s, 1))
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("took %v", d)
		}
		if r := &b.Results[0]; r.Kind != BadResponse || r.Err == nil || !strings.Contains(r.Err.Error(), "chunk-size line") {
			t.Errorf("line of %q: %s: %s (%v); want bad-response naming the chunk-size line", line, r.URL, r.Kind, r.Err)
		}
		c.Release(b)
	}
}

// TestReleasedResultHoldsNoHeader: a head of 64 KiB of short, distinct
// header lines parses into a Header map of some 900 KiB. A result given
// back (Collector.ReleaseResult, from List.Each) kept its map until the
// batch went, so a hostile host's list of 20 such heads held 18 MB while
// its bodies were long released: 5 GB with 300 fetchers, 14 times the
// MaxHeader a fetcher was thought to cost. Released, a result holds none.
func TestReleasedResultHoldsNoHeader(t *testing.T) {
	var hb strings.Builder
	hb.WriteString("HTTP/1.1 200 OK\r\n")
	for i := 0; hb.Len() < 60<<10; i++ {
		fmt.Fprintf(&hb, "%x:\r\n", i)
	}
	hb.WriteString("Content-Length: 2\r\n\r\nok")
	head := hb.String()
	s := startRaw(t, func(cs *rawConn, req *http.Request) bool {
		cs.bw.WriteString(head)
		return true
	})
	c := rawCollector(t, Config{})
	const n = 20
	l := rawList(s, n)
	l.Each = c.ReleaseResult
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b := c.Fetch(context.Background(), l)
	runtime.GC()
	runtime.ReadMemStats(&after)
	for _, r := range b.Results {
		if r.Kind != OK {
			t.Fatalf("%s: %s (%v)", r.URL, r.Kind, r.Err)
		}
	}
	// One map is some 900 KiB: the batch may hold a few, never one each.
	if held := int64(after.HeapAlloc) - int64(before.HeapAlloc); held > 4<<20 {
		t.Errorf("a batch of %d released results holds %d KiB more heap", n, held>>10)
	}
	runtime.KeepAlive(b)
	c.Release(b)
}

// TestWireLimitNamed: a chunked body of a byte per chunk, each behind a
// chunk-size line with a short extension (within net/http's bound on
// chunk overhead, 16 bytes a chunk and twice its data), passes the bytes
// one response may take on the wire (4×MaxBody + MaxHeader) with its body
// far below MaxBody. It failed "response longer than the wire limit", and
// an operator could not tell which settings made the limit nor how large
// it was.
func TestWireLimitNamed(t *testing.T) {
	s := startRaw(t, func(cs *rawConn, req *http.Request) bool {
		cs.bw.WriteString("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
		for range 100_000 { // 1.7 MB on the wire for 100 KB of body, or until the collector hangs up
			if _, err := cs.bw.WriteString("1;xxxxxxxxxx\r\nz\r\n"); err != nil {
				return false
			}
		}
		cs.bw.WriteString("0\r\n\r\n")
		return true
	})
	c := rawCollector(t, Config{MaxBody: 64 << 10, MaxHeader: 4 << 10, Linger: 50 * time.Millisecond})
	b := c.Fetch(context.Background(), rawList(s, 1))
	defer c.Release(b)
	want := fmt.Sprintf("%d bytes", 4*(64<<10)+4<<10)
	if r := &b.Results[0]; r.Kind != TooLarge || r.Err == nil || !strings.Contains(r.Err.Error(), want) || !strings.Contains(r.Err.Error(), "MaxBody") {
		t.Errorf("%s: %s (%v); want too-large naming MaxBody and the limit, %s", r.URL, r.Kind, r.Err, want)
	}
}
