package scheduler

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// TestIPMapBounded: a crawl over many hosts, each fetched once and done
// with, kept every host's address in memory for good. Now the addresses
// of hosts with nothing queued or out are forgotten once there are more
// than the scheduler keeps, and a forgotten host sharing a busy address
// is still held to MaxHostsPerIP (SetIP says over).
func TestIPMapBounded(t *testing.T) {
	clk := newFakeClock(1, time.Hour, 0)
	s := mustOpen(t, t.TempDir(), Config{Clock: clk, Columns: 2, Rows: 4, ListLen: 1, MaxHostsPerIP: 1})
	defer s.Close()
	const keep = 64
	s.mu.Lock()
	s.rt.ipKeep = keep
	s.mu.Unlock()
	shared := netip.MustParseAddr("127.0.0.9")
	hosts := 20 * keep
	var id uint32
	for i := range hosts {
		name := fmt.Sprintf("h%d.example", i)
		if _, err := s.Add(id, name, 0); err != nil {
			t.Fatal(err)
		}
		id++
		ls := drain(t, s)
		if len(ls) != 1 {
			t.Fatalf("host %d: %d lists, want 1", i, len(ls))
		}
		ip := netip.AddrFrom4([4]byte{127, 1, byte(i >> 8), byte(i)})
		if i == 0 {
			ip = shared
		}
		if over, err := s.SetIP(ls[0].Host, ip); err != nil || over {
			t.Fatalf("SetIP of host %d: over %v, %v", i, over, err)
		}
		if err := s.Report(ls[0].IDs[0], Outcome{Kind: Fetched}); err != nil {
			t.Fatal(err)
		}
	}
	s.mu.Lock()
	n := len(s.rt.ipOf)
	s.mu.Unlock()
	if n > 2*keep {
		t.Fatalf("%d addresses kept after %d hosts were done with, want at most %d", n, hosts, 2*keep)
	}

	// Another host of the shared address fetches; h0, whose address
	// was forgotten, gets a URL: its list goes out, and SetIP gives it
	// back.
	if _, err := s.Add(id, "other.example", 0); err != nil {
		t.Fatal(err)
	}
	id++
	ls := drain(t, s)
	if len(ls) != 1 {
		t.Fatalf("%d lists, want 1", len(ls))
	}
	if over, err := s.SetIP(ls[0].Host, shared); err != nil || over {
		t.Fatalf("SetIP of other.example: over %v, %v", over, err)
	}
	if _, err := s.Add(id, "h0.example", 0); err != nil {
		t.Fatal(err)
	}
	ls = drain(t, s)
	if len(ls) != 1 || ls[0].Name != "h0.example" {
		t.Fatalf("lists %+v, want h0.example's", ls)
	}
	if over, err := s.SetIP(ls[0].Host, shared); err != nil || !over {
		t.Fatalf("SetIP of h0.example on the busy address: over %v, %v; want over", over, err)
	}
}
