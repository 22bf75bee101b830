package collector

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestKeptConnectionSilentlyDropped: a kept connection whose packets a
// firewall drops without a word (its state forgotten while the connection
// was parked) cost the next list's first URL a first-byte timeout, and
// failed it (Timeout) to be fetched again later. Now a request on a kept
// connection left unacknowledged for ConnectTimeout ends the connection,
// and the request goes again on a new one, its send not counted.
//
// The drop is a blackhole route to the kept connection's address, so the
// test runs in a network namespace of its own (as root; the test binary
// again under unshare -n), where 127.0.0.2 and 127.0.0.3 are the server.
func TestKeptConnectionSilentlyDropped(t *testing.T) {
	if os.Getenv("KSPIDER_TEST_NETNS") != "1" {
		if os.Geteuid() != 0 {
			t.Skip("needs root for a network namespace")
		}
		unshare, err := exec.LookPath("unshare")
		if err != nil {
			t.Skip("no unshare")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, unshare, "-n", os.Args[0], "-test.run=^TestKeptConnectionSilentlyDropped$", "-test.count=1", "-test.v", "-test.timeout=90s")
		cmd.Env = append(os.Environ(), "KSPIDER_TEST_NETNS=1")
		out, err := cmd.CombinedOutput()
		if err != nil && strings.Contains(string(out), "unshare failed") {
			t.Skipf("no network namespace here: %s", out)
		}
		if err != nil {
			t.Fatalf("in a network namespace: %v\n%s", err, out)
		}
		return
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip command (iproute2)")
	}
	if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("ip link set lo up: %v: %s", err, out)
	}
	dropped, spare := netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")
	ln, err := net.Listen("tcp", netip.AddrPortFrom(dropped, 0).String())
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	ln2, err := net.Listen("tcp", netip.AddrPortFrom(spare, port).String())
	if err != nil {
		t.Fatal(err)
	}
	s := &scriptedServer{ln: ln, dropSecond: map[int]bool{}, endedAt: map[int]int{}, closed: make(chan int, 16)}
	var served []net.Conn // closed at the end: the blackholed one never hears of its end
	for _, l := range []net.Listener{ln, ln2} {
		s.wg.Go(func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				s.mu.Lock()
				s.accepted++
				n := s.accepted
				served = append(served, c)
				s.mu.Unlock()
				s.wg.Go(func() { s.serve(n, c) })
			}
		})
	}
	t.Cleanup(func() {
		ln.Close()
		ln2.Close()
		s.mu.Lock()
		for _, c := range served {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	var blackholed atomic.Bool
	c, err := New(Config{
		UserAgent: testUA, KeepIdle: time.Minute, ConnectTimeout: time.Second, FirstByte: 20 * time.Second,
		Lookup: func(context.Context, string) ([]netip.Addr, error) {
			if blackholed.Load() {
				return []netip.Addr{spare}, nil
			}
			return []netip.Addr{dropped}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdle()
	base := fmt.Sprintf("http://keep.test:%d/", port)
	fetchOne(t, c, base+"a")
	if out, err := exec.Command("ip", "route", "add", "blackhole", dropped.String()+"/32", "table", "local").CombinedOutput(); err != nil {
		t.Fatalf("ip route add blackhole: %v: %s", err, out)
	}
	blackholed.Store(true)
	b := c.Fetch(context.Background(), listOf([]string{base + "b", base + "c"}))
	for i, r := range b.Results {
		if r.Kind != OK || r.Attempts != 1 {
			t.Errorf("URL %d on a kept connection silently dropped: %v (%v), %d attempts; want OK in 1", i, r.Kind, r.Err, r.Attempts)
		}
	}
	if b.Connections != 2 {
		t.Errorf("the list used %d connections, want 2 (the kept one, then a new one)", b.Connections)
	}
}
