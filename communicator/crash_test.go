package communicator

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const crashEnv = "KSPIDER_COMMUNICATOR_CRASH"

// TestCrashChild is the receiving node of TestCrash. Like a node with its
// URL tree, it admits a URL only if its durable log does not hold it yet,
// appends it to the log, and every few milliseconds syncs the log and
// calls Durable. It runs until killed or until stdin closes.
func TestCrashChild(t *testing.T) {
	env := os.Getenv(crashEnv)
	if env == "" {
		t.Skip("child process of TestCrash only")
	}
	fail := func(err error) { fmt.Println("error", err); os.Exit(1) }
	var dir, a1, a2 string
	fmt.Sscan(strings.ReplaceAll(env, ",", " "), &dir, &a1, &a2)
	addrs := map[NodeID]netip.AddrPort{1: netip.MustParseAddrPort(a1), 2: netip.MustParseAddrPort(a2)}

	logPath := filepath.Join(dir, "admitted")
	old, err := os.ReadFile(logPath)
	if err != nil && !os.IsNotExist(err) {
		fail(err)
	}
	if i := bytes.LastIndexByte(old, '\n'); i+1 != len(old) {
		old = old[:i+1] // a line cut by the kill was never made durable
		os.WriteFile(logPath, old, 0o644)
	}
	admitted := make(map[string]bool)
	for _, l := range strings.Split(string(old), "\n") {
		if l != "" {
			admitted[l] = true
		}
	}
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fail(err)
	}
	w := bufio.NewWriter(f)
	var mu sync.Mutex
	var lastN uint64
	repeats := 0
	ep, err := New(Config{Self: 2, Peers: addrs, Keys: []Key{testKey}, SendKey: testKey.ID,
		SpillDir: filepath.Join(dir, "comm"),
		Handler: func(_ NodeID, n uint64, items []Item) {
			mu.Lock()
			defer mu.Unlock()
			for _, it := range items {
				if admitted[string(it.URL)] {
					repeats++
					continue
				}
				admitted[string(it.URL)] = true
				w.Write(it.URL)
				w.WriteByte('\n')
			}
			lastN = n
		}})
	if err != nil {
		fail(err)
	}
	fmt.Println("ready")
	stop := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(stop) }()
	tick := time.NewTicker(5 * time.Millisecond)
	for {
		select {
		case <-stop:
			if err := ep.Close(); err != nil {
				fail(err)
			}
			fmt.Println("repeats", repeats)
			os.Exit(0)
		case <-tick.C:
		}
		mu.Lock()
		n := lastN
		err := w.Flush()
		mu.Unlock()
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			fail(err)
		}
		ep.Durable(n)
	}
}

