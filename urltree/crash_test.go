package urltree

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crashURL is the i-th URL the crash child adds; the parent recomputes it.
func crashURL(i int) string {
	r := rand.New(rand.NewPCG(uint64(i), 99))
	var b strings.Builder
	fmt.Fprintf(&b, "http://www.host%d.example/", r.IntN(50))
	for n := r.IntN(4); n > 0; n-- {
		b.WriteString([]string{"a/", "index.html", "?q=", "img/", "%20"}[r.IntN(5)])
	}
	fmt.Fprintf(&b, "%d", i)
	if r.IntN(20) == 0 {
		b.WriteString(strings.Repeat("x", r.IntN(2000)))
	}
	return b.String()
}

const crashEnv = "KSPIDER_URLTREE_CRASH_DIR"

// TestCrashChild is the child process of TestCrash: it adds crashURL(i)
// for i from the tree's length on, syncing at random intervals and
// printing "synced N" after each Sync, until it is killed.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("child process of TestCrash only")
	}
	tr, err := Open(dir, nil)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	w := bufio.NewWriter(os.Stdout)
	for i := tr.Len(); ; i++ {
		if _, _, err := tr.AddString(crashURL(i)); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		if r.IntN(40) == 0 {
			if err := tr.Sync(); err != nil {
				fmt.Println("error", err)
				os.Exit(1)
			}
			fmt.Fprintf(w, "synced %d\n", i+1)
			w.Flush()
		}
	}
}

// TestCrash kills a child adding URLs with SIGKILL at random moments (25
// times) and checks after each kill that Check finds no damage (at most
// the uncommitted tail and a node file to rebuild), that every URL synced
// before it survived with its id and bytes, that nothing half-added did,
// and that the tree is a valid AVL tree.
func TestCrash(t *testing.T) {
	if os.Getenv(crashEnv) != "" {
		t.Skip("in the child")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(42, 42))
	kills := 25
	for kill := range kills {
		cmd := exec.Command(exe, "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		synced := make(chan int, 1024)
		go func() {
			defer close(synced)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if n, ok := strings.CutPrefix(sc.Text(), "synced "); ok {
					if v, err := strconv.Atoi(n); err == nil {
						synced <- v
					}
				} else if strings.HasPrefix(sc.Text(), "error") {
					t.Errorf("child: %s", sc.Text())
				}
			}
		}()
		// Wait for a first sync, then kill after a random delay.
		last := 0
		select {
		case last = <-synced:
		case <-time.After(20 * time.Second):
			t.Fatal("child never synced")
		}
		time.Sleep(time.Duration(r.IntN(30)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		for v := range synced {
			last = max(last, v)
		}
		cmd.Wait()

		// Check first, as an operator would after a power cut: no
		// damage, only what a crash leaves (an uncommitted tail, a node
		// file to rebuild).
		rep, err := Check(dir, false)
		if err != nil {
			t.Fatalf("kill %d: Check: %v", kill, err)
		}
		if rep.Damaged() || rep.Lost > 0 {
			t.Fatalf("kill %d: Check reports damage after a kill: %v (lost %d)", kill, rep.Findings, rep.Lost)
		}
		if rep.URLs < uint64(last) {
			t.Fatalf("kill %d: Check sees %d URLs, but %d were synced", kill, rep.URLs, last)
		}
		tr, err := Open(dir, nil)
		if err != nil {
			t.Fatalf("kill %d: reopen: %v", kill, err)
		}
		n := tr.Len()
		t.Logf("kill %d: %d URLs durable, %d reported synced, rebuilt %v", kill, n, last, tr.Recovered())
		if n < last {
			t.Fatalf("kill %d: %d URLs after reopen, but %d were synced", kill, n, last)
		}
		var buf []byte
		for id := range n {
			want := crashURL(id)
			if buf, err = tr.Get(uint32(id), buf[:0]); err != nil || string(buf) != want {
				t.Fatalf("kill %d: Get(%d) = %q, %v; want %q", kill, id, buf, err, want)
			}
			if got, ok := tr.FindString(want); !ok || got != uint32(id) {
				t.Fatalf("kill %d: Find(%q) = %d, %v; want %d", kill, want, got, ok, id)
			}
		}
		// The URL after the durable ones was either wholly lost or is
		// wholly there (counted in n); it must not be findable as a stub.
		if _, ok := tr.FindString(crashURL(n)); ok {
			t.Fatalf("kill %d: URL %d found beyond Len %d", kill, n, n)
		}
		if err := tr.checkNodes(tr.root); err != nil {
			t.Fatalf("kill %d: %v", kill, err)
		}
		// Every few kills, close cleanly so the child also starts from a
		// clean tree sometimes.
		if kill%4 == 0 {
			err = tr.Close()
		} else {
			err = tr.closeFiles()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
