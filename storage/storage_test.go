package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// testPage builds a deterministic page for id: compressible HTML of a size
// that varies with id, sometimes with an IPv6 address or none.
func testPage(id uint64) *Page {
	rng := rand.New(rand.NewPCG(id, 7))
	var body bytes.Buffer
	body.WriteString("<!doctype html><html><head><title>page ")
	fmt.Fprint(&body, id)
	body.WriteString("</title></head><body>\n")
	for n := rng.IntN(200); n > 0; n-- {
		fmt.Fprintf(&body, "<p class=\"x%d\">paragraph %d of page %d: %x</p>\n", rng.IntN(5), n, id, rng.Uint32())
	}
	body.WriteString("</body></html>\n")
	p := &Page{
		URLID:     id,
		URL:       fmt.Sprintf("http://host%d.example/path/%d.html", id%17, id),
		FetchTime: time.Date(2026, 11, 21, 9, 0, 0, int(id), time.UTC),
		Duration:  time.Duration(id) * time.Millisecond,
		Status:    200,
		Header:    []byte(fmt.Sprintf("Content-Type: text/html\r\nServer: test/%d\r\n", id%3)),
		ServerIP:  netip.AddrFrom4([4]byte{127, 0, 0, byte(id)}),
		Body:      body.Bytes(),
	}
	switch id % 5 {
	case 1:
		p.ServerIP = netip.Addr{}
	case 2:
		p.ServerIP = netip.MustParseAddr("::1")
	case 3:
		p.Status = 404
		p.Body = nil
		p.Header = nil
	}
	return p
}

func samePage(t *testing.T, got, want *Page) {
	t.Helper()
	if got.URLID != want.URLID || got.URL != want.URL || !got.FetchTime.Equal(want.FetchTime) ||
		got.Duration != want.Duration || got.Status != want.Status || got.ServerIP != want.ServerIP ||
		!bytes.Equal(got.Header, want.Header) || !bytes.Equal(got.Body, want.Body) {
		t.Fatalf("page %d differs:\n got %+v\nwant %+v", want.URLID, summary(got), summary(want))
	}
}

func summary(p *Page) string {
	return fmt.Sprintf("{%d %s %v %v %d %v hdr=%q body=%d bytes}", p.URLID, p.URL, p.FetchTime, p.Duration, p.Status, p.ServerIP, p.Header, len(p.Body))
}

