package urltree

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// FuzzAddGet adds the newline-separated URLs of the input and checks ids,
// Find and Get against a map, before and after a crash-style reopen.
func FuzzAddGet(f *testing.F) {
	f.Add([]byte("http://a.com/\nhttp://a.com/b\nhttp://a.com/\nhttp://a.co\nh\nhttp://a.com/b/c"))
	f.Add([]byte("x\nxx\nxxx\nxy\nx\n\x00\n\xff\xff\n"))
	f.Add(bytes.Repeat([]byte("http://www.example.com/a\n"), 3))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		tr, err := Open(dir, &Options{MaxURLLen: 100})
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]uint32{}
		var urls []string
		for _, u := range bytes.Split(data, []byte("\n")) {
			id, added, err := tr.Add(u)
			switch {
			case len(u) == 0 || len(u) > 100:
				if err == nil {
					t.Fatalf("Add(%q) accepted a URL of %d bytes", u, len(u))
				}
				continue
			case err != nil:
				t.Fatal(err)
			}
			want, ok := ids[string(u)]
			if ok != !added || (ok && id != want) || (!ok && id != uint32(len(urls))) {
				t.Fatalf("Add(%q) = %d, %v", u, id, added)
			}
			if !ok {
				ids[string(u)] = id
				urls = append(urls, string(u))
			}
		}
		check := func() {
			var buf []byte
			for id, u := range urls {
				if buf, err = tr.Get(uint32(id), buf[:0]); err != nil || string(buf) != u {
					t.Fatalf("Get(%d) = %q, %v; want %q", id, buf, err, u)
				}
				if got, ok := tr.FindString(u); !ok || got != uint32(id) {
					t.Fatalf("Find(%q) = %d, %v", u, got, ok)
				}
			}
		}
		check()
		if err := tr.Sync(); err != nil {
			t.Fatal(err)
		}
		tr.closeFiles()
		if tr, err = Open(dir, nil); err != nil {
			t.Fatal(err)
		}
		check()
		tr.Close()
	})
}

// FuzzOpenCorrupt damages the files of a small tree and opens it: Open
// must fail with an error, or give a tree where every URL reads back as
// written. Check must not panic, must report damage when Open failed, and
// its repair must give a tree that opens, where every id reads back its
// URL or ErrLost.
func FuzzOpenCorrupt(f *testing.F) {
	f.Add([]byte{}, false)
	f.Add([]byte{0, 0, 0, 0, 100, 7}, true)
	f.Add([]byte{1, 0, 0, 0, 70, 0xff, 2, 0, 0, 0, 64, 9}, false)
	f.Add([]byte{3, 0, 0, 2, 0, 1, 3, 0, 0, 2, 8, 2}, true)
	f.Add([]byte{3, 0, 0, 0, 80, 1, 2, 0, 0, 0, 66, 0}, true)
	f.Add([]byte{0, 0, 0, 2, 10, 0, 0, 0, 0, 4, 10, 0}, true)
	f.Add([]byte{3, 0xff, 0xff, 0xff, 0xff, 12}, false)
	urls := []string{"http://a.com/", "http://a.com/x", "http://b.org/", "http://a.com/xy", "https://a.com/", "http://a.com/x/y/z", "h"}
	for i := range 30 {
		urls = append(urls, fmt.Sprintf("http://a.com/x/%d", i*7))
	}
	f.Fuzz(func(t *testing.T, edits []byte, clean bool) {
		dir := t.TempDir()
		tr, err := Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range urls {
			if _, _, err := tr.AddString(u); err != nil {
				t.Fatal(err)
			}
		}
		closeOrCrash(t, tr, clean)
		files := []string{metaName, nodesName, ptrsName, arenaName}
		// Each edit is 6 bytes: file, big-endian offset, value. Offset
		// 0xffffffff truncates the file to the value times 16 bytes.
		for ; len(edits) >= 6; edits = edits[6:] {
			p := filepath.Join(dir, files[int(edits[0])%len(files)])
			off := binary.BigEndian.Uint32(edits[1:5])
			if off == 0xffffffff {
				os.Truncate(p, int64(edits[5])*16)
				continue
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			// The used parts of the files are their first few hundred
			// bytes; the rest is preallocated zeros.
			if n := min(len(b), 2048); n > 0 {
				b[int(off)%n] = edits[5]
			}
			os.WriteFile(p, b, 0o644)
		}
		rep, err := Check(dir, false)
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		readBack := func(tr *Tree, lostOK bool) {
			var buf []byte
			for id := range tr.Len() {
				buf, err = tr.Get(uint32(id), buf[:0])
				if lostOK && errors.Is(err, ErrLost) {
					continue
				}
				if err != nil || string(buf) != urls[id] {
					t.Fatalf("Get(%d) = %q, %v; want %q", id, buf, err, urls[id])
				}
				if got, ok := tr.Find(buf); !ok || got != uint32(id) {
					t.Fatalf("Find(%q) = %d, %v; want %d", buf, got, ok, id)
				}
			}
			for range tr.Sorted() {
			}
		}
		tr, err = Open(dir, nil)
		if err != nil {
			if !rep.Damaged() {
				t.Fatalf("Open failed (%v), Check found no damage: %v", err, rep.Findings)
			}
			if rep, err = Check(dir, true); err != nil {
				t.Fatalf("repair: %v", err)
			}
			if tr, err = Open(dir, nil); err != nil {
				t.Fatalf("Open after repair: %v (findings %v)", err, rep.Findings)
			}
			readBack(tr, true)
		} else {
			readBack(tr, false)
		}
		tr.AddString("http://a.com/new")
		tr.Find([]byte("http://a.com/x"))
		tr.Close()
	})
}
