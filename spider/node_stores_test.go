package spider

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/tools/testweb"
)

// storedIn is the URLs stored in the page store of dirs.
func storedIn(t *testing.T, dirs []string) map[string]bool {
	t.Helper()
	r, err := storage.OpenReader(dirs)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := map[string]bool{}
	var mu sync.Mutex // (Scan reads the directories at once)
	if err := r.Scan(context.Background(), func(p *storage.Page) error {
		mu.Lock()
		defer mu.Unlock()
		got[p.URL] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestNodeOneStoreDirGone: a finished crawl on two storage.dirs, one of
// them unmounted (an empty mount point) at the next start, then left out
// of storage.dirs. Its pages were done all the same, and the run
// "finished" at once, exit 0, with them lost (checkStoreGone saw the
// other directory's pages); now either start is refused, naming the
// directory, and with it back the crawl is as it was.
func TestNodeOneStoreDirGone(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 40, Seed: 11, MaxPages: 60, MeanPageSize: 4000, Seeds: 3, Plain: true}, &log)
	dir, disks := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := nodeConfig(t, dir, srv, lookup, 2)
	one, two := filepath.Join(disks, "one"), filepath.Join(disks, "two")
	cfg.StorageDirs = []string{one, two}
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := n.Run(ctx)
	// Recorded by the writer's syncs, not only at Close: a crash skips it.
	recorded, rerr := readStores(dir)
	if cerr := n.Close(); err != nil || cerr != nil || !sum.Finished {
		t.Fatalf("first run: %+v, %v, %v", sum, err, cerr)
	}
	before := storedIn(t, cfg.StorageDirs)
	if held, err := storage.HoldsPages(two); err != nil || !held {
		t.Fatalf("%s holds no pages after the first run (%v): the test proves nothing", two, err)
	}
	if rerr != nil || strings.Join(recorded, " ") != one+" "+two && strings.Join(recorded, " ") != two+" "+one {
		t.Errorf("before Close, %s names %q (%v), want both directories", StoresFile, recorded, rerr)
	}
	away := filepath.Join(t.TempDir(), "two")
	if err := os.Rename(two, away); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(two, 0o755); err != nil { // the empty mount point
		t.Fatal(err)
	}
	refused := func(cfg NodeConfig, want string) {
		t.Helper()
		n, err := OpenNode(cfg)
		if err == nil {
			sum, runErr := n.Run(ctx)
			n.Close()
			t.Fatalf("open with %s's pages gone: opened, and the run said %+v, %v; want it refused, naming it", two, sum, runErr)
		}
		if !strings.Contains(err.Error(), two) || !strings.Contains(err.Error(), want) {
			t.Fatalf("open with %s's pages gone: %v; want it refused, naming it, saying %q", two, err, want)
		}
		t.Logf("refused: %v", err)
	}
	refused(cfg, "holds none now")
	alone := cfg
	alone.StorageDirs = []string{one}
	refused(alone, "not in storage.dirs")
	if err := os.Remove(two); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(away, two); err != nil {
		t.Fatal(err)
	}
	if sum, err := runNode(t, ctx, cfg); err != nil || !sum.Finished {
		t.Fatalf("run with the store back: %+v, %v", sum, err)
	}
	compareSets(t, storedIn(t, cfg.StorageDirs), before)
}

// TestStoresFileDamaged: DIR/STORES with a byte changed at random
// positions, or cut short, is refused by name, never read as another list
// of directories.
func TestStoresFileDamaged(t *testing.T) {
	dir := t.TempDir()
	good := encodeStores([]string{"/disk1/pages", "/disk2/pages"})
	if got, err := readStoresBytes(t, dir, good); err != nil || len(got) != 2 {
		t.Fatalf("the file as written reads as %q, %v", got, err)
	}
	rng := rand.New(rand.NewPCG(7, 47))
	for range 200 {
		b := bytes.Clone(good)
		if rng.IntN(4) == 0 {
			b = b[:rng.IntN(len(b))]
		} else {
			b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
		}
		got, err := readStoresBytes(t, dir, b)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, StoresFile)) || !strings.Contains(err.Error(), "damaged") {
			t.Fatalf("STORES %q read as %q, %v; want it refused as damaged, by name", b, got, err)
		}
	}
}

