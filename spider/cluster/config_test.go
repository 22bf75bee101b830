package cluster

import (
	"strings"
	"testing"
	"time"
)

// TestFetchSchedule: with url partitioning the nodes take turns on hosts
// (the configured phases); with host or domain partitioning a host has one
// node, which fetches it in every slot: one phase, node 0's turn always.
func TestFetchSchedule(t *testing.T) {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, by := range []Partition{ByURL, ByHost, ByDomain} {
		c := Config{Self: 2, Phases: 5, PhaseLength: 2 * time.Second, Epoch: epoch, Partition: by,
			Members: []Member{{ID: 0}, {ID: 1}, {ID: 2}, {ID: 3}}}
		if err := c.Check(); err != nil {
			t.Fatal(err)
		}
		s := c.FetchSchedule()
		if err := s.Validate(); err != nil {
			t.Fatalf("%v: %v", by, err)
		}
		if c.Turns() != (by == ByURL) {
			t.Errorf("%v: Turns %v", by, c.Turns())
		}
		if by == ByURL {
			if s != c.Schedule() {
				t.Errorf("url: FetchSchedule %+v, want Schedule %+v", s, c.Schedule())
			}
			continue
		}
		// Every instant of a few days: phase 0 active, the slot's ends at
		// most once a day (the guard only around them).
		guarded := 0
		for at := epoch; at.Before(epoch.Add(72 * time.Hour)); at = at.Add(7 * time.Second) {
			p := s.At(at, c.Self, 200*time.Millisecond)
			if p.Active != 0 {
				t.Fatalf("%v: phase %d active at %v", by, p.Active, at)
			}
			if !p.MayStart {
				guarded++
			}
		}
		if guarded > 3 {
			t.Errorf("%v: %d instants in a guard in 3 days", by, guarded)
		}
	}
}

// TestAddrsRefused: an address no peer can send to, or one that two
// members share however spelled, is refused at start naming the node.
func TestAddrsRefused(t *testing.T) {
	for _, c := range []struct {
		udp  [2]string
		want string
	}{
		{[2]string{"127.0.0.1:7410", "0.0.0.0:7411"}, `cluster.nodes[id 1].udp "0.0.0.0:7411": 0.0.0.0 is the unspecified address`},
		{[2]string{"[::]:7410", "127.0.0.1:7411"}, `cluster.nodes[id 0].udp "[::]:7410": :: is the unspecified address`},
		{[2]string{"127.0.0.1:7410", "224.0.0.1:7411"}, "224.0.0.1 is a multicast or broadcast address"},
		{[2]string{"127.0.0.1:7410", "127.0.0.1:0"}, "port 0"},
		{[2]string{"127.0.0.1:7410", "[::ffff:127.0.0.1]:7410"}, `cluster.nodes[id 1].udp "[::ffff:127.0.0.1]:7410" is 127.0.0.1:7410, as node 0's is`},
	} {
		cfg := Config{Members: []Member{{ID: 0, UDP: c.udp[0]}, {ID: 1, UDP: c.udp[1]}}}
		if _, err := cfg.Addrs(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.udp, err, c.want)
		}
	}
	cfg := Config{Members: []Member{{ID: 0, UDP: "127.0.0.1:7410"}, {ID: 1, UDP: "[::1]:7410"}}}
	if _, err := cfg.Addrs(); err != nil {
		t.Error(err)
	}
}
