package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kspider/kspider/spider"
)

// freeLoopbackPort returns a port of 127.0.0.1 that was free a moment ago
// for network ("tcp" or "udp").
func freeLoopbackPort(t *testing.T, network string) int {
	t.Helper()
	if network == "udp" {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).Port
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// A cluster node's status page listens where its cluster.nodes entry says,
// so one config file serves every node; --status still wins.
func TestClusterNodeStatusAddress(t *testing.T) {
	conf, ca, _, _ := crawlSetup(t, 3, 3, 1, "100ms")
	secret := filepath.Join(filepath.Dir(conf), "secret")
	if err := os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	status := fmt.Sprintf("127.0.0.1:%d", freeLoopbackPort(t, "tcp"))
	block := fmt.Sprintf("[cluster]\nphases = 2\nphase_length = \"2s\"\nepoch = 2026-01-01T00:00:00Z\nsecret_file = %q\n"+
		"[[cluster.nodes]]\nid = 0\nudp = \"127.0.0.1:%d\"\n[[cluster.nodes]]\nid = 1\nudp = \"127.0.0.1:%d\"\nstatus = %q\n",
		secret, freeLoopbackPort(t, "udp"), freeLoopbackPort(t, "udp"), status)
	f, err := os.OpenFile(conf, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(block)
	f.Close()

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--node", "1"}, status},
		{[]string{"--node", "1", "--status", "127.0.0.1:0"}, ""}, // any port but the entry's
	} {
		ctx, cancel := context.WithCancel(context.Background())
		args := append([]string{"--config", conf, "--ca", ca, "--quiet", "--dir", t.TempDir()}, c.args...)
		addr, stderr, exit := startRun(t, ctx, args...)
		if c.want != "" && addr != c.want {
			t.Errorf("%v: status page at %s, want %s:\n%s", c.args, addr, c.want, stderr)
		}
		if c.want == "" && addr == status {
			t.Errorf("%v: status page at the cluster.nodes entry's %s, not --status's", c.args, addr)
		}
		cancel()
		select {
		case <-exit:
		case <-time.After(30 * time.Second):
			t.Fatalf("%v: run did not end 30 s after it was cancelled", c.args)
		}
	}
}

// Two nodes with different secrets never hear each other: each says so
// as soon as the first datagram fails, and its summary says what to check.
func TestClusterWrongSecretIsNamed(t *testing.T) {
	conf, ca, _, _ := crawlSetup(t, 3, 3, 1, "100ms")
	base, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	udp := []int{freeLoopbackPort(t, "udp"), freeLoopbackPort(t, "udp")}
	var confs []string
	for i := range 2 {
		secret := filepath.Join(filepath.Dir(conf), fmt.Sprintf("secret%d", i))
		if err := os.WriteFile(secret, fmt.Appendf(nil, "%d123456789abcdef0123456789abcdef", i), 0o600); err != nil {
			t.Fatal(err)
		}
		c := filepath.Join(filepath.Dir(conf), fmt.Sprintf("node%d.toml", i))
		block := fmt.Sprintf("[cluster]\nphases = 2\nphase_length = \"2s\"\nepoch = 2026-01-01T00:00:00Z\nsecret_file = %q\n"+
			"[[cluster.nodes]]\nid = 0\nudp = \"127.0.0.1:%d\"\n[[cluster.nodes]]\nid = 1\nudp = \"127.0.0.1:%d\"\n", secret, udp[0], udp[1])
		if err := os.WriteFile(c, append(append([]byte(nil), base...), block...), 0o644); err != nil {
			t.Fatal(err)
		}
		confs = append(confs, c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var addrs []string
	var stderrs []*lockedBuffer
	var exits []chan int
	for i, c := range confs {
		addr, stderr, exit := startRun(t, ctx, "--config", c, "--ca", ca, "--quiet", "--dir", t.TempDir(), "--node", fmt.Sprint(i))
		addrs, stderrs, exits = append(addrs, addr), append(stderrs, stderr), append(exits, exit)
	}
	waitStatus(t, addrs[0], "node 1 down", func(s *spider.Status) bool {
		return len(s.Peers) == 1 && !s.Peers[0].Up && s.Peers[0].DroppedForged > 0
	})
	cancel()
	for i, exit := range exits {
		select {
		case <-exit:
		case <-time.After(30 * time.Second):
			t.Fatalf("node %d did not end 30 s after it was cancelled", i)
		}
	}
	out := stderrs[0].String()
	for _, want := range []string{
		"communicator: a datagram from node 1 (127.0.0.1:", "fails authentication",
		"cluster: node 1 is down:", "datagrams in its name failed authentication: has it the same cluster.secret_file as this node?",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("node 0's output lacks %q:\n%s", want, out)
		}
	}
}

// A data directory holds one node's share of the URLs: run again as
// another node, or a node alone's directory run as a cluster node, it is
// refused before anything is fetched or sent.
func TestDataDirKeepsItsShare(t *testing.T) {
	conf, ca, dir, _ := crawlSetup(t, 3, 3, 1, "100ms")
	if code, _, errOut := runCmd(t, "", "run", "--config", conf, "--ca", ca, "--quiet"); code != 0 {
		t.Fatalf("the node alone: exit %d:\n%s", code, errOut)
	}
	secret := filepath.Join(filepath.Dir(conf), "secret")
	if err := os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	block := fmt.Sprintf("[cluster]\nphases = 2\nphase_length = \"2s\"\nepoch = 2026-01-01T00:00:00Z\nsecret_file = %q\n"+
		"[[cluster.nodes]]\nid = 0\nudp = \"127.0.0.1:%d\"\n[[cluster.nodes]]\nid = 1\nudp = \"127.0.0.1:%d\"\n",
		secret, freeLoopbackPort(t, "udp"), freeLoopbackPort(t, "udp"))
	f, err := os.OpenFile(conf, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(block)
	f.Close()
	code, _, errOut := runCmd(t, "", "run", "--config", conf, "--ca", ca, "--quiet", "--node", "1")
	if want := "data directory " + dir + " holds the share of a node alone; this run is node 1 of 2, partition url"; code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("a node alone's directory as node 1: exit %d, want 1 and %q:\n%s", code, want, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "IDENTITY")); err != nil || !strings.Contains(string(b), "node 0 of 1, partition none") {
		t.Errorf("IDENTITY after the refusal: %q, %v", b, err)
	}
}

// A node started where its udp address is not (the wrong machine, or the
// wrong --node) fails before its data directory records a share: run
// again as the right node, the directory is not refused as another's.
func TestClusterNodeNotHere(t *testing.T) {
	conf, ca, dir, _ := crawlSetup(t, 3, 3, 1, "100ms")
	secret := filepath.Join(filepath.Dir(conf), "secret")
	if err := os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	// 192.0.2.1 (TEST-NET-1) is no address of this machine; nothing is
	// sent to it.
	block := fmt.Sprintf("[cluster]\nphases = 2\nphase_length = \"2s\"\nepoch = 2026-01-01T00:00:00Z\nsecret_file = %q\n"+
		"[[cluster.nodes]]\nid = 0\nudp = \"192.0.2.1:7410\"\n[[cluster.nodes]]\nid = 1\nudp = \"127.0.0.1:%d\"\n",
		secret, freeLoopbackPort(t, "udp"))
	f, err := os.OpenFile(conf, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(block)
	f.Close()
	code, _, errOut := runCmd(t, "", "run", "--config", conf, "--ca", ca, "--quiet", "--node", "0")
	if want := `this is node 0 (--node), but its udp address 192.0.2.1:7410 (cluster.nodes[id 0].udp "192.0.2.1:7410") cannot be bound here`; code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("node 0 on a machine without its address: exit %d, want 1 and %q:\n%s", code, want, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "IDENTITY")); err == nil {
		t.Error("the refused start recorded the directory's share")
	}
}

// A node started while its udp address is held by another process on
// this machine (the node already running, a second copy started by hand)
// was told to run on its own machine, which it was on; now it is told the
// address is in use, and still records no share.
func TestClusterNodeAddressInUse(t *testing.T) {
	conf, ca, dir, _ := crawlSetup(t, 3, 3, 1, "100ms")
	secret := filepath.Join(filepath.Dir(conf), "secret")
	if err := os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	held, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	addr := held.LocalAddr().String()
	block := fmt.Sprintf("[cluster]\nphases = 2\nphase_length = \"2s\"\nepoch = 2026-01-01T00:00:00Z\nsecret_file = %q\n"+
		"[[cluster.nodes]]\nid = 0\nudp = %q\n[[cluster.nodes]]\nid = 1\nudp = \"127.0.0.1:%d\"\n",
		secret, addr, freeLoopbackPort(t, "udp"))
	f, err := os.OpenFile(conf, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(block)
	f.Close()
	code, _, errOut := runCmd(t, "", "run", "--config", conf, "--ca", ca, "--quiet", "--node", "0")
	want := fmt.Sprintf(`this is node 0 (--node), but its udp address %s (cluster.nodes[id 0].udp %q) is in use by another process on this machine (node 0 already running?)`, addr, addr)
	if code != 1 || !strings.Contains(errOut, want) || strings.Contains(errOut, "machine, or say") {
		t.Errorf("node 0 with its udp address held by another process: exit %d, want 1 and %q:\n%s", code, want, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "IDENTITY")); err == nil {
		t.Error("the refused start recorded the directory's share")
	}
}

// A node back with an empty data directory (its disk lost) after the
// cluster crawled: its peer's run says so and exits 3, as the URLs the
// node held are not in the stores; an exit 0 would say the crawl is
// complete, an exit 1 have systemd restart it. The node itself, new,
// exits 0.
func TestClusterLostDirFailsTheRun(t *testing.T) {
	conf, ca, _, _ := crawlSetup(t, 3, 3, 1, "100ms")
	secret := filepath.Join(filepath.Dir(conf), "secret")
	if err := os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	block := fmt.Sprintf("[cluster]\nphases = 2\nphase_length = \"1s\"\nepoch = 2026-01-01T00:00:00Z\nsecret_file = %q\n"+
		"[[cluster.nodes]]\nid = 0\nudp = \"127.0.0.1:%d\"\n[[cluster.nodes]]\nid = 1\nudp = \"127.0.0.1:%d\"\n",
		secret, freeLoopbackPort(t, "udp"), freeLoopbackPort(t, "udp"))
	f, err := os.OpenFile(conf, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(block)
	f.Close()
	dir0, dir1 := t.TempDir(), t.TempDir()
	crawl := func(dir1 string) (codes [2]int, stderrs [2]string) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var bufs [2]*lockedBuffer
		var exits [2]chan int
		for i, dir := range []string{dir0, dir1} {
			_, bufs[i], exits[i] = startRun(t, ctx, "--config", conf, "--ca", ca, "--quiet", "--dir", dir, "--node", fmt.Sprint(i))
		}
		for i, exit := range exits {
			select {
			case codes[i] = <-exit:
			case <-time.After(90 * time.Second):
				t.Fatalf("node %d still running after 90 s:\n%s", i, bufs[i])
			}
			stderrs[i] = bufs[i].String()
		}
		return codes, stderrs
	}
	if codes, stderrs := crawl(dir1); codes != [2]int{0, 0} {
		t.Fatalf("first crawl: exits %v:\n%s\n%s", codes, stderrs[0], stderrs[1])
	}
	codes, stderrs := crawl(t.TempDir()) // node 1's disk lost
	if want := "the crawl is over, but short of the web: node 1 came back with a new data directory"; codes[0] != 3 || !strings.Contains(stderrs[0], want) {
		t.Errorf("node 0 with node 1 back on a new directory: exit %d, want 3 and %q:\n%s", codes[0], want, stderrs[0])
	}
	if codes[1] != 0 {
		t.Errorf("node 1 on its new directory: exit %d, want 0:\n%s", codes[1], stderrs[1])
	}
}
