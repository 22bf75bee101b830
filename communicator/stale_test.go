package communicator

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestStaleEpochSaid: node 2 restarted without its state file and with
// its clock behind the time it ran at before (it ran an hour ahead, and
// NTP put it right) takes an epoch older than node 1 saw, and node 1
// refuses all it sends as a replay; that was only a stale_epoch count and
// node 2 shown down. Now node 1 says so once, naming node 2 and until when.
func TestStaleEpochSaid(t *testing.T) {
	var mu sync.Mutex
	var logs []string
	ahead := NewManualClock(time.Now().Add(time.Hour))
	cl := newCluster(t, 2, func(i int, c *Config) {
		if i == 0 {
			c.Logf = func(f string, a ...any) {
				mu.Lock()
				logs = append(logs, fmt.Sprintf(f, a...))
				mu.Unlock()
			}
		} else {
			c.Clock = ahead
		}
	})
	cl.eps[1].Send(1, 0, []byte("http://a.example/"))
	cl.eps[1].Flush()
	deadline := time.Now().Add(10 * time.Second)
	for cl.sinks[0].count() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("no delivery from node 2")
		}
		ahead.Advance(50 * time.Millisecond) // its timers
		time.Sleep(time.Millisecond)
	}
	a := cl.eps[1].Addr()
	cl.eps[1].Close()
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(a))
	if err != nil {
		t.Fatal(err)
	}
	ep, err := New(Config{Self: 2, Peers: cl.addrs, Conn: c, Keys: []Key{testKey}, SendKey: testKey.ID,
		Handler: func(NodeID, uint64, []Item) {}, AckOnReturn: true,
		FlushInterval: 5 * time.Millisecond, RetransmitMin: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	ep.Send(1, 0, []byte("http://b.example/"))
	ep.Flush()
	waitUntil(t, 5*time.Second, "the stale epoch refused", func() bool { return cl.eps[0].Stats().Drops["stale_epoch"] > 0 })
	time.Sleep(100 * time.Millisecond) // retransmissions: still said once
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, l := range logs {
		if strings.Contains(l, "from node 2") && strings.Contains(l, "older than") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the stale epoch said %d times, want once: %q", n, logs)
	}
}

// TestStateSaveErrorSaidOnce: a state file that cannot be written (a full
// disk; here its descriptor closed under the endpoint) failed every save
// of the receive positions, ten a second while items came in, and each
// failure was a log line; now it is said once while it lasts.
func TestStateSaveErrorSaidOnce(t *testing.T) {
	var mu sync.Mutex
	var logs []string
	cl := newCluster(t, 2, func(i int, c *Config) {
		if i == 0 {
			c.SpillDir = t.TempDir()
			c.Logf = func(f string, a ...any) {
				mu.Lock()
				logs = append(logs, fmt.Sprintf(f, a...))
				mu.Unlock()
			}
		}
	})
	cl.eps[0].state.f.Close() // only the timer saves while the endpoint runs
	for k := range 30 {
		cl.eps[1].Send(1, 0, []byte(testURL(2, 1, k)))
		cl.eps[1].Flush()
		waitUntil(t, 5*time.Second, "delivery", func() bool { return cl.sinks[0].count() == k+1 })
		time.Sleep(15 * time.Millisecond) // a save is due every 10 ms while positions move
	}
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, l := range logs {
		if strings.Contains(l, "saving") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the failing save said %d times, want once: %q", n, logs)
	}
}
