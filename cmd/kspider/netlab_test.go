package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kspider/kspider/tools/testweb"
)

// netLab is a test's small network: one network namespace per node, each
// with a veth into a bridge the test creates (no address on the bridge, so
// the namespaces reach each other and nothing else), and in each namespace
// its own copy of the test web on its loopback (the same seed and ports
// everywhere, so the same URLs). Without the rights to create namespaces
// (not root), the nodes share the host's loopback and one test web.
type netLab struct {
	t      *testing.T
	ns     []string     // namespace of each node; nil without namespaces
	ips    []netip.Addr // each node's address
	bridge string
	veth   []string // the namespace side of each node's veth
}

const (
	labHTTP  = 18080
	labHTTPS = 18443
	labDNS   = "127.0.0.1:15353"
)

func newNetLab(t *testing.T, n int) *netLab {
	t.Helper()
	lab := &netLab{t: t}
	tag := fmt.Sprintf("%05x", (os.Getpid()*31+int(time.Now().UnixNano()))&0xfffff)
	sub := 1 + os.Getpid()%250
	ip := func(args ...string) error {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
		return nil
	}
	lab.bridge = "ksb" + tag
	if err := ip("link", "add", lab.bridge, "type", "bridge"); err != nil {
		t.Logf("no network namespaces (%v): the nodes share loopback", err)
		for i := range n {
			lab.ips = append(lab.ips, netip.AddrFrom4([4]byte{127, 0, 0, byte(20 + i)}))
		}
		return lab
	}
	t.Cleanup(func() { ip("link", "del", lab.bridge) })
	if err := ip("link", "set", lab.bridge, "up"); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		ns := fmt.Sprintf("ks%s-%d", tag, i)
		host, peer := fmt.Sprintf("ksh%s%d", tag, i), fmt.Sprintf("ksn%s%d", tag, i)
		addr := netip.AddrFrom4([4]byte{10, 213, byte(sub), byte(2 + i)})
		for _, c := range [][]string{
			{"netns", "add", ns},
			{"link", "add", host, "type", "veth", "peer", "name", peer},
			{"link", "set", host, "master", lab.bridge, "up"},
			{"link", "set", peer, "netns", ns},
			{"-n", ns, "addr", "add", addr.String() + "/24", "dev", peer},
			{"-n", ns, "link", "set", peer, "up"},
			{"-n", ns, "link", "set", "lo", "up"},
		} {
			if err := ip(c...); err != nil {
				t.Fatal(err)
			}
			if c[0] == "netns" {
				t.Cleanup(func() { ip("netns", "del", ns) })
			}
		}
		lab.ns = append(lab.ns, ns)
		lab.ips = append(lab.ips, addr)
		lab.veth = append(lab.veth, peer)
	}
	return lab
}

// command runs this test binary as a child (TestLabChild) in node i's
// namespace.
func (lab *netLab) command(i int, mode string, args []string) *exec.Cmd {
	self := []string{os.Args[0], "-test.run=^TestLabChild$", "-test.count=1"}
	var cmd *exec.Cmd
	if lab.ns != nil {
		cmd = exec.Command("ip", append([]string{"netns", "exec", lab.ns[i]}, self...)...)
	} else {
		cmd = exec.Command(self[0], self[1:]...)
	}
	cmd.Env = append(os.Environ(), "KSPIDER_LAB_CHILD="+mode, "KSPIDER_LAB_ARGS="+strings.Join(args, "\x1f"))
	return cmd
}

