package spider

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kspider/kspider/communicator"
	"github.com/kspider/kspider/spider/cluster"
)

const clusterCrashChildEnv = "KSPIDER_CLUSTER_CRASH_CHILD"

var clusterCrashSecret = []byte("0123456789abcdef0123456789abcdef")

// clusterCrashConfig is node self of the two-node cluster of the crash
// test: nodes at addrs, slots from epoch (Unix seconds), nothing to
// fetch.
func clusterCrashConfig(t *testing.T, dir string, self int, addrs [2]string, epoch int64) NodeConfig {
	cc := cluster.Config{Self: self, Members: []cluster.Member{{ID: 0, UDP: addrs[0]}, {ID: 1, UDP: addrs[1]}},
		Phases: 2, PhaseLength: time.Second, Epoch: time.Unix(epoch, 0), Partition: cluster.ByURL}
	if err := cc.Check(); err != nil {
		t.Fatal(err)
	}
	lookup := func(context.Context, string) ([]netip.Addr, error) { return nil, errors.New("no lookups here") }
	cfg := nodeConfigFor(t, dir, nil, lookup, nil, 1)
	cfg.Scheduler.Phases = 2
	cfg.Scheduler.Clock = cluster.SystemClock(cc.Schedule(), self, 100*time.Millisecond, nil)
	cfg.Cluster = &NodeCluster{Config: cc, Secret: clusterCrashSecret, RoundEvery: 50 * time.Millisecond, HelloEvery: 200 * time.Millisecond}
	return cfg
}

