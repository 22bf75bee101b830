package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestConcurrent drives one scheduler from several goroutines at once (an
// adder, two fetchers reporting outcomes, a clock mover and a syncer) and
// checks that every URL ends completed exactly once. Run it with -race.
func TestConcurrent(t *testing.T) {
	clk := newFakeClock(3, 10*time.Second, 500*time.Millisecond)
	s := mustOpen(t, t.TempDir(), Config{Clock: clk, Phases: 3, Window: 300, ListLen: 4, Columns: 5, Rows: 2, MaxHostsPerIP: 1})
	defer s.Close()
	const n = 3000
	var done atomic.Int64
	var handed sync.Map
	var wg sync.WaitGroup
	stop := make(chan struct{})
	finished := make(chan struct{})
	var once sync.Once
	wg.Add(1)
	go func() {
		defer wg.Done()
		for id := range uint32(n) {
			h := fmt.Sprintf("h%d.example", id%37)
			if _, err := s.Add(id, h, uint8(id%4)); err != nil {
				t.Error(err)
				return
			}
			if id%100 == 0 {
				num, _ := s.Host(h)
				s.SetIP(num, netipFor(id))
			}
		}
	}()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stopped(stop) {
				l, ok, _, err := s.TryNext()
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					clk.advance(50 * time.Millisecond)
					continue
				}
				for _, id := range l.IDs {
					if _, dup := handed.LoadOrStore(id, true); dup {
						t.Errorf("id %d handed out twice", id)
					}
					if err := s.Report(id, Outcome{Kind: Fetched}); err != nil {
						t.Error(err)
					}
					if done.Add(1) == n {
						once.Do(func() { close(finished) })
					}
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stopped(stop) {
			if err := s.Sync(); err != nil {
				t.Error(err)
				return
			}
			s.Depth(uint32(done.Load()))
		}
	}()
	select {
	case <-finished:
	case <-time.After(60 * time.Second):
	}
	close(stop)
	wg.Wait()
	if done.Load() != n {
		t.Fatalf("%d of %d URLs completed", done.Load(), n)
	}
	for id := range uint32(n) {
		if u := s.URL(id); u.State != Completed {
			t.Fatalf("URL %d: %v", id, u.State)
		}
	}
}

// TestNextWaits checks that Next blocks until an Add makes a list ready,
// and returns ctx's error when ctx ends first.
func TestNextWaits(t *testing.T) {
	clk := newFakeClock(1, time.Hour, 0)
	s := mustOpen(t, t.TempDir(), Config{Clock: clk, ListLen: 1})
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next with a cancelled context: %v", err)
	}
	got := make(chan List)
	go func() {
		l, err := s.Next(context.Background())
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	if _, err := s.Add(7, "a.example", 0); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-got:
		if len(l.IDs) != 1 || l.IDs[0] != 7 || l.Name != "a.example" {
			t.Fatalf("Next = %+v", l)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Next did not return after Add")
	}
}

func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}
