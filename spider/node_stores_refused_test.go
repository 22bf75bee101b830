package spider

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/kspider/kspider/storage"
)

// storeOnePage opens a node on dir and stores one page durably under a
// URL of its tree, then closes it.
func storeOnePage(t *testing.T, dir, u string) {
	t.Helper()
	n, err := OpenNode(nodeConfigFor(t, dir, nil, noLookup, nil, 2))
	if err != nil {
		t.Fatal(err)
	}
	n.seeOne(u, 0, map[uint32]pageLinks{})
	id, ok := n.tree.FindString(u)
	if !ok {
		t.Fatalf("%s is not in the tree", u)
	}
	if err := n.tree.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := n.sched.Sync(); err != nil {
		t.Fatal(err)
	}
	p := &storage.Page{URLID: uint64(id), URL: u, FetchTime: time.Now(), Status: 200, Body: []byte("<p>a")}
	if err := n.store.Put(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
}

// A start given another crawl's page store beside its own (a config
// mistake) is refused by the store, which finds the other tree's pages;
// but the start had recorded that directory in DIR/STORES first, as one
// holding pages of the crawl. With the mistake undone, the next start was
// refused in turn: the directory "holds pages of the crawl ... but it is
// not in storage.dirs", and only deleting STORES by hand (which the
// message reserves for pages lost for good) let it start. Now a directory
// is recorded only once the store has taken it.
func TestRefusedStartRecordsNoStore(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	storeOnePage(t, dir, "http://a.test/")
	storeOnePage(t, other, "http://b.test/")
	cfg := nodeConfigFor(t, dir, nil, noLookup, nil, 2)
	cfg.StorageDirs = []string{filepath.Join(dir, "pages"), filepath.Join(other, "pages")}
	if n, err := OpenNode(cfg); err == nil {
		n.Close()
		t.Fatal("a start with another crawl's page store: not refused")
	} else {
		t.Logf("refused as it should be: %v", err)
	}
	cfg.StorageDirs = nil
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatalf("the start with its own store again: %v", err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadStoreDirs(dir); err != nil || len(got) != 1 || got[0] != filepath.Join(dir, "pages") {
		t.Errorf("STORES names %q, %v; want only %s", got, err, filepath.Join(dir, "pages"))
	}
}
