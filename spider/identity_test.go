package spider

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/urltree"
)

func TestIdentityRoundTrip(t *testing.T) {
	for _, id := range []DirIdentity{{0, 1, "none"}, {0, 4, "url"}, {3, 4, "host"}, {9, 10, "domain"}} {
		got, err := parseIdentity(id.encode())
		if err != nil || got != id {
			t.Errorf("%v: parsed back as %v, %v", id, got, err)
		}
	}
}

// A directory keeps the share it was first run with; any single node owns
// all URLs, whatever its partition.
func TestCheckIdentity(t *testing.T) {
	var logs []string
	logf := func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }
	alone := DirIdentity{0, 1, "none"}
	node1 := DirIdentity{1, 2, "url"}

	dir := t.TempDir()
	if err := checkIdentity(dir, node1, logf); err != nil || len(logs) != 0 {
		t.Fatalf("a new directory: %v, logs %q", err, logs)
	}
	if err := checkIdentity(dir, node1, logf); err != nil {
		t.Fatalf("the same node again: %v", err)
	}
	for _, other := range []DirIdentity{{0, 2, "url"}, {1, 3, "url"}, {1, 2, "host"}, alone} {
		err := checkIdentity(dir, other, logf)
		if err == nil || !strings.Contains(err.Error(), "holds the share of node 1 of 2, partition url; this run is "+other.String()) {
			t.Errorf("opened as %v: %v", other, err)
		}
	}

	dir = t.TempDir()
	if err := checkIdentity(dir, alone, logf); err != nil {
		t.Fatal(err)
	}
	if err := checkIdentity(dir, DirIdentity{0, 1, "host"}, logf); err != nil {
		t.Errorf("a node alone, then a one-node cluster: %v", err)
	}

	// A directory from before the file: recorded, with a note.
	dir = t.TempDir()
	os.Mkdir(filepath.Join(dir, "urls"), 0o755)
	if err := checkIdentity(dir, node1, logf); err != nil || len(logs) != 1 || !strings.Contains(logs[0], "predates the file") {
		t.Errorf("an older directory: %v, logs %q", err, logs)
	}
	if err := checkIdentity(dir, alone, logf); err == nil {
		t.Error("an older directory, once recorded, opened as another share")
	}
}

// A cluster node's directory whose IDENTITY was deleted is recorded anew
// only as the node whose URLs its tree holds: run as another node, it
// would fetch URLs that node owns.
func TestIdentityLostOwnerChecked(t *testing.T) {
	node0 := DirIdentity{0, 2, "url"}
	p := cluster.Partitioner{By: cluster.ByURL, Nodes: 2}
	dir := t.TempDir()
	tr, err := urltree.Open(filepath.Join(dir, treeSubdir), nil)
	if err != nil {
		t.Fatal(err)
	}
	added := 0
	for i := 0; added < 20; i++ {
		if u := fmt.Sprintf("http://h%d.example/p%d", i%5, i); p.Owner(u) == 0 {
			if _, _, err := tr.AddString(u); err != nil {
				t.Fatal(err)
			}
			added++
		}
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	for _, other := range []DirIdentity{{1, 2, "url"}, {1, 2, "host"}} {
		err := checkIdentity(dir, other, t.Logf)
		if err == nil || !strings.Contains(err.Error(), "which node 0 owns, not this run's "+other.String()) {
			t.Errorf("node 0's tree without IDENTITY opened as %v: %v", other, err)
		}
		if _, err := ReadDirIdentity(dir); err == nil {
			t.Fatalf("refused as %v, but recorded", other)
		}
	}
	if err := checkIdentity(dir, node0, t.Logf); err != nil {
		t.Fatalf("node 0's tree without IDENTITY opened as node 0: %v", err)
	}
	if id, err := ReadDirIdentity(dir); err != nil || id != node0 {
		t.Errorf("recorded %v, %v; want %v", id, err, node0)
	}
}

// Every damaged byte and every truncation is refused as damage, never
// read as another identity.
func TestIdentityDamage(t *testing.T) {
	good := DirIdentity{2, 4, "url"}.encode()
	dir := t.TempDir()
	path := filepath.Join(dir, IdentityFile)
	try := func(what string, b []byte) {
		t.Helper()
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		err := checkIdentity(dir, DirIdentity{2, 4, "url"}, t.Logf)
		if err == nil || !strings.Contains(err.Error(), "is damaged") {
			t.Errorf("%s: %v", what, err)
		}
	}
	for i := range good {
		for _, x := range []byte{0x01, 0x20, 0xff} {
			b := bytes.Clone(good)
			b[i] ^= x
			try(fmt.Sprintf("byte %d ^ %#x", i, x), b)
		}
	}
	for n := range len(good) {
		try(fmt.Sprintf("first %d bytes", n), good[:n])
	}
	try("a byte more", append(bytes.Clone(good), 'x'))
	try("a megabyte more", append(bytes.Clone(good), make([]byte, 1<<20)...))
	try("version 2", bytes.Replace(good, []byte("directory 1"), []byte("directory 2"), 1))
}

func FuzzParseIdentity(f *testing.F) {
	f.Add(DirIdentity{0, 1, "none"}.encode())
	f.Add(DirIdentity{3, 4, "domain"}.encode())
	f.Add([]byte("kspider data directory 1\nnode 0 of 1, partition none\ncrc32c zz\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := parseIdentity(b)
		if err != nil {
			return
		}
		// Only the one encoding of an identity is read as it.
		if !bytes.Equal(id.encode(), b) {
			t.Fatalf("%q read as %v, which encodes as %q", b, id, id.encode())
		}
	})
}

// A new URL tree beside a page store that holds pages is refused: the
// store's records are keyed by another tree's URL ids.
func TestNewTreeWithOldStore(t *testing.T) {
	sd := filepath.Join(t.TempDir(), "pages")
	st, err := storage.Open(storage.Config{Dirs: []string{sd}})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	dir := t.TempDir()
	if err := checkNewTreeStore(dir, []string{sd}); err != nil {
		t.Errorf("a store without pages: %v", err)
	}
	st, err = storage.Open(storage.Config{Dirs: []string{sd}})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(context.Background(), &storage.Page{URLID: 0, URL: "http://a.example/", FetchTime: time.Now(), Status: 200}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	err = checkNewTreeStore(dir, []string{filepath.Join(dir, "pages"), sd})
	if err == nil || !strings.Contains(err.Error(), "page store "+sd+" holds pages, but the URL tree in "+dir+" is new") {
		t.Errorf("a new tree beside a store with pages: %v", err)
	}
	os.Mkdir(filepath.Join(dir, "urls"), 0o755)
	if err := checkNewTreeStore(dir, []string{sd}); err != nil {
		t.Errorf("a tree that exists: %v", err)
	}
}
