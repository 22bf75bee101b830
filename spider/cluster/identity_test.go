package cluster

import (
	"net"
	"net/netip"
	"strings"
	"testing"
)

func TestIdentify(t *testing.T) {
	ms := []Member{{0, "10.9.0.1:7410", ""}, {1, "10.9.0.2:7410", ""}, {2, "[fd00::3]:7410", ""}, {3, "127.0.0.1:7410", ""}, {4, "127.0.0.1:7420", ""}}
	a := netip.MustParseAddr
	for _, c := range []struct {
		name             string
		flag, configured int
		local            []netip.Addr
		want             int
		err              string
	}{
		{"flag wins", 1, 0, []netip.Addr{a("10.9.0.1")}, 1, ""},
		{"flag unknown", 9, 0, nil, 0, "--node 9"},
		{"one local", -1, 0, []netip.Addr{a("192.0.2.7"), a("10.9.0.2")}, 1, ""},
		{"v6 local", -1, 0, []netip.Addr{a("fd00::3")}, 2, ""},
		{"v4-mapped", -1, 0, []netip.Addr{a("::ffff:10.9.0.1")}, 0, ""},
		{"none local", -1, 1, []netip.Addr{a("192.0.2.1")}, 1, ""},
		{"two local, configured one", -1, 4, []netip.Addr{a("127.0.0.1")}, 4, ""},
		{"two local, configured other", -1, 0, []netip.Addr{a("127.0.0.1")}, 0, "--node"},
	} {
		got, how, err := Identify(ms, c.flag, c.configured, c.local)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %d, %v; want error %q", c.name, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want || how == "" {
			t.Errorf("%s: %d (%s), %v; want %d", c.name, got, how, err, c.want)
		}
	}
	if _, err := LocalAddrs(); err != nil {
		t.Fatal(err)
	}
}

// TestIdentifyOtherLoopback: nodes of a cluster on one machine at
// 127.0.0.2 and 127.0.0.3 (one port for all) have local addresses: the
// machine has all of 127.0.0.0/8, though its loopback lists 127.0.0.1.
func TestIdentifyOtherLoopback(t *testing.T) {
	local := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1"), netip.MustParseAddr("192.0.2.9")}
	ms := []Member{{0, "192.0.2.1:7410", ""}, {1, "127.0.0.2:7410", ""}}
	if got, how, err := Identify(ms, -1, 0, local); err != nil || got != 1 {
		t.Errorf("node 1 at 127.0.0.2: node %d (%s), %v; want node 1, its address local", got, how, err)
	}
	ms = append(ms, Member{2, "127.0.0.3:7410", ""})
	if got, _, err := Identify(ms, -1, 0, local); err == nil || !strings.Contains(err.Error(), "nodes 1, 2 all have local UDP addresses") {
		t.Errorf("nodes 1 and 2 at 127.0.0.2 and 127.0.0.3: node %d, %v; want both local, --node asked for", got, err)
	}
	if got, _, err := Identify(ms, -1, 0, local[2:]); err != nil || got != 0 {
		t.Errorf("a machine without loopback: node %d, %v; want cluster.node 0", got, err)
	}
}

// TestIdentifyByName: a node listed by a host name is found by the
// address the name resolves to, as it is for a node listed by address.
func TestIdentifyByName(t *testing.T) {
	ua, err := net.ResolveUDPAddr("udp", "localhost:7410")
	if err != nil {
		t.Skipf("localhost does not resolve here: %v", err)
	}
	ms := []Member{{0, "192.0.2.1:7410", ""}, {1, "localhost:7410", ""}}
	got, how, err := Identify(ms, -1, 0, []netip.Addr{ua.AddrPort().Addr().Unmap()})
	if err != nil || got != 1 {
		t.Errorf("node 1 listed as localhost, on a machine with %v: node %d (%s), %v; want node 1", ua, got, how, err)
	}
}
