package scheduler

import (
	"fmt"
	"testing"
	"time"
)

// benchDir fills a scheduler with n URLs over n/4 hosts and closes it.
func benchDir(b *testing.B, n int) (string, Config) {
	b.Helper()
	dir := b.TempDir()
	cfg := Config{Clock: newFakeClock(1, time.Hour, 0)}
	s := mustOpen(b, dir, cfg)
	for id := range uint32(n) {
		if _, err := s.Add(id, fmt.Sprintf("host%d.example.com", id/4), 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	return dir, cfg
}

// BenchmarkOpen reopens a scheduler of 1M URLs and 250k hosts.
func BenchmarkOpen(b *testing.B) {
	dir, cfg := benchDir(b, 1_000_000)
	b.ResetTimer()
	for range b.N {
		s := mustOpen(b, dir, cfg)
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
}

// BenchmarkTakeReport hands out and completes 1M URLs of 250k hosts.
func BenchmarkTakeReport(b *testing.B) {
	for range b.N {
		b.StopTimer()
		dir, cfg := benchDir(b, 1_000_000)
		s := mustOpen(b, dir, cfg)
		b.StartTimer()
		for {
			l, ok, _, err := s.TryNext()
			if err != nil {
				b.Fatal(err)
			}
			if !ok {
				break
			}
			for _, id := range l.IDs {
				s.Report(id, Outcome{Kind: Fetched})
			}
		}
		b.StopTimer()
		if c := s.Counters(); c.Handed != 1_000_000 {
			b.Fatalf("%d handed out", c.Handed)
		}
		s.Close()
	}
}

// BenchmarkHostNames adds 8192 host names to a new scheduler: names of a
// crawl, and names a hostile web chose for HostHashes ending alike.
func BenchmarkHostNames(b *testing.B) {
	for _, c := range []struct {
		name  string
		names []string
	}{
		{"plain", func() []string {
			var out []string
			for i := range 8192 {
				out = append(out, fmt.Sprintf("host%d.example.com", i))
			}
			return out
		}()},
		{"colliding", collidingNames(8192, 15)},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				s := mustOpen(b, b.TempDir(), Config{Clock: newFakeClock(1, time.Hour, 0)})
				b.StartTimer()
				for _, n := range c.names {
					if _, err := s.Host(n); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				s.Close()
				b.StartTimer()
			}
		})
	}
}
