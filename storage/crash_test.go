package storage

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const crashChildEnv = "KSPIDER_STORAGE_CRASH_CHILD"

// crashConfig is what the child writes with: small syncs and segments, so
// a kill lands in every phase (writing, syncing, rolling, recovering).
func crashConfig(dirs []string) Config {
	return Config{Dirs: dirs, SyncEvery: 16, SyncInterval: 2 * time.Millisecond, SegmentSize: 96 << 10, Compressors: 2, QueueLen: 16}
}

// TestCrashChild is the writer process TestCrashRecovery kills; it does
// nothing in a normal run. It stores pages from id $BASE on and prints
// "durable ID" for each page as soon as it is durable.
func TestCrashChild(t *testing.T) {
	spec := os.Getenv(crashChildEnv)
	if spec == "" {
		t.Skip("only run as TestCrashRecovery's child process")
	}
	parts := strings.Split(spec, ";")
	base, _ := strconv.ParseUint(parts[0], 10, 64)
	dirs := parts[1:]
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	cfg := crashConfig(dirs)
	cfg.Logf = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, "log %s\n", fmt.Sprintf(format, args...))
		out.Flush()
	}
	cfg.OnDurable = func(ids []uint64) {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			fmt.Fprintf(out, "durable %d\n", id)
		}
		out.Flush() // reported only once it is out of the process
	}
	s, err := Open(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	for id := base; id < base+3000; id++ {
		if err := s.Put(context.Background(), testPage(id)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
	}
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	os.Exit(0)
}

// TestCrashRecovery kills a writer process with SIGKILL at random moments,
// 24 times over the same store, and checks after each kill that every page
// the writer had reported durable reads back intact - through a Reader
// straight after the crash, and after a writer's recovery.
func TestCrashRecovery(t *testing.T) {
	if os.Getenv(crashChildEnv) != "" {
		t.Skip("child")
	}
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "a"), filepath.Join(root, "b")}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	durable := map[uint64]bool{}
	const rounds = 24
	for round := 0; round < rounds; round++ {
		base := uint64(round) * 5000
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+strconv.FormatUint(base, 10)+";"+strings.Join(dirs, ";"))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill after a random number of durable pages; every fourth round
		// after a random few milliseconds instead, which lands in start-up
		// and in the recovery of the previous round's crash.
		killAfter := 1 + rng.IntN(120)
		killed := false
		if round%4 == 3 {
			killAfter = math.MaxInt
			timer := time.AfterFunc(time.Duration(rng.IntN(40))*time.Millisecond, func() { cmd.Process.Kill() })
			defer timer.Stop()
		}
		sc := bufio.NewScanner(stdout)
		n := 0
		var childLog []string // the last lines, for a failure's dump
		for sc.Scan() {
			if l, ok := strings.CutPrefix(sc.Text(), "log "); ok {
				childLog = append(childLog[max(0, len(childLog)-39):], l)
				continue
			}
			id, ok := strings.CutPrefix(sc.Text(), "durable ")
			if !ok {
				continue
			}
			v, err := strconv.ParseUint(id, 10, 64)
			if err != nil {
				t.Fatalf("child printed %q", sc.Text())
			}
			durable[v] = true
			if n++; n >= killAfter && !killed {
				cmd.Process.Kill()
				killed = true
			}
		}
		if !killed {
			cmd.Process.Kill()
		}
		err = cmd.Wait()
		if err != nil && !strings.Contains(err.Error(), "killed") {
			t.Fatalf("round %d: child failed: %v\n%s", round, err, stderr.String())
		}
		if strings.Contains(stderr.String(), "storage:") {
			t.Fatalf("round %d: child reported: %s", round, stderr.String())
		}
		// Check this round's pages and a sample of the earlier ones.
		check := map[uint64]bool{}
		for id := range durable {
			if id >= base || rng.IntN(len(durable)) < 50 {
				check[id] = true
			}
		}
		// Check (read-only) passes, or reports only a torn tail.
		for _, dir := range dirs {
			checkOnlyTornTail(t, dir, round, childLog)
		}
		if round%2 == 0 {
			checkDurable(t, dirs, check, round, "reader after the crash")
		}
		// A writer's recovery, then the same check.
		s, err := Open(Config{Dirs: dirs, Logf: t.Logf})
		if err != nil {
			t.Fatalf("round %d: reopening after kill: %v", round, err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("round %d: closing after recovery: %v", round, err)
		}
		checkDurable(t, dirs, check, round, "after recovery")
		// Recovery leaves nothing damaged behind: torn tails and torn
		// index entries are gone. (Index damage, which no damaged region
		// counts, showed only at the next round's check, as if that
		// round's kill had made it.)
		r, err := OpenReader(dirs)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Scan(context.Background(), func(*Page) error { return nil }); err != nil || r.Stats().Damage != 0 {
			for _, dir := range dirs {
				dumpCrashedStore(t, dir, prevIndexPath(dir), childLog)
			}
			t.Fatalf("round %d: scan after recovery: %v, %d problems: %v", round, err, r.Stats().Damage, r.Stats().Errors)
		}
		r.Close()
		// The index as recovery left it, for a later round's failure
		// dump to compare with.
		for _, dir := range dirs {
			if b, err := os.ReadFile(filepath.Join(dir, indexName)); err == nil {
				os.WriteFile(prevIndexPath(dir), b, 0o644)
			}
		}
	}
	if len(durable) == 0 {
		t.Fatal("no page was ever reported durable")
	}
	checkDurable(t, dirs, durable, rounds, "at the end")
	t.Logf("%d rounds, %d durable pages checked", rounds, len(durable))
}

// prevIndexPath is where TestCrashRecovery keeps a copy of dir's index
// as the last recovery left it: beside dir, not in it.
func prevIndexPath(dir string) string { return dir + ".prev-url.idx" }

func checkDurable(t *testing.T, dirs []string, ids map[uint64]bool, round int, when string) {
	t.Helper()
	r, err := OpenReader(dirs)
	if err != nil {
		t.Fatalf("round %d, %s: %v", round, when, err)
	}
	defer r.Close()
	for id := range ids {
		p, err := r.Get(id)
		if err != nil {
			t.Fatalf("round %d, %s: durable page %d: %v", round, when, id, err)
		}
		samePage(t, p, testPage(id))
	}
}

// checkOnlyTornTail runs Check's scan over dir after a crash: the only
// damage it may find is a torn tail at the end of the last segment and
// one index entry torn after the checkpoint (TornEntries) or one header
// slot (TornHeader).
func checkOnlyTornTail(t *testing.T, dir string, round int, childLog []string) {
	t.Helper()
	var out strings.Builder
	st, err := checkOnce(dir, &out)
	if errors.Is(err, ErrNoStore) {
		return // killed before the store was created
	}
	if err != nil {
		t.Fatalf("round %d: check %s: %v", round, dir, err)
	}
	// A kill lands in at most one record's write and one index entry's
	// (the saver puts an entry's three fields in turn, its CRC last) or
	// header slot's: what the check calls a crash's leftovers.
	if st.Damage > 0 && !crashLeftovers(st) {
		dumpCrashedStore(t, dir, prevIndexPath(dir), childLog)
		t.Fatalf("round %d: check %s after a crash found more than a torn tail:\n%s", round, dir, out.String())
	}
}
