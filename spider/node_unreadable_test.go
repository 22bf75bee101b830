package spider

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kspider/kspider/spider/urlnorm"
	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/tools/testweb"
	"github.com/kspider/kspider/urltree"
)

// TestNodeReexpandDamagedPage: a page fetched in an earlier run, its
// record damaged on disk, then found shallower (made a seed), so its links
// must be read back from the store. That failed, said only under
// --verbose and counted nowhere; now NodeSummary.Unreadable counts it.
func TestNodeReexpandDamagedPage(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 40, Seed: 11, MaxPages: 60, MeanPageSize: 4000, Seeds: 3, Plain: true}, &log)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := nodeConfig(t, dir, srv, lookup, 1)
	cfg.Codec = "none" // the URL is found in the segment as it is
	if sum, err := runNode(t, ctx, cfg); err != nil || !sum.Finished {
		t.Fatalf("first run: %+v, %v", sum, err)
	}
	seeds := map[string]bool{}
	for _, s := range srv.SeedURLs() {
		c, err := urlnorm.Canonical(nil, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		seeds[c] = true
	}
	tree, err := urltree.Open(filepath.Join(dir, "urls"), &urltree.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]uint32{}
	for u := range storedURLs(t, dir) {
		if id, ok := tree.FindString(u); ok && !seeds[u] {
			ids[u] = id
		}
	}
	tree.Close()
	seg := filepath.Join(dir, "pages", "00000001.seg")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	// A byte flipped after one of the URL's occurrences in the segment,
	// kept if it damaged that page's record (not a link to it in another).
	damaged := ""
	for u, id := range ids {
		for at := 0; damaged == "" && at < len(b); {
			i := bytes.Index(b[at:], []byte(u))
			if i < 0 || at+i+len(u)+8 >= len(b) {
				break
			}
			pos := at + i + len(u) + 4
			b[pos] ^= 0x5a
			if err := os.WriteFile(seg, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if pageUnreadable(t, dir, id) {
				damaged = u
				break
			}
			b[pos] ^= 0x5a
			at += i + len(u)
		}
		if damaged != "" {
			break
		}
	}
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if damaged == "" {
		t.Fatal("no stored page of depth 1 could be damaged")
	}
	cfg.Seeds = append(cfg.Seeds, damaged) // depth 0 now: its links count from 1
	sum, err := runNode(t, ctx, cfg)
	if err != nil || !sum.Finished {
		t.Fatalf("run with %s a seed: %+v, %v", damaged, sum, err)
	}
	if sum.Unreadable != 1 {
		t.Errorf("run with %s, damaged, a seed: %d stored pages unreadable, want 1", damaged, sum.Unreadable)
	}
}

// pageUnreadable reports whether the store in dir fails to read id.
func pageUnreadable(t *testing.T, dir string, id uint32) bool {
	t.Helper()
	r, err := storage.OpenReader([]string{filepath.Join(dir, "pages")})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.Get(uint64(id))
	return err != nil
}