// inNS runs a command in node i's namespace (tc, for faults).
func (lab *netLab) inNS(i int, name string, args ...string) error {
	if lab.ns == nil {
		return fmt.Errorf("no namespaces")
	}
	out, err := exec.Command("ip", append([]string{"netns", "exec", lab.ns[i], name}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// labWeb is a test web seen by the nodes: per namespace a child process
// with its request log and CA file, or one in-process server.
type labWeb struct {
	cfg   testweb.Config
	ports testweb.Ports
	dns   string
	logs  []string // request log files, one per copy
	cas   []string // CA file of each node
	procs []*exec.Cmd
	srv   *testweb.Server
}

func (lab *netLab) startWeb(cfg testweb.Config) *labWeb {
	t := lab.t
	t.Helper()
	dir := t.TempDir()
	w := &labWeb{cfg: cfg}
	if lab.ns == nil {
		log, err := os.Create(filepath.Join(dir, "requests.log"))
		if err != nil {
			t.Fatal(err)
		}
		srv, err := testweb.Start(context.Background(), testweb.Generate(cfg), testweb.ServeConfig{
			HTTPAddr: "127.0.0.1:0", DNSAddr: "127.0.0.1:0", Log: log})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close(); log.Close() })
		ca := filepath.Join(dir, "ca.pem")
		os.WriteFile(ca, srv.CACertPEM(), 0o644)
		w.srv, w.dns, w.logs = srv, srv.DNSAddr(), []string{log.Name()}
		w.ports = srv.Ports()
		for range lab.ips {
			w.cas = append(w.cas, ca)
		}
		return w
	}
	w.ports, w.dns = testweb.Ports{HTTP: labHTTP, HTTPS: labHTTPS}, labDNS
	for i := range lab.ns {
		logf, ca := filepath.Join(dir, fmt.Sprintf("requests-%d.log", i)), filepath.Join(dir, fmt.Sprintf("ca-%d.pem", i))
		cmd := lab.command(i, "web", []string{fmt.Sprint(cfg.Hosts), fmt.Sprint(cfg.Seed), fmt.Sprint(cfg.MaxPages),
			fmt.Sprint(cfg.MeanPageSize), fmt.Sprint(cfg.Seeds), logf, ca})
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ready := make(chan bool, 1)
		go func() {
			sc := bufio.NewScanner(out)
			ok := false
			for sc.Scan() {
				if sc.Text() == "ready" && !ok {
					ok = true
					ready <- true
				}
			}
			if !ok {
				ready <- false
			}
		}()
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
		})
		select {
		case ok := <-ready:
			if !ok {
				t.Fatalf("test web in %s did not start", lab.ns[i])
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("test web in %s: not ready after 60 s", lab.ns[i])
		}
		w.logs, w.cas, w.procs = append(w.logs, logf), append(w.cas, ca), append(w.procs, cmd)
	}
	return w
}

// stop ends the web copies so that their logs are complete.
func (w *labWeb) stop() {
	if w.srv != nil {
		w.srv.Close()
	}
	for _, p := range w.procs {
		p.Process.Signal(syscall.SIGTERM)
		p.Wait()
	}
}

// TestLabChild is not a test of its own: it is the body of the child
// processes netLab starts (KSPIDER_LAB_CHILD set): "web" serves a test web
// on the namespace's loopback until SIGTERM, "run" is `kspider run`.
func TestLabChild(t *testing.T) {
	mode := os.Getenv("KSPIDER_LAB_CHILD")
	if mode == "" {
		return // run as part of the suite: nothing to do
	}
	args := strings.Split(os.Getenv("KSPIDER_LAB_ARGS"), "\x1f")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch mode {
	case "run":
		os.Exit(run(ctx, env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, args))
	case "web":
		var c testweb.Config
		var logf, ca string
		if _, err := fmt.Sscan(strings.Join(args[:5], " "), &c.Hosts, &c.Seed, &c.MaxPages, &c.MeanPageSize, &c.Seeds); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		c.Plain = true
		logf, ca = args[5], args[6]
		log, err := os.Create(logf)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		srv, err := testweb.Start(ctx, testweb.Generate(c), testweb.ServeConfig{
			HTTPAddr: fmt.Sprintf("127.0.0.1:%d", labHTTP), HTTPSAddr: fmt.Sprintf("127.0.0.1:%d", labHTTPS), DNSAddr: labDNS, Log: log})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := os.WriteFile(ca, srv.CACertPEM(), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("ready")
		<-ctx.Done()
		err = srv.Close()
		if cerr := log.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	t.Fatalf("unknown child mode %q", mode)
}

// labNode is one `kspider run` child.
type labNode struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	done   chan struct{}
	err    error
}

func (lab *netLab) startNode(i int, args []string) *labNode {
	lab.t.Helper()
	n := &labNode{cmd: lab.command(i, "run", args), stderr: &lockedBuffer{}, done: make(chan struct{})}
	n.cmd.Stderr, n.cmd.Stdout = n.stderr, n.stderr
	if err := n.cmd.Start(); err != nil {
		lab.t.Fatal(err)
	}
	go func() {
		n.err = n.cmd.Wait()
		close(n.done)
	}()
	lab.t.Cleanup(func() {
		select {
		case <-n.done:
		default:
			n.cmd.Process.Kill()
			<-n.done
		}
	})
	return n
}
