package main

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCheckHostileFiles damages every file kspider check reads in a
// crawled node's data directory, one at a time in a fresh copy: bytes
// changed at random positions, cut at a random length or to nothing,
// replaced by a directory, a FIFO, a symbolic link to itself, or made
// unreadable; and each part's directory replaced by a file, a FIFO or a
// link to itself. Check must end (a FIFO opened for reading waits for a
// writer), and say something of the file: exit 1 naming it, or, for bytes
// past the committed data that a crash leaves too, a note naming it.
func TestCheckHostileFiles(t *testing.T) {
	conf, ca, dir, _ := crawlSetup(t, 3, 4, 2, "10ms")
	if code, _, errOut := runCmd(t, "", "run", "--config", conf, "--ca", ca, "--quiet"); code != 0 {
		t.Fatalf("run: exit %d:\n%s", code, errOut)
	}
	if code, out, errOut := runCmd(t, "", "check", "--data", dir); code != 0 {
		t.Fatalf("check: exit %d:\n%s\n%s", code, out, errOut)
	}
	var files []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		// LOCK is only ever locked, STATUS_TOKEN the status page's.
		if err == nil && d.Type().IsRegular() && d.Name() != "LOCK" && d.Name() != "STATUS_TOKEN" {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, rel)
		}
		return nil
	})
	if len(files) < 12 {
		t.Fatalf("the crawl left %d files: %v", len(files), files)
	}
	seed := rand.Uint64()
	t.Logf("seed %d, files %v", seed, files)
	rng := rand.New(rand.NewPCG(seed, 68))
	work := t.TempDir()
	if os.Geteuid() == 0 {
		t.Log("not tried: a file made unreadable (chmod 000), as root reads it all the same")
	}
	cases := 0
	for _, f := range append(files, "urls/", "sched/", "pages/") {
		kinds := []string{"file", "fifo", "loop"} // for a part's directory
		if !strings.HasSuffix(f, "/") {
			kinds = []string{"cut", "empty", "dir", "fifo", "loop", "unreadable"}
			for range 8 {
				kinds = append(kinds, "change")
			}
		}
		f = strings.TrimSuffix(f, "/")
		for _, kind := range kinds {
			cases++
			wd := filepath.Join(work, fmt.Sprint(cases))
			if err := copyTree(dir, wd); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(wd, f)
			b, err := os.ReadFile(path)
			if kind == "file" || kind == "fifo" || kind == "loop" {
				err = os.RemoveAll(path)
			}
			if err != nil {
				t.Fatal(err)
			}
			what := kind
			switch kind {
			case "file":
				err = os.WriteFile(path, []byte("x"), 0o644)
			case "change":
				i := rng.IntN(len(b))
				b[i] ^= byte(1 + rng.IntN(255))
				err = os.WriteFile(path, b, 0o644)
				what = fmt.Sprintf("byte %d of %d changed", i, len(b))
			case "cut":
				i := rng.IntN(len(b))
				err = os.Truncate(path, int64(i))
				what = fmt.Sprintf("cut at %d of %d", i, len(b))
			case "empty":
				err = os.Truncate(path, 0)
			case "dir":
				if err = os.Remove(path); err == nil {
					err = os.Mkdir(path, 0o755)
				}
			case "fifo":
				err = syscall.Mkfifo(path, 0o644)
			case "loop":
				err = os.Symlink(filepath.Base(path), path)
			case "unreadable":
				if os.Geteuid() == 0 {
					continue
				}
				err = os.Chmod(path, 0)
			}
			if err != nil {
				t.Fatal(err)
			}
			type result struct {
				code     int
				out, err string
			}
			done := make(chan result, 1)
			go func() {
				code, out, errOut := runCmd(t, "", "check", "--data", wd)
				done <- result{code, out, errOut}
			}()
			select {
			case r := <-done:
				all := r.out + r.err
				// The page store names a segment by its name in the store.
				named := strings.Contains(all, path) || strings.HasPrefix(f, "pages/") && strings.Contains(all, filepath.Base(f))
				noted := kind == "change" && strings.Contains(r.out, ": note: "+path+": ")
				if !named || r.code != 1 && !noted {
					t.Errorf("%s %s: exit %d, the file named: %v\nstdout %s\nstderr %s", f, what, r.code, named, r.out, r.err)
				}
			case <-time.After(time.Minute):
				t.Fatalf("%s %s: check still running after a minute", f, what)
			}
		}
	}
}