// TestClusterCrashChild is the node TestClusterRecordCrash kills; it does
// nothing in a normal run. $KSPIDER_CLUSTER_CRASH_CHILD is
// "dir;addr0;addr1;epoch". It prints "lost N" as the peers seen back with
// a new directory grow, and exits 0 at the crawl's end, 3 on an error.
func TestClusterCrashChild(t *testing.T) {
	spec := os.Getenv(clusterCrashChildEnv)
	if spec == "" {
		t.Skip("only run as TestClusterRecordCrash's child process")
	}
	p := strings.Split(spec, ";")
	epoch, err := strconv.ParseInt(p[3], 10, 64)
	if err != nil {
		childFail(err)
	}
	cfg := clusterCrashConfig(t, p[0], 1, [2]string{p[1], p[2]}, epoch)
	cfg.Logf = func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
	n, err := OpenNode(cfg)
	if err != nil {
		childFail(err)
	}
	go func() {
		said := 0
		for {
			if l := len(n.ClusterStats().LostDirs); l != said {
				said = l
				fmt.Printf("lost %d\n", l)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	if _, err := n.Run(context.Background()); err != nil {
		childFail(err)
	}
	if err := n.Close(); err != nil {
		childFail(err)
	}
	os.Exit(0)
}

// TestClusterRecordCrash kills node 1 with SIGKILL at random moments
// around its writes of DIR/CLUSTER: as it takes the hello of node 0 back
// on a new data directory (the loss), and as it takes node 0's
// "finished" (the end). Restarted on its directory, it must start, and
// neither forget the loss nor the end: what the record missed, node 0
// sends again, as it was not acknowledged. Node 0 is a bare endpoint.
func TestClusterRecordCrash(t *testing.T) {
	if os.Getenv(clusterCrashChildEnv) != "" {
		t.Skip("child")
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 16))
	var addrs [2]string
	for i := range addrs {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		addrs[i] = c.LocalAddr().String()
		c.Close() // node 0's is bound by each endpoint, node 1's by the child
	}
	epoch := time.Now().Unix()
	peers := map[communicator.NodeID]netip.AddrPort{0: netip.MustParseAddrPort(addrs[0]), 1: netip.MustParseAddrPort(addrs[1])}
	block := clusterCrashConfig(t, t.TempDir(), 0, addrs, epoch).Cluster.Config.Canonical()
	node0 := func() *communicator.Endpoint {
		t.Helper()
		time.Sleep(2 * time.Millisecond) // an epoch is the start's millisecond
		ep, err := communicator.New(communicator.Config{Self: 0, Peers: peers,
			Keys: []communicator.Key{{ID: 1, Secret: clusterCrashSecret}}, SendKey: 1, AckOnReturn: true,
			Handler: func(communicator.NodeID, uint64, []communicator.Item) {}})
		if err != nil {
			t.Fatal(err)
		}
		return ep
	}
	hello := func(ep *communicator.Endpoint, fresh bool) {
		t.Helper()
		if err := ep.Send(1, cluster.TagHello, cluster.EncodeHello(cluster.Hello{Fields: block, Epoch: ep.Epoch(), Fresh: fresh}, nonce())); err != nil {
			t.Fatal(err)
		}
		ep.FlushTo(1)
	}
	type child struct {
		cmd    *exec.Cmd
		lines  chan string
		stderr *bytes.Buffer
	}
	start := func(dir string) child {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestClusterCrashChild$", "-test.v=false")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s;%s;%s;%d", clusterCrashChildEnv, dir, addrs[0], addrs[1], epoch))
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
	kill := func(c child) {
		c.cmd.Process.Kill()
		for range c.lines {
		}
		c.cmd.Wait()
	}
	// acked waits until ep's items to node 1 are acknowledged.
	acked := func(ep *communicator.Endpoint, c child) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for ep.Backlog(1) > 0 {
			if time.Now().After(deadline) {
				kill(c)
				t.Fatalf("node 1 did not acknowledge node 0's items:\n%s", c.stderr)
			}
			time.Sleep(time.Millisecond)
		}
	}
	pause := func() time.Duration { return time.Duration(rng.IntN(40_000)) * time.Microsecond }

	for round := range 6 {
		// The loss: node 0 heard, then back on a new directory.
		dir := t.TempDir()
		a := node0()
		c := start(dir)
		hello(a, false)
		acked(a, c)
		a.Close()
		b := node0()
		hello(b, true)
		d := pause()
		time.Sleep(d)
		kill(c)
		c = start(dir)
		lost := false
		timeout := time.After(30 * time.Second)
		for !lost {
			select {
			case l, ok := <-c.lines:
				if !ok {
					c.cmd.Wait()
					t.Fatalf("round %d: node 1 restarted after a kill %v after the new directory's hello exited: %v\n%s", round, d, c.cmd.ProcessState, c.stderr)
				}
				lost = l == "lost 1"
			case <-timeout:
				kill(c)
				t.Fatalf("round %d: node 1 restarted after a kill %v after the new directory's hello forgot the loss:\n%s", round, d, c.stderr)
			}
		}
		kill(c)
		b.Close()

		// The end: "finished" taken, the record written, bye sent.
		dir = t.TempDir()
		a = node0()
		c = start(dir)
		hello(a, false)
		acked(a, c)
		if err := a.Send(1, cluster.TagFinished, cluster.EncodeFinished(1, a.Epoch())); err != nil {
			t.Fatal(err)
		}
		a.FlushTo(1)
		d = pause()
		time.Sleep(d)
		kill(c)
		c = start(dir)
		done := make(chan error, 1)
		go func() {
			for range c.lines {
			}
			done <- c.cmd.Wait()
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("round %d: node 1 restarted after a kill %v after \"finished\": %v\n%s", round, d, err, c.stderr)
			}
		case <-time.After(30 * time.Second):
			c.cmd.Process.Kill()
			<-done
			t.Fatalf("round %d: node 1 restarted after a kill %v after \"finished\" did not end:\n%s", round, d, c.stderr)
		}
		if r, err := readClusterRecord(dir); err != nil || !r.over {
			t.Errorf("round %d: node 1's record after its end: %+v, %v", round, r, err)
		}
		a.Close()
	}
}
