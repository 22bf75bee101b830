package spider

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kspider/kspider/resolver"
	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/tools/testweb"
)

const killIdleChildEnv = "KSPIDER_CLUSTER_KILLIDLE_CHILD"

// killIdleConfig is node self of TestClusterPeerKilledBetweenRounds's
// cluster of two, crawling the test web through its DNS server dns.
func killIdleConfig(t *testing.T, dir string, self int, addrs [2]string, epoch int64, dns string, roots *x509.CertPool, sync time.Duration) NodeConfig {
	cfg := clusterCrashConfig(t, dir, self, addrs, epoch)
	cfg.RootCAs = roots
	res, err := resolver.New(resolver.Config{Servers: []string{dns}, Timeout: 500 * time.Millisecond, Network: "ip4"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Lookup = func(ctx context.Context, host string) ([]netip.Addr, error) { return res.Lookup(ctx, host) }
	cfg.MaxDepth = 2
	cfg.SyncInterval = sync
	return cfg
}

// TestClusterKillIdleChild is node 1 of TestClusterPeerKilledBetweenRounds;
// it does nothing in a normal run. $KSPIDER_CLUSTER_KILLIDLE_CHILD is
// "dir;dns;ca;addr0;addr1;epoch;hold". With hold, once node 0 has its first
// idle answer to a probe, the datagrams carrying items are held back (the
// next answer waits unsent, in the communicator's memory: a control
// message reaches the spill file only at a clean stop), and it prints
// "held R" once its answer to a later round R is queued, then waits to be
// killed. It exits 0 at the crawl's end, 3 on an error.
func TestClusterKillIdleChild(t *testing.T) {
	spec := os.Getenv(killIdleChildEnv)
	if spec == "" {
		t.Skip("only run as TestClusterPeerKilledBetweenRounds's child process")
	}
	p := strings.Split(spec, ";")
	epoch, err := strconv.ParseInt(p[5], 10, 64)
	if err != nil {
		childFail(err)
	}
	hold := p[6] == "hold"
	// Bounded should the parent be gone: it waits 2 min at most.
	time.AfterFunc(3*time.Minute, func() { childFail(fmt.Errorf("node 1 still runs after 3 min (hold %v)", hold)) })
	// The run killed syncs seldom: the kill may find pages stored and
	// made durable whose reports the scheduler has not synced, work for
	// the run after it.
	sync := 20 * time.Millisecond
	if hold {
		sync = 2 * time.Second
	}
	cfg := killIdleConfig(t, p[0], 1, [2]string{p[3], p[4]}, epoch, p[1], childCAPool(p[2]), sync)
	cfg.Logf = func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
	var cut atomic.Bool
	if hold {
		cfg.Cluster.Comm.Hook = func(b []byte, _ netip.AddrPort, send func([]byte)) {
			if cut.Load() && len(b) > 2 && b[2]&1 != 0 { // flags: carries items
				return
			}
			send(b)
		}
		var first atomic.Uint64
		cfg.Cluster.onAnswer = func(r uint64, st cluster.State) {
			switch {
			case !st.Idle:
			case first.CompareAndSwap(0, r):
				cut.Store(true) // its datagram left (sendControl flushes), nothing after it
			case r > first.Load():
				fmt.Printf("held %d\n", r)
			}
		}
	}
	n, err := OpenNode(cfg)
	if err != nil {
		childFail(err)
	}
	if _, err := n.Run(context.Background()); err != nil {
		childFail(err)
	}
	if err := n.Close(); err != nil {
		childFail(err)
	}
	os.Exit(0)
}

// TestClusterPeerKilledBetweenRounds: node 1's run delivered its idle
// answer to one termination round, acknowledged the next round's probe
// and queued its answer (held back on the wire), and was killed with
// SIGKILL. The answer, a control message, waited in the communicator's
// memory and is lost, and node 0 waited for ever for an answer to a probe
// neither run of node 1 would give (the new run never had it); node 0 now
// takes a peer restarted since the probe as busy in that round. (After a
// clean stop the new run sends the answer again from its spill file, of
// a run gone, and node 0 takes it as busy too, StaleState:
// TestClusterPeerRestartState.) Node 0 then probes the new run, whatever work its
// restart gave it (pages fetched again, or stored with reports its
// scheduler had not synced: that run syncs every 2 s), and the crawl ends
// with every page of the web stored once, on its owner. Node 1 is a child
// process; node 0 runs here.
func TestClusterPeerKilledBetweenRounds(t *testing.T) {
	if os.Getenv(killIdleChildEnv) != "" {
		t.Skip("child")
	}
	srv, _ := startWeb(t, testweb.Config{Hosts: 8, Seed: 21, MaxPages: 5, MeanPageSize: 2000, Seeds: 2, Plain: true}, &bytes.Buffer{})
	var addrs [2]string
	for i := range addrs {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		addrs[i] = c.LocalAddr().String()
		c.Close() // node 0's is bound by its endpoint, node 1's by the child
	}
	epoch := time.Now().Unix()
	dirs := [2]string{t.TempDir(), t.TempDir()}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, srv.CACertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := killIdleConfig(t, dirs[0], 0, addrs, epoch, srv.DNSAddr(), srv.CertPool(), 20*time.Millisecond)
	cfg.Seeds = srv.SeedURLs()
	cfg.Logf = func(f string, a ...any) { t.Logf("node 0: %s", fmt.Sprintf(f, a...)) }

	type child struct {
		cmd    *exec.Cmd
		lines  chan string
		stderr *bytes.Buffer
	}
	start := func(mode string) child {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestClusterKillIdleChild$", "-test.v=false")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s;%s;%s;%s;%s;%d;%s", killIdleChildEnv, dirs[1], srv.DNSAddr(), ca, addrs[0], addrs[1], epoch, mode))
		c := child{cmd: cmd, lines: make(chan string, 64), stderr: &bytes.Buffer{}}
		cmd.Stderr = c.stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			defer close(c.lines)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				c.lines <- sc.Text()
			}
		}()
		return c
	}
	n0, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n0.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type result struct {
		sum *NodeSummary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := n0.Run(ctx)
		done <- result{sum, err}
	}()

	c := start("hold")
	select {
	case l, ok := <-c.lines:
		if !ok || !strings.HasPrefix(l, "held ") {
			c.cmd.Process.Kill()
			c.cmd.Wait()
			t.Fatalf("node 1's run before the kill: %q, %v\n%s", l, ok, c.stderr)
		}
		t.Logf("node 1: answer %s, then killed", l)
	case r := <-done:
		c.cmd.Process.Kill()
		c.cmd.Wait()
		t.Fatalf("node 0 ended before node 1's second answer: %+v, %v\n%s", r.sum, r.err, c.stderr)
	case <-ctx.Done():
		c.cmd.Process.Kill()
		c.cmd.Wait()
		t.Fatalf("node 1 held no answer:\n%s", c.stderr)
	}
	c.cmd.Process.Kill()
	for range c.lines {
	}
	c.cmd.Wait()

	c = start("")
	ended := make(chan error, 1)
	go func() {
		for range c.lines {
		}
		ended <- c.cmd.Wait()
	}()
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("node 1 after its restart: %v\n%s", err, c.stderr)
		}
	case <-ctx.Done():
		c.cmd.Process.Kill()
		<-ended
		t.Fatalf("node 1 after its restart did not end (node 0's probe rounds: %d):\n%s", n0.ClusterStats().TerminationRounds, c.stderr)
	}
	t.Logf("node 1 after its restart:\n%s", c.stderr)
	r := <-done
	if r.err != nil || !r.sum.Finished {
		t.Fatalf("node 0: %+v, %v", r.sum, r.err)
	}
	s := n0.ClusterStats()
	if len(s.NoBye) > 0 {
		t.Errorf("node 0: NoBye %q", s.NoBye)
	}
	// A kill -9 leaves no control message in the spill file to send again.
	if s.StaleState != 0 {
		t.Errorf("node 0: StaleState %d: an answer of node 1's run before the kill came again, though a control message is never spilled but at a clean stop", s.StaleState)
	}
	union := map[string]bool{}
	for i, d := range dirs {
		for u := range storedURLs(t, d) {
			if union[u] {
				t.Errorf("%s stored by node %d and another", u, i)
			}
			union[u] = true
		}
	}
	compareSets(t, union, truthURLs(t, srv, 2))
}
