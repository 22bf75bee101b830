package cluster

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func testConfig() Config {
	return Config{Self: 1, Phases: 4, PhaseLength: 30 * time.Second, Epoch: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Members: []Member{{0, "10.9.0.1:7410", "10.9.0.1:7411"}, {1, "10.9.0.2:7410", ""}, {2, "10.9.0.3:7410", ""}}}
}

func TestCanonicalDiff(t *testing.T) {
	a := testConfig()
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	b := testConfig()
	b.Self = 2 // Self is not compared
	b.Epoch = b.Epoch.In(time.FixedZone("x", 3600))
	if d := Diff(a.Canonical(), b.Canonical()); len(d) != 0 {
		t.Fatalf("same block differs: %v", d)
	}
	enc := EncodeFields(nil, a.Canonical())
	dec, err := DecodeFields(enc)
	if err != nil || !slices.Equal(dec, a.Canonical()) {
		t.Fatalf("round trip: %v %v", dec, err)
	}
	for _, c := range []struct {
		change func(*Config)
		want   []string
	}{
		{func(c *Config) { c.Phases = 5 }, []string{`cluster.phases: ours "4", theirs "5"`}},
		{func(c *Config) { c.PhaseLength = time.Minute }, []string{"cluster.phase_length"}},
		{func(c *Config) { c.Epoch = c.Epoch.Add(time.Millisecond) }, []string{"cluster.epoch"}},
		{func(c *Config) { c.Partition = ByHost }, []string{`cluster.partition: ours "url", theirs "host"`}},
		{func(c *Config) { c.Members[2].UDP = "10.9.0.4:7410" }, []string{"cluster.nodes:", "cluster.nodes[2]:"}},
		{func(c *Config) { c.Members = c.Members[:2] }, []string{"cluster.nodes:", "cluster.nodes[2]: ours"}},
	} {
		o := testConfig()
		c.change(&o)
		d := Diff(a.Canonical(), o.Canonical())
		if len(d) != len(c.want) {
			t.Errorf("diff %v, want %d lines like %v", d, len(c.want), c.want)
			continue
		}
		for i, w := range c.want {
			if !strings.HasPrefix(d[i], w) {
				t.Errorf("diff line %q, want %q", d[i], w)
			}
		}
	}
	// A big cluster carries only the hash of its node lines.
	big := testConfig()
	for i := 3; i < 100; i++ {
		big.Members = append(big.Members, Member{i, fmt.Sprintf("10.9.1.%d:7410", i), ""})
	}
	if n := len(EncodeFields(nil, big.Canonical())); n > 400 {
		t.Errorf("canonical block of 100 nodes is %d bytes", n)
	}
	big2 := testConfig()
	for i := 3; i < 100; i++ {
		big2.Members = append(big2.Members, Member{i, fmt.Sprintf("10.9.1.%d:7410", i), ""})
	}
	big2.Members[50].UDP = "10.9.2.50:7410"
	if d := Diff(big.Canonical(), big2.Canonical()); len(d) != 1 || !strings.HasPrefix(d[0], "cluster.nodes:") {
		t.Errorf("big diff: %v", d)
	}
	if d := Diff(a.Canonical(), big.Canonical()); len(d) != 1 || !strings.HasPrefix(d[0], "cluster.nodes:") {
		t.Errorf("small vs big diff: %v", d)
	}
	if _, err := DecodeFields([]byte("phases=4\nnonsense\n")); err == nil {
		t.Error("bad line: no error")
	}
}

func TestConfigCheck(t *testing.T) {
	c := testConfig()
	c.Members[0], c.Members[2] = c.Members[2], c.Members[0]
	if err := c.Check(); err != nil || c.Members[0].ID != 0 || c.Members[2].ID != 2 {
		t.Fatalf("Check: %v %v", err, c.Members)
	}
	for name, f := range map[string]func(*Config){
		"dup id":    func(c *Config) { c.Members[1].ID = 0 },
		"self":      func(c *Config) { c.Self = 3 },
		"phases":    func(c *Config) { c.Phases = 2 },
		"length":    func(c *Config) { c.PhaseLength = 0 },
		"no epoch":  func(c *Config) { c.Epoch = time.Time{} },
		"no member": func(c *Config) { c.Members = nil },
	} {
		c := testConfig()
		f(&c)
		if err := c.Check(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	c = testConfig()
	c.Check()
	addrs, err := c.Addrs()
	if err != nil || len(addrs) != 3 || addrs[1].String() != "10.9.0.2:7410" {
		t.Errorf("Addrs: %v %v", addrs, err)
	}
}

// TestProtocolDiffers: a node of protocol 1 (its block without
// "protocol") reads items' tags otherwise; the blocks differ, by name.
func TestProtocolDiffers(t *testing.T) {
	a := testConfig()
	old := slices.DeleteFunc(a.Canonical(), func(f Field) bool { return f.Key == "protocol" })
	d := Diff(a.Canonical(), old)
	if len(d) != 1 || d[0] != `cluster.protocol: ours "5", theirs has none` {
		t.Errorf("protocol 1 against 5: %v", d)
	}
	// Protocol 2 sent "finished" without the coordinator's epoch, 3 "bye",
	// 4 probes and states.
	for _, v := range []string{"2", "3", "4"} {
		other := slices.Clone(a.Canonical())
		for i := range other {
			if other[i].Key == "protocol" {
				other[i].Value = v
			}
		}
		if d := Diff(a.Canonical(), other); len(d) != 1 || d[0] != `cluster.protocol: ours "5", theirs "`+v+`"` {
			t.Errorf("protocol %s against 5: %v", v, d)
		}
	}
}

// TestURLTag: depth and redirects in a row survive the tag, which stays
// below the control tags.
func TestURLTag(t *testing.T) {
	for _, c := range []struct {
		depth int
		hops  uint8
	}{{0, 0}, {253, 0}, {3, 1}, {255, 255}} {
		tag := URLTag(c.depth, c.hops)
		if d, h := SplitURLTag(tag); d != c.depth || h != c.hops || tag > MaxURLTag {
			t.Errorf("URLTag(%d, %d) = %d, split %d %d", c.depth, c.hops, tag, d, h)
		}
	}
	if URLTag(7, 0) != 7 {
		t.Error("a link's tag is no longer its depth, as protocol 1 sent it")
	}
	if MaxURLTag >= TagHello {
		t.Error("URL tags reach the control tags")
	}
}
