package scheduler

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

const crashEnv = "KSPIDER_SCHEDULER_CRASH_DIR"

// crashHost and crashDepth are what the crash child stores for id; the
// parent recomputes them.
func crashHost(id uint32) string { return fmt.Sprintf("h%d.example", (id*2654435761)%97) }
func crashDepth(id uint32) uint8 { return uint8(id % 7) }

func crashConfig(clk PhaseSource) Config {
	return Config{Clock: clk, Phases: 2, Window: 500, Columns: 7, Rows: 2, ListLen: 5, MaxRetries: 3,
		ErrorDelay: 100 * time.Millisecond, MaxBackoff: time.Second}
}

// TestCrashChild is the child process of TestCrash: it adds ids from the
// scheduler's length on, takes lists and reports random outcomes, moving
// its own clock through slots, syncing at random and printing
// "synced N" (N ids added) after each Sync, until it is killed.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("child process of TestCrash only")
	}
	fail := func(err error) {
		fmt.Println("error", err)
		os.Exit(1)
	}
	clk := newFakeClock(2, 2*time.Second, 100*time.Millisecond)
	s, err := Open(dir, crashConfig(clk))
	if err != nil {
		fail(err)
	}
	// The clock runs on from the latest wait a killed child stored.
	for h := range uint32(s.Hosts()) {
		hi, _ := s.HostInfo(h)
		clk.now = later(clk.now, later(hi.NextStart, hi.RetryUntil))
	}
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	w := bufio.NewWriter(os.Stdout)
	next := uint32(s.Len())
	var out [][]uint32
	for {
		switch op := r.IntN(10); {
		case op < 2:
			for range 1 + r.IntN(8) {
				if _, err := s.Add(next, crashHost(next), crashDepth(next)); err != nil {
					fail(err)
				}
				next++
			}
		case op < 4:
			for _, l := range drain(t, s) {
				out = append(out, l.IDs)
			}
		case op < 8:
			if len(out) > 0 {
				i := r.IntN(len(out))
				for _, id := range out[i] {
					if err := s.Report(id, Outcome{Kind: Kind(r.IntN(int(numKinds))), Status: 503, RetryAfter: time.Duration(r.IntN(2)) * time.Second}); err != nil {
						fail(err)
					}
				}
				out = append(out[:i], out[i+1:]...)
			}
		case op < 9:
			clk.advance(time.Duration(r.IntN(300)) * time.Millisecond)
		default:
			if r.IntN(3) == 0 {
				if err := s.Sync(); err != nil {
					fail(err)
				}
				fmt.Fprintf(w, "synced %d\n", next)
				w.Flush()
			}
		}
	}
}

// TestCrash kills a child driving the scheduler with SIGKILL at random
// moments and checks after each kill that every id added before the last
// Sync is there, that every record is one the child wrote (its host and
// depth, a state it can reach, no retry count past the limit), and that
// nothing is left in progress.
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
	clk := newFakeClock(2, 2*time.Second, 100*time.Millisecond)
	for kill := range 24 {
		cmd := exec.Command(exe, "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		synced := make(chan int, 1024)
		go func() {
			defer close(synced)
			sc := bufio.NewScanner(stdout)
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
		select {
		case <-synced:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Fatal("child never synced")
		}
		time.Sleep(time.Duration(r.IntN(40)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		last := 0
		for v := range synced {
			last = max(last, v)
		}
		cmd.Wait()

		s, err := Open(dir, crashConfig(clk))
		if err != nil {
			t.Fatalf("kill %d: reopen: %v", kill, err)
		}
		o := s.Opened()
		n := s.Len()
		t.Logf("kill %d: %d ids (%d synced), %d hosts, %d back in list, %d dropped, open %v", kill, n, last, o.Hosts, o.InProgress, o.Dropped, o.Took)
		if n < uint64(last) {
			t.Fatalf("kill %d: %d ids after reopen, but %d were synced", kill, n, last)
		}
		counts := map[State]int{}
		for id := range uint32(n) {
			u := s.URL(id)
			counts[u.State]++
			if u.State == Absent {
				if uint64(id) < uint64(last) {
					t.Fatalf("kill %d: synced id %d lost", kill, id)
				}
				continue
			}
			hi, err := s.HostInfo(u.Host)
			switch {
			case err != nil:
				t.Fatalf("kill %d: id %d: %v", kill, id, err)
			case hi.Name != crashHost(id) || u.Depth != crashDepth(id):
				t.Fatalf("kill %d: id %d has host %q depth %d, want %q %d", kill, id, hi.Name, u.Depth, crashHost(id), crashDepth(id))
			case u.State == InProgress:
				t.Fatalf("kill %d: id %d in progress after reopen", kill, id)
			case u.Retries > 3 || (u.State == Stalled && u.Retries == 0):
				t.Fatalf("kill %d: id %d %v with %d retries", kill, id, u.State, u.Retries)
			}
		}
		t.Logf("kill %d: states %v", kill, counts)
		if kill%4 == 0 {
			err = s.Close()
		} else {
			s.mu.Lock()
			err = s.closeFiles()
			s.closed = true
			s.mu.Unlock()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