func readStoresBytes(t *testing.T, dir string, b []byte) ([]string, error) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, StoresFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return readStores(dir)
}

// TestNodeDataDirMoved: a data directory moved whole (cp -a to another
// disk), its page store in it (the default pages/), is the same crawl:
// STORES names that directory by its path in the data directory.
func TestNodeDataDirMoved(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 10, Seed: 12, MaxPages: 20, MeanPageSize: 2000, Seeds: 2, Plain: true}, &log)
	dir := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := nodeConfig(t, dir, srv, lookup, 2)
	if sum, err := runNode(t, ctx, cfg); err != nil || !sum.Finished {
		t.Fatalf("first run: %+v, %v", sum, err)
	}
	before := storedURLs(t, dir)
	moved := filepath.Join(t.TempDir(), "data")
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	cfg = nodeConfig(t, moved, srv, lookup, 2)
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatalf("open of the moved data directory: %v", err)
	}
	sum, err := n.Run(ctx)
	if cerr := n.Close(); err != nil || cerr != nil || !sum.Finished || sum.Fetched != 0 {
		t.Fatalf("run on the moved data directory: %+v, %v, %v; want finished with nothing fetched", sum, err, cerr)
	}
	compareSets(t, storedURLs(t, moved), before)
}

// TestNodeStoresWithoutTree: a data directory with STORES naming page
// store directories but no URL tree (copied in part: IDENTITY and STORES
// but not urls/ yet; or the wrong --dir), its disks not mounted here (empty
// mount points), was started as a new crawl and STORES written anew with
// none of them, the list of the old crawl's disks lost. Now the start is
// refused, naming the file and the directories, and leaves the directory
// as it was; a damaged STORES there is refused too, and without STORES,
// or with one naming none, a new crawl starts.
func TestNodeStoresWithoutTree(t *testing.T) {
	dir, disks := t.TempDir(), t.TempDir()
	disk2 := filepath.Join(disks, "disk2") // the empty mount point
	if err := os.Mkdir(disk2, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := NodeConfig{Dir: dir, Lookup: noLookup, StorageDirs: []string{filepath.Join(dir, "pages"), disk2}}
	for _, tc := range []struct {
		stores []byte
		want   string // "" for a start
	}{
		{encodeStores([]string{"pages", disk2}), "has no URL tree"},
		{encodeStores([]string{"pages", disk2})[:30], "damaged"},
		{encodeStores(nil), ""},
		{nil, ""},
	} {
		path := filepath.Join(dir, StoresFile)
		os.Remove(path)
		if tc.stores != nil {
			if err := os.WriteFile(path, tc.stores, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		n, err := OpenNode(cfg)
		if err == nil {
			n.Close()
		}
		if tc.want == "" {
			if err != nil {
				t.Fatalf("STORES %q: %v, want a new crawl", tc.stores, err)
			}
			for _, sub := range []string{treeSubdir, "sched", "pages"} {
				os.RemoveAll(filepath.Join(dir, sub))
			}
			os.RemoveAll(disk2)
			os.Mkdir(disk2, 0o755)
			continue
		}
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("STORES %q beside no URL tree: %v; want it refused, naming %s, saying %q", tc.stores, err, path, tc.want)
		}
		if tc.want == "has no URL tree" && !strings.Contains(err.Error(), disk2) {
			t.Errorf("the refusal does not name %s: %v", disk2, err)
		}
		if b, _ := os.ReadFile(path); !bytes.Equal(b, tc.stores) {
			t.Errorf("STORES after the refusal: %q, want %q as it was", b, tc.stores)
		}
		if _, err := os.Stat(filepath.Join(dir, treeSubdir)); err == nil {
			t.Errorf("a URL tree was created by the refused start")
		}
	}
}
