package spider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/tools/testweb"
	"github.com/kspider/kspider/urltree"
)

// mountTmpfs mounts a tmpfs of size bytes on a new directory under
// t.TempDir() and unmounts it at the end of the test; it skips the test
// when it cannot (not root, no mount allowed).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs (%v): needs root with CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting the test's tmpfs %s: %v", dir, err)
		}
	})
	return dir
}

// resizeTmpfs gives the tmpfs at dir a new size.
func resizeTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, "size="+size); err != nil {
		t.Fatalf("remounting the tmpfs with size %s: %v", size, err)
	}
}

// fillDisk writes a file into dir until its disk is full.
func fillDisk(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for i := 0; i < 1<<20; i++ {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatal("the disk did not fill up")
}

// TestNodeTreeDiskFull: the disk of the URL tree and the scheduler fills
// up mid-crawl (the pages on another disk). A link the tree or the
// scheduler's host table cannot take is not a link rejected: the crawl
// stops with the error, no page whose links were lost is stored, and once
// space is freed the next run ends with the truth. Before, the links were
// counted rejected, the crawl "finished" and their pages were never
// fetched.
func TestNodeTreeDiskFull(t *testing.T) {
	for _, c := range []struct {
		name   string
		budget int                            // limits.max_pages_per_host: the host table is asked first
		fill   func(t *testing.T, dir string) // brings the files near their first growth
	}{
		// The tree's node file first grows at 5,461 URLs (64 KiB): ids a
		// crash left in the tree without the scheduler (recover) bring
		// the crawl near it.
		{"tree", 0, func(t *testing.T, dir string) {
			tree, err := urltree.Open(filepath.Join(dir, treeSubdir), nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 5300 {
				if _, _, err := tree.AddString(fmt.Sprintf("http://filler.invalid/%d", i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := errors.Join(tree.Sync(), tree.Close()); err != nil {
				t.Fatal(err)
			}
		}},
		// The host table's files, trimmed by a clean close, grow at the
		// first new host: the seeds' (before, counted rejected, and the
		// crawl "finished" with nothing fetched).
		{"hosts", 100, func(t *testing.T, dir string) {
			s, err := scheduler.Open(filepath.Join(dir, "sched"), scheduler.Config{Clock: SoloClock()})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 1000 {
				if _, err := s.Host(fmt.Sprintf("filler-%d.invalid", i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := errors.Join(s.Sync(), s.Close()); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var log bytes.Buffer
			srv, lookup := startWeb(t, testweb.Config{Hosts: 40, Seed: 5, MaxPages: 60, MeanPageSize: 2000, Seeds: 3, Plain: true}, &log)
			const depth = 3
			disk := mountTmpfs(t, "4m")
			dir := filepath.Join(disk, "node")
			cfg := nodeConfig(t, dir, srv, lookup, depth)
			cfg.StorageDirs = []string{t.TempDir()}
			if c.budget > 0 {
				budget := scopeNone()
				budget.MaxPagesPerHost = c.budget
				cfg.Scope = &budget
			}
			c.fill(t, dir)
			n, err := OpenNode(cfg)
			if err != nil {
				t.Fatal(err)
			}
			fillDisk(t, disk)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			sum1, runErr := n.Run(ctx)
			closeErr := n.Close()
			t.Logf("first run: %+v; run error: %v; close error: %v", *sum1, runErr, closeErr)
			if runErr == nil || !strings.Contains(runErr.Error(), "no space left on device") {
				t.Errorf("the crawl with its URL tree's disk full ended with %v, want an error saying no space is left", runErr)
			}
			if err := os.Remove(filepath.Join(disk, "filler")); err != nil {
				t.Fatal(err)
			}
			sum2, err := runNode(t, ctx, cfg)
			if err != nil {
				t.Fatalf("the run after space was freed: %v", err)
			}
			t.Logf("second run: %+v", *sum2)
			r, err := storage.OpenReader(cfg.StorageDirs)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got := map[string]bool{}
			if err := r.Scan(context.Background(), func(p *storage.Page) error {
				if got[p.URL] {
					t.Errorf("stored twice: %s", p.URL)
				}
				got[p.URL] = true
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			compareSets(t, got, truthURLs(t, srv, depth))
		})
	}
}

// TestNodeDirRemoved: the data directory, or a page store directory, is
// removed or renamed while the node crawls. The node's files stay open,
// so every write went on into files no path reached, and the crawl
// "finished" (exit 0) with nothing left on disk; now the crawl stops
// with an error naming the directory, and Close says so too.
func TestNodeDirRemoved(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 40, Seed: 11, MaxPages: 60, MeanPageSize: 4000, Seeds: 3, Plain: true}, &log)
	for _, c := range []struct {
		name string
		gone func(dir, pages string) error
		want string // (the end of) the path the error names
	}{
		{"data dir removed", func(dir, _ string) error { return os.RemoveAll(dir) }, "/node/urls"},
		{"data dir renamed", func(dir, _ string) error { return os.Rename(dir, dir+".old") }, "/node/urls"},
		{"lock removed", func(dir, _ string) error { return os.Remove(filepath.Join(dir, "LOCK")) }, "/node/LOCK"},
		{"page store removed", func(_, pages string) error { return os.RemoveAll(pages) }, "/pages"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			cfg := nodeConfig(t, filepath.Join(tmp, "node"), srv, lookup, 3)
			cfg.StorageDirs = []string{filepath.Join(tmp, "pages")}
			n, err := OpenNode(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			removed := make(chan error, 1)
			go func() {
				tick := time.NewTicker(time.Millisecond)
				defer tick.Stop()
				for range tick.C {
					if n.Counters().Pages >= 20 || ctx.Err() != nil {
						removed <- c.gone(cfg.Dir, cfg.StorageDirs[0])
						return
					}
				}
			}()
			sum, runErr := n.Run(ctx)
			closeErr := n.Close()
			if err := <-removed; err != nil {
				t.Fatal(err)
			}
			t.Logf("run: %+v; error %v; close error %v", *sum, runErr, closeErr)
			for what, err := range map[string]error{"Run": runErr, "Close": closeErr} {
				if err == nil || !strings.Contains(err.Error(), "removed or replaced") || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s returned %v, want an error saying %s was removed", what, err, c.want)
				}
			}
		})
	}
}

// TestNodeStoreGone: a finished crawl's page store gone at the next start
// (its directory removed, or storage.dirs on a disk not mounted: an empty
// mount point). The store was made anew, every page was done, and the run
// "finished" at once with nothing on disk; now the start is refused,
// naming the store, and with the store back the crawl is as it was.
func TestNodeStoreGone(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 40, Seed: 11, MaxPages: 60, MeanPageSize: 4000, Seeds: 3, Plain: true}, &log)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := nodeConfig(t, dir, srv, lookup, 2)
	if sum, err := runNode(t, ctx, cfg); err != nil || !sum.Finished {
		t.Fatalf("first run: %+v, %v", sum, err)
	}
	before := storedURLs(t, dir)
	pages, away := filepath.Join(dir, "pages"), filepath.Join(t.TempDir(), "pages")
	if err := os.Rename(pages, away); err != nil {
		t.Fatal(err)
	}
	n, err := OpenNode(cfg)
	if err == nil {
		n.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "page store ("+pages+") holds none") {
		t.Fatalf("open with the page store gone: %v, want it refused, naming the store", err)
	}
	if _, err := os.Stat(pages); err == nil {
		t.Errorf("the refused open made %s anew", pages)
	}
	if err := os.Rename(away, pages); err != nil {
		t.Fatal(err)
	}
	if sum, err := runNode(t, ctx, cfg); err != nil || !sum.Finished {
		t.Fatalf("run with the store back: %+v, %v", sum, err)
	}
	compareSets(t, storedURLs(t, dir), before)
}

// TestNodeStatusStoreFull: the page store's disk fills up mid-crawl. The
// status page and the progress line counted the pages and body bytes
// handed to the store, so after the failure they said more than the disk
// held (the final summary already said Durable); now they count what the
// store made durable, which is what the disk holds.
func TestNodeStatusStoreFull(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 40, Seed: 11, MaxPages: 60, MeanPageSize: 8000, Seeds: 3, Plain: true}, &log)
	disk := mountTmpfs(t, "2m")
	cfg := nodeConfig(t, t.TempDir(), srv, lookup, 3)
	cfg.StorageDirs = []string{filepath.Join(disk, "pages")}
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, runErr := n.Run(ctx)
	st, c := n.Status(), n.Counters()
	closeErr := n.Close()
	if runErr == nil || !strings.Contains(runErr.Error(), "no space left on device") {
		t.Fatalf("run on a full disk: %v (close: %v), want the disk's error", runErr, closeErr)
	}
	r, err := storage.OpenReader(cfg.StorageDirs)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var pages, body uint64
	if err := r.Scan(context.Background(), func(p *storage.Page) error {
		pages, body = pages+1, body+uint64(len(p.Body))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("handed to the store %d pages, %d bytes; on disk %d, %d", sum.Stored, sum.Bytes, pages, body)
	if st.Totals.Pages != pages || st.Totals.Bytes != body || c.Pages != pages || c.Bytes != body {
		t.Errorf("status says %d pages, %d bytes; progress %d, %d; the disk holds %d pages, %d body bytes",
			st.Totals.Pages, st.Totals.Bytes, c.Pages, c.Bytes, pages, body)
	}
}
