package cluster

import (
	"fmt"
	"testing"

	"github.com/kspider/kspider/scheduler"
)

func TestOwnerHashPinned(t *testing.T) {
	// Every node must compute the same owner: the hash may never change.
	if got := fnv(fnvOffset, "kspider/owner\x00"); got != ownerSeed {
		t.Fatalf("ownerSeed = %#x, want %#x", uint64(ownerSeed), got)
	}
	for _, c := range []struct {
		key  string
		want uint64
	}{
		{"example.com", 0xb23a6b8d62234afc},
		{"EXAMPLE.com", 0xb23a6b8d62234afc},
	} {
		if got := OwnerHash(c.key); got != c.want {
			t.Errorf("OwnerHash(%q) = %#x, want %#x", c.key, got, c.want)
		}
	}
	pins := map[string][4]int{}
	for _, u := range []string{"http://example.com/", "https://www.example.org/a/b?c=d", "http://10.0.0.1:8080/x"} {
		var o [4]int
		for i, by := range []Partition{ByURL, ByHost, ByDomain, ByURL} {
			n := 4
			if i == 3 {
				n = 7
			}
			o[i] = Partitioner{By: by, Nodes: n}.Owner(u)
		}
		pins[u] = o
	}
	got := fmt.Sprint(pins["http://example.com/"], pins["https://www.example.org/a/b?c=d"], pins["http://10.0.0.1:8080/x"])
	if got != pinnedOwners {
		t.Errorf("owners changed: %s, want %s", got, pinnedOwners)
	}
}

// pinnedOwners: url/host/domain owners among 4 nodes and url among 7 for
// three URLs (see TestOwnerHashPinned).
const pinnedOwners = "[0 2 2 0] [0 2 2 0] [1 3 3 3]"

func TestHostOf(t *testing.T) {
	for _, c := range []struct{ u, want string }{
		{"http://example.com/", "example.com"},
		{"https://Example.COM:8443/a?b", "example.com"},
		{"http://user:pw@host.example:81/", "host.example"},
		{"http://[::1]:8080/x", "[::1]"},
		{"http://[::1]/x", "[::1]"},
		{"http://example.com.", "example.com"},
		{"http://example.com?q", "example.com"},
		{"ftp://example.com/", ""},
		{"example.com/a", ""},
		{"", ""},
	} {
		if got := HostOf(c.u); got != c.want {
			t.Errorf("HostOf(%q) = %q, want %q", c.u, got, c.want)
		}
	}
}

func TestPartitionModes(t *testing.T) {
	for _, c := range []struct {
		by   Partition
		a, b string
		same bool // must have the same owner whatever N
	}{
		{ByHost, "http://a.example.com/x", "https://A.example.com:8443/y?z", true},
		{ByHost, "http://a.example.com/x", "http://b.example.com/x", false},
		{ByDomain, "http://a.example.com/x", "https://b.example.com/y", true},
		{ByDomain, "http://a.example.co.uk/x", "http://www.example.co.uk/", true},
		{ByDomain, "http://a.example.co.uk/x", "http://a.other.co.uk/", false},
		{ByURL, "http://a.example.com/x", "http://a.example.com/y", false},
	} {
		differ := false
		for n := 1; n <= 64; n++ {
			p := Partitioner{By: c.by, Nodes: n}
			oa, ob := p.Owner(c.a), p.Owner(c.b)
			if oa < 0 || oa >= n || ob < 0 || ob >= n {
				t.Fatalf("%v N=%d: owners %d %d out of range", c.by, n, oa, ob)
			}
			differ = differ || oa != ob
		}
		if c.same && differ {
			t.Errorf("%v: %s and %s have different owners", c.by, c.a, c.b)
		}
		if !c.same && !differ {
			t.Errorf("%v: %s and %s have the same owner for every N", c.by, c.a, c.b)
		}
	}
	if o := (Partitioner{By: ByHost, Nodes: 5}).Owner("mailto:x@y"); o < 0 || o >= 5 {
		t.Errorf("non-http URL: owner %d", o)
	}
}

// TestBalanceAndIndependence: owners spread evenly, and with host
// partitioning the owner says nothing about the host's phase (a node must
// own hosts of every phase, or it idles in most slots).
func TestBalanceAndIndependence(t *testing.T) {
	const n, p, hosts = 4, 4, 40000
	var owners [n]int
	var pair [n][p]int
	part := Partitioner{By: ByHost, Nodes: n}
	for i := range hosts {
		h := fmt.Sprintf("host%d.example%d.com", i, i%97)
		o := part.Owner("http://" + h + "/")
		owners[o]++
		pair[o][scheduler.HostPhase(h, p)]++
	}
	for o, c := range owners {
		if d := float64(c)/hosts - 1.0/n; d > 0.02 || d < -0.02 {
			t.Errorf("node %d owns %d of %d hosts", o, c, hosts)
		}
	}
	for o := range n {
		for ph := range p {
			if d := float64(pair[o][ph])/hosts - 1.0/(n*p); d > 0.01 || d < -0.01 {
				t.Errorf("node %d, phase %d: %d hosts of %d: owner and phase are not independent", o, ph, pair[o][ph], hosts)
			}
		}
	}
	var urls [n]int
	pu := Partitioner{By: ByURL, Nodes: n}
	for i := range hosts {
		urls[pu.Owner(fmt.Sprintf("http://h%d.example.com/page%d.html", i%50, i))]++
	}
	for o, c := range urls {
		if d := float64(c)/hosts - 1.0/n; d > 0.02 || d < -0.02 {
			t.Errorf("url partition: node %d owns %d of %d URLs", o, c, hosts)
		}
	}
}

func TestParsePartition(t *testing.T) {
	for s, want := range map[string]Partition{"": ByURL, "url": ByURL, "host": ByHost, "domain": ByDomain} {
		if got, err := ParsePartition(s); err != nil || got != want {
			t.Errorf("ParsePartition(%q) = %v, %v", s, got, err)
		}
		if s != "" && want.String() != s {
			t.Errorf("%v.String() = %q", want, want.String())
		}
	}
	if _, err := ParsePartition("Host"); err == nil {
		t.Error("ParsePartition(Host): no error")
	}
}