// TestCrash kills the receiving node with SIGKILL at random moments while
// node 1 sends, restarts it, and checks at the end that every URL was
// admitted exactly once: none lost, none admitted twice.
func TestCrash(t *testing.T) {
	if os.Getenv(crashEnv) != "" {
		t.Skip("in the child")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conns, addrs := loopbackConns(t, 2)
	conns[1].Close() // the child binds node 2's address
	ep1, err := New(Config{Self: 1, Peers: addrs, Conn: conns[0], Keys: []Key{testKey}, SendKey: testKey.ID,
		Handler: func(NodeID, uint64, []Item) {}, Window: 4,
		RetransmitMin: 20 * time.Millisecond, RetransmitMax: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer ep1.Close()
	const total = 20000
	for k := range total {
		if err := ep1.Send(2, 0, []byte(testURL(1, 2, k))); err != nil {
			t.Fatal(err)
		}
	}
	start := func() (*exec.Cmd, io.WriteCloser, chan string) {
		cmd := exec.Command(exe, "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%s,%s", crashEnv, dir, addrs[1], addrs[2]))
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 16)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		select {
		case l := <-lines:
			if l != "ready" {
				t.Fatalf("child: %s", l)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("child never became ready")
		}
		return cmd, in, lines
	}
	r := rand.New(rand.NewPCG(7, 7))
	for kill := range 8 {
		cmd, _, _ := start()
		// A random moment to kill at, not a synchronisation.
		time.Sleep(time.Duration(20+r.IntN(150)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		t.Logf("kill %d: backlog %d", kill, ep1.Backlog(2))
	}
	cmd, in, lines := start()
	waitUntil(t, 60*time.Second, "every URL acknowledged", func() bool { return ep1.Backlog(2) == 0 })
	in.Close()
	for l := range lines {
		if strings.HasPrefix(l, "error") {
			t.Error(l)
		}
		t.Logf("last run: %s", l)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "admitted"))
	if err != nil {
		t.Fatal(err)
	}
	lines2 := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	seen := make(map[string]int)
	for _, l := range lines2 {
		seen[l]++
	}
	for k := range total {
		if c := seen[testURL(1, 2, k)]; c != 1 {
			t.Fatalf("URL %d admitted %d times", k, c)
		}
	}
	if len(lines2) != total {
		t.Fatalf("%d URLs admitted; want %d", len(lines2), total)
	}
	st := ep1.Stats()
	t.Logf("node 1: %d datagrams, %d retransmits, drops %v", st.SentDatagrams, st.Retransmits, st.Drops)
}

const senderCrashEnv = "KSPIDER_COMMUNICATOR_SENDER_CRASH"

// TestSenderCrashChild is the sending node of TestSenderCrash. With mode
// "send" it sends URL after URL (all spilled: its queue holds nothing) and
// prints "synced N" after each Sync; with mode "drain" it sends nothing,
// prints "drained" once its spill file is delivered, and exits when stdin
// closes. With lazy "lazy" its endpoint is Lazy (as a cluster node's);
// with "compact" it rewrites its spill file without the acknowledged part
// from 8 KiB on (spillcompact.go).
func TestSenderCrashChild(t *testing.T) {
	env := os.Getenv(senderCrashEnv)
	if env == "" {
		t.Skip("child process of TestSenderCrash only")
	}
	fail := func(err error) { fmt.Println("error", err); os.Exit(1) }
	var dir, a1, a2, mode, lazy string
	fmt.Sscan(strings.ReplaceAll(env, ",", " "), &dir, &a1, &a2, &mode, &lazy)
	addrs := map[NodeID]netip.AddrPort{1: netip.MustParseAddrPort(a1), 2: netip.MustParseAddrPort(a2)}
	ep, err := New(Config{Self: 1, Peers: addrs, Keys: []Key{testKey}, SendKey: testKey.ID,
		SpillDir: dir, QueueBytes: 1, Handler: func(NodeID, uint64, []Item) {}, Lazy: lazy == "lazy",
		RetransmitMin: 20 * time.Millisecond, RetransmitMax: 100 * time.Millisecond})
	if err != nil {
		fail(err)
	}
	if lazy == "compact" {
		// Rewritten without its acknowledged part early and often.
		p := ep.peers[2]
		p.mu.Lock()
		p.spill.compactAt = 8 << 10
		p.mu.Unlock()
	}
	if mode == "send" {
		for k := 0; ; k++ {
			if err := ep.Send(2, 0, []byte(testURL(1, 2, k))); err != nil {
				fail(err)
			}
			if k%500 == 499 {
				if err := ep.Sync(); err != nil {
					fail(err)
				}
				fmt.Println("synced", k+1)
			}
			if lazy == "compact" && k%50 == 49 {
				// Paced, so that the peer keeps up and the file is
				// mostly acknowledged: rewritten often.
				time.Sleep(time.Millisecond)
			}
		}
	}
	stop := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(stop) }()
	tick := time.NewTicker(5 * time.Millisecond)
	drained := false
	for {
		select {
		case <-stop:
			if err := ep.Close(); err != nil {
				fail(err)
			}
			os.Exit(0)
		case <-tick.C:
		}
		if !drained && ep.Backlog(2) == 0 {
			drained = true
			fmt.Println("drained")
		}
	}
}

// TestSenderCrash kills a sending node with SIGKILL while it spills (the
// peer is down) and again while it delivers its spill file; every URL it
// had synced to its spill file arrives, and repeats are bounded. Lazy or
// not (marks of what was acknowledged fsynced by the upkeep or only by
// Sync), the same holds.
func TestSenderCrash(t *testing.T) {
	if os.Getenv(senderCrashEnv) != "" {
		t.Skip("in the child")
	}
	for _, lazy := range []string{"eager", "lazy", "compact"} {
		t.Run(lazy, func(t *testing.T) { testSenderCrash(t, lazy) })
	}
}

func testSenderCrash(t *testing.T, lazy string) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conns, addrs := loopbackConns(t, 2)
	conns[0].Close() // the child binds node 1's address
	start := func(mode string) (*exec.Cmd, io.WriteCloser, chan string) {
		cmd := exec.Command(exe, "-test.run=^TestSenderCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%s,%s,%s,%s", senderCrashEnv, dir, addrs[1], addrs[2], mode, lazy))
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		return cmd, in, lines
	}
	r := rand.New(rand.NewPCG(8, 8))
	// Node 2 is down: everything the child sends is spilled.
	synced := 0
	for range 3 {
		cmd, _, lines := start("send")
		for l := range lines {
			var n int
			if _, err := fmt.Sscanf(l, "synced %d", &n); err != nil {
				t.Fatalf("child: %s", l)
			}
			synced = max(synced, n)
			if r.IntN(8) == 0 {
				cmd.Process.Signal(syscall.SIGKILL)
				break
			}
		}
		cmd.Wait()
		for range lines {
		}
	}
	t.Logf("%d URLs synced to the spill file before the kills", synced)

	// Node 2 comes back; the child is killed while it delivers, then
	// runs until its spill file is drained.
	s := newSink()
	ep2, err := New(Config{Self: 2, Peers: addrs, Conn: conns[1], Keys: []Key{testKey}, SendKey: testKey.ID,
		Handler: s.handle, AckOnReturn: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ep2.Close()
	for range 3 {
		cmd, _, _ := start("drain")
		time.Sleep(time.Duration(5+r.IntN(40)) * time.Millisecond) // a random moment to kill at
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}
	cmd, in, lines := start("drain")
	select {
	case l := <-lines:
		if l != "drained" {
			t.Fatalf("child: %s", l)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("spill file never drained")
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range synced {
		if s.got[fmt.Sprintf("1 0 %s", testURL(1, 2, k))] == 0 {
			t.Fatalf("URL %d was synced to the spill file but never delivered", k)
		}
	}
	t.Logf("%d deliveries of %d distinct URLs (%d synced)", s.total, len(s.got), synced)
}

// TestSenderCrashCompacting: the sending node rewrites its spill file
// without the acknowledged part often (from 8 KiB on) while node 2 is up
// and acknowledging, and is killed with SIGKILL at random moments, in
// the middle of rewrites too; every URL it had synced arrives.
func TestSenderCrashCompacting(t *testing.T) {
	if os.Getenv(senderCrashEnv) != "" {
		t.Skip("in the child")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conns, addrs := loopbackConns(t, 2)
	conns[0].Close() // the child binds node 1's address
	s := newSink()
	ep2, err := New(Config{Self: 2, Peers: addrs, Conn: conns[1], Keys: []Key{testKey}, SendKey: testKey.ID,
		Handler: s.handle, AckOnReturn: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ep2.Close()
	start := func(mode string) (*exec.Cmd, io.WriteCloser, chan string) {
		cmd := exec.Command(exe, "-test.run=^TestSenderCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%s,%s,%s,%s", senderCrashEnv, dir, addrs[1], addrs[2], mode, "compact"))
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		return cmd, in, lines
	}
	r := rand.New(rand.NewPCG(9, 9))
	synced := 0
	for range 4 {
		cmd, _, lines := start("send")
		for l := range lines {
			var n int
			if _, err := fmt.Sscanf(l, "synced %d", &n); err != nil {
				t.Fatalf("child: %s", l)
			}
			synced = max(synced, n)
			if n >= 1500 && r.IntN(4) == 0 {
				time.Sleep(time.Duration(r.IntN(3)) * time.Millisecond)
				cmd.Process.Signal(syscall.SIGKILL)
				break
			}
		}
		cmd.Wait()
		for range lines {
		}
	}
	cmd, in, lines := start("drain")
	select {
	case l := <-lines:
		if l != "drained" {
			t.Fatalf("child: %s", l)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("spill file never drained")
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range synced {
		if s.got[fmt.Sprintf("1 0 %s", testURL(1, 2, k))] == 0 {
			t.Fatalf("URL %d was synced to the spill file but never delivered", k)
		}
	}
	t.Logf("%d deliveries of %d distinct URLs (%d synced)", s.total, len(s.got), synced)
}