// writeStore stores pages ids [from, to) in a store over dirs.
func writeStore(t testing.TB, cfg Config, from, to uint64) {
	t.Helper()
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for id := from; id < to; id++ {
		if err := s.Put(context.Background(), testPage(id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := s.Durable(), to-from; got != want {
		t.Fatalf("Durable() = %d after Close, want %d", got, want)
	}
}

// checkStore reads dirs back and checks pages [from, to) are all there.
func checkStore(t *testing.T, dirs []string, from, to uint64) {
	t.Helper()
	r, err := OpenReader(dirs)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for id := from; id < to; id++ {
		p, err := r.Get(id)
		if err != nil {
			t.Fatalf("Get(%d): %v", id, err)
		}
		samePage(t, p, testPage(id))
	}
	if _, err := r.Get(to + 1000); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(absent) = %v, want ErrNotFound", err)
	}
	var mu sync.Mutex
	seen := map[uint64]bool{}
	err = r.Scan(context.Background(), func(p *Page) error {
		samePage(t, p, testPage(p.URLID))
		mu.Lock()
		defer mu.Unlock()
		if seen[p.URLID] {
			return fmt.Errorf("page %d seen twice", p.URLID)
		}
		seen[p.URLID] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(seen)) != to-from {
		t.Fatalf("Scan saw %d pages, want %d", len(seen), to-from)
	}
	if st := r.Stats(); st.Skipped != 0 {
		t.Fatalf("clean store: skipped %d regions: %v", st.Skipped, st.Errors)
	}
}

func TestRoundTripEveryCodec(t *testing.T) {
	for _, codec := range Codecs() {
		t.Run(codec, func(t *testing.T) {
			dirs := []string{t.TempDir(), t.TempDir()}
			cfg := Config{Dirs: dirs, Codec: codec, Compressors: 2, SegmentSize: 1 << 20}
			writeStore(t, cfg, 0, 300)
			checkStore(t, dirs, 0, 300)
			// Reopening appends to the same store.
			writeStore(t, cfg, 300, 400)
			checkStore(t, dirs, 0, 400)
		})
	}
}

func TestMixedCodecsAndRecrawlLatestWins(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	writeStore(t, Config{Dirs: dirs, Codec: "zstd"}, 0, 50)
	// Re-crawl ids 10..19 later, with another codec and another body.
	s, err := Open(Config{Dirs: dirs, Codec: "s2"})
	if err != nil {
		t.Fatal(err)
	}
	for id := uint64(10); id < 20; id++ {
		p := testPage(id)
		p.FetchTime = p.FetchTime.Add(time.Hour)
		p.Body = []byte("new body")
		if err := s.Put(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReader(dirs)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for id := uint64(0); id < 50; id++ {
		p, err := r.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if recrawled := id >= 10 && id < 20; recrawled != (string(p.Body) == "new body") {
			t.Fatalf("page %d: body %.20q", id, p.Body)
		}
	}
	var mu sync.Mutex
	n := 0
	err = r.Scan(context.Background(), func(p *Page) error {
		mu.Lock()
		defer mu.Unlock()
		n++
		if p.URLID >= 10 && p.URLID < 20 && string(p.Body) != "new body" {
			return fmt.Errorf("scan yielded the superseded record of %d", p.URLID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); n != 50 || st.Superseded != 10 {
		t.Fatalf("scan: %d pages, %d superseded; want 50 and 10", n, st.Superseded)
	}
}

func TestOnDurableReportsEveryPage(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	got := map[uint64]bool{}
	cfg := Config{Dirs: []string{dir, filepath.Join(dir, "b")}, SyncEvery: 7, OnDurable: func(ids []uint64) {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			got[id] = true
		}
	}}
	writeStore(t, cfg, 0, 100)
	if len(got) != 100 {
		t.Fatalf("OnDurable reported %d pages, want 100", len(got))
	}
}

func TestPutRejectsBadPages(t *testing.T) {
	s, err := Open(Config{Dirs: []string{t.TempDir()}, MaxURLID: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range []*Page{nil, {URLID: 1001}, {URLID: 1, Status: -1}, {URLID: 1, URL: string(make([]byte, maxURLLen+1))}} {
		if err := s.Put(context.Background(), p); err == nil {
			t.Errorf("Put(%v) accepted", p)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), testPage(1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put after Close: %v", err)
	}
}

func TestSecondWriterIsRefused(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Config{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := Open(Config{Dirs: []string{dir}}); err == nil {
		t.Fatal("a second Store opened the same directory")
	}
}

// Many producers racing Close: every Put either is accepted and becomes
// durable, or fails with ErrClosed.
func TestConcurrentPutAndClose(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	s, err := Open(Config{Dirs: dirs, QueueLen: 4})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := map[uint64]bool{}
	for g := uint64(0); g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := g * 1000; id < g*1000+200; id++ {
				err := s.Put(context.Background(), testPage(id))
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				accepted[id] = true
				mu.Unlock()
			}
		}()
	}
	time.Sleep(5 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if got := s.Durable(); got != uint64(len(accepted)) {
		t.Fatalf("Durable() = %d, %d accepted", got, len(accepted))
	}
	r, err := OpenReader(dirs)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for id := range accepted {
		if _, err := r.Get(id); err != nil {
			t.Fatalf("accepted page %d: %v", id, err)
		}
	}
}

// A scan stops at fn's first error and at a cancelled context.
func TestScanStops(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	writeStore(t, Config{Dirs: dirs}, 0, 100)
	r, err := OpenReader(dirs)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	stop := errors.New("stop")
	if err := r.Scan(context.Background(), func(*Page) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("Scan returned %v, want fn's error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Scan(ctx, func(*Page) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Scan with a cancelled context returned %v", err)
	}
}

// Incompressible bodies are stored uncompressed, whatever the codec.
func TestIncompressibleBodyStoredAsIs(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, codec := range Codecs() {
		dir := t.TempDir()
		s, err := Open(Config{Dirs: []string{dir}, Codec: codec})
		if err != nil {
			t.Fatal(err)
		}
		p := testPage(1)
		p.Body = make([]byte, 100<<10)
		for i := range p.Body {
			p.Body[i] = byte(rng.Uint32())
		}
		compressible := testPage(2)
		for _, q := range []*Page{p, compressible} {
			if err := s.Put(context.Background(), q); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := OpenReader([]string{dir})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []*Page{p, compressible} {
			got, err := r.Get(q.URLID)
			if err != nil {
				t.Fatal(err)
			}
			samePage(t, got, q)
			l, _, _ := r.dirs[0].locate(q.URLID)
			h, _, err := r.dirs[0].readRecord(l, nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]string{true: "none", false: codec}[q == p]; h.codec.String() != want {
				t.Errorf("%s store: page %d stored with %v, want %s", codec, q.URLID, h.codec, want)
			}
		}
		r.Close()
	}
}

func TestFetchTimeEdges(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Config{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	zero := testPage(1)
	zero.FetchTime = time.Time{}
	late := testPage(2)
	late.FetchTime = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, p := range []*Page{zero, late} {
		if err := s.Put(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	far := testPage(3)
	far.FetchTime = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := s.Put(context.Background(), far); err == nil {
		t.Fatal("a fetch time in 3000 was accepted")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, want := range []*Page{zero, late} {
		got, err := r.Get(want.URLID)
		if err != nil {
			t.Fatal(err)
		}
		samePage(t, got, want)
		if want == zero && !got.FetchTime.IsZero() {
			t.Fatalf("zero fetch time read back as %v", got.FetchTime)
		}
	}
}

// A Reader opened on a store that is still being written finds, with Get,
// pages made durable after it was opened, in new segments too; its Scan
// stays a snapshot.
func TestReaderOnLiveStore(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	durable := map[uint64]bool{}
	cond := sync.NewCond(&mu)
	s, err := Open(Config{Dirs: []string{dir}, SegmentSize: 64 << 10, SyncEvery: 1, OnDurable: func(ids []uint64) {
		mu.Lock()
		for _, id := range ids {
			durable[id] = true
		}
		cond.Broadcast()
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put := func(from, to uint64) {
		for id := from; id < to; id++ {
			if err := s.Put(context.Background(), testPage(id)); err != nil {
				t.Fatal(err)
			}
		}
		mu.Lock()
		for uint64(len(durable)) < to {
			cond.Wait()
		}
		mu.Unlock()
	}
	put(0, 20)
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	put(20, 60)
	for id := uint64(0); id < 60; id++ {
		p, err := r.Get(id)
		if err != nil {
			t.Fatalf("Get(%d) on a live store: %v", id, err)
		}
		samePage(t, p, testPage(id))
	}
	n := 0
	if err := r.Scan(context.Background(), func(*Page) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n < 20 || n >= 60 {
		t.Fatalf("snapshot scan saw %d pages, want the 20 stored before OpenReader (and the rest of their segment)", n)
	}
}

// Pages larger than the saver's write buffer and the reader's window.
func TestLargePages(t *testing.T) {
	dirs := []string{t.TempDir()}
	s, err := Open(Config{Dirs: dirs, Codec: "none", SegmentSize: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var pages []*Page
	for id := uint64(0); id < 6; id++ {
		p := testPage(id)
		p.Body = bytes.Repeat(append([]byte(nil), p.URL...), int(id+1)*60000) // up to ~12 MB
		pages = append(pages, p)
		if err := s.Put(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReader(dirs)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, want := range pages {
		got, err := r.Get(want.URLID)
		if err != nil {
			t.Fatal(err)
		}
		samePage(t, got, want)
	}
	n := 0
	if err := r.Scan(context.Background(), func(p *Page) error { n++; samePage(t, p, pages[p.URLID]); return nil }); err != nil || n != len(pages) {
		t.Fatalf("scan: %v, %d pages", err, n)
	}
}
