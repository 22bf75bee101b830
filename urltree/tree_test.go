package urltree

import (
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os/exec"
	"sync"
	"syscall"

	"encoding/binary"
	"errors"
	"golang.org/x/sys/unix"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBadInput(t *testing.T) {
	tr, err := Open(t.TempDir(), &Options{MaxURLLen: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, _, err := tr.Add(nil); !errors.Is(err, ErrEmptyURL) {
		t.Errorf("Add(empty) = %v, want ErrEmptyURL", err)
	}
	if _, _, err := tr.AddString("http://toolong"); !errors.Is(err, ErrURLTooLong) {
		t.Errorf("Add(long) = %v, want ErrURLTooLong", err)
	}
	if _, ok := tr.FindString("http://toolong"); ok {
		t.Error("Find(long) found something")
	}
	if _, err := tr.Get(0, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(0) of an empty tree = %v, want ErrNotFound", err)
	}
	if _, err := Open(t.TempDir(), &Options{MaxURLLen: MaxURLLenLimit + 1}); err == nil {
		t.Error("Open accepted MaxURLLen above the limit")
	}
}

// TestFormatVersions: a newer version (with a valid header checksum) is
// ErrNewerFormat, a version-1 file ErrOldFormat, both naming the file and
// both versions; a version field with flipped bits is a corrupt header.
func TestFormatVersions(t *testing.T) {
	for _, name := range []string{metaName, nodesName, ptrsName, arenaName} {
		for _, c := range []struct {
			edit func(h []byte)
			want error
			msg  string
		}{
			{func(h []byte) {
				binary.LittleEndian.PutUint32(h[8:], FormatVersion+1)
				binary.LittleEndian.PutUint32(h[60:], crc32.Checksum(h[:60], castagnoli))
			}, ErrNewerFormat, fmt.Sprintf("version %d; this build reads version %d", FormatVersion+1, FormatVersion)},
			{func(h []byte) {
				binary.LittleEndian.PutUint32(h[8:], 1)
				clear(h[12:64]) // no ID, no checksum
			}, ErrOldFormat, fmt.Sprintf("version 1 (no checksums); this build reads versions 2 and %d", FormatVersion)},
			{func(h []byte) { h[11] ^= 0x08 }, ErrCorrupt, "offset 0: corrupt header"},
			{func(h []byte) { h[30] ^= 0x01 }, ErrCorrupt, "offset 0: corrupt header"},
		} {
			dir := t.TempDir()
			tr, err := Open(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			tr.AddString("http://example.com/")
			if err := tr.Close(); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, name)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			c.edit(b)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = Open(dir, nil)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("%s: Open = %v, want %v naming the file and %q", name, err, c.want, c.msg)
			}
		}
	}
}

func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir, &Options{ReadOnly: true}); !errors.Is(err, ErrNoTree) {
		t.Errorf("read-only Open of an empty dir = %v, want ErrNoTree", err)
	}
	tr, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr.AddString("http://a/")
	tr.AddString("http://b/")
	tr.Sync()
	tr.AddString("http://c/") // not synced: lost to the "crash" below
	tr.closeFiles()
	ro, err := Open(dir, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if !ro.Recovered() || ro.Len() != 2 {
		t.Errorf("read-only reopen after a crash: Recovered %v, Len %d; want true, 2", ro.Recovered(), ro.Len())
	}
	if id, ok := ro.FindString("http://b/"); !ok || id != 1 {
		t.Errorf("Find = %d, %v", id, ok)
	}
	if _, _, err := ro.AddString("http://d/"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Add on a read-only tree = %v, want ErrReadOnly", err)
	}
}

// TestSecondWriter: while a tree is open for writing, a second writable
// Open and a repair fail with ErrLocked; a reader may still open it. A
// second writer used to rebuild the node file under the first, whose Find
// then missed its URLs and gave them new ids, leaving a tree no later Open
// would take ("URL 200 repeats URL 100").
func TestSecondWriter(t *testing.T) {
	dir := t.TempDir()
	tr, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	url := func(i int) string { return fmt.Sprintf("http://h%d.example/p%d", i%7, i) }
	for i := range 200 {
		if i == 100 {
			tr.Sync()
		}
		tr.AddString(url(i))
	}
	if second, err := Open(dir, nil); !errors.Is(err, ErrLocked) {
		if err == nil {
			second.Close()
		}
		t.Errorf("second writable Open = %v, want ErrLocked", err)
	}
	if _, err := Check(dir, true); !errors.Is(err, ErrLocked) {
		t.Errorf("Check with repair of an open tree = %v, want ErrLocked", err)
	}
	ro, err := Open(dir, &Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only Open beside a writer: %v", err)
	}
	ro.Close()
	for i := range 200 {
		if id, ok := tr.FindString(url(i)); !ok || id != uint32(i) {
			t.Fatalf("the writer's Find(%s) = %d, %v after the other opens", url(i), id, ok)
		}
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	tr, err = Open(dir, nil)
	if err != nil {
		t.Fatalf("Open after the writer closed: %v", err)
	}
	if tr.Len() != 200 {
		t.Errorf("Len %d, want 200", tr.Len())
	}
	tr.Close()
}

func TestReadOnlyDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions")
	}
	dir := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, nil)
	if err == nil || !errors.Is(err, os.ErrPermission) {
		t.Errorf("Open in a read-only directory = %v, want a permission error", err)
	}
}

// TestDiskFull runs a child whose file size limit (RLIMIT_FSIZE) stands
// in for a full disk: growing a file then fails with EFBIG just where a
// full disk fails with ENOSPC. Add must return that error, not die of
// SIGBUS, and the URLs added before must stay intact.
func TestDiskFull(t *testing.T) {
	if dir := os.Getenv(diskFullEnv); dir != "" {
		diskFullChild(dir)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestDiskFull$", "-test.count=1")
	cmd.Env = append(os.Environ(), diskFullEnv+"="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "child ok") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

const diskFullEnv = "KSPIDER_URLTREE_DISKFULL_DIR"

func diskFullChild(dir string) {
	fail := func(format string, args ...any) {
		fmt.Printf(format+"\n", args...)
		os.Exit(1)
	}
	lim := unix.Rlimit{Cur: 256 << 10, Max: 256 << 10}
	if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &lim); err != nil {
		fail("setrlimit: %v", err)
	}
	tr, err := Open(dir, nil)
	if err != nil {
		fail("open: %v", err)
	}
	var addErr error
	n := 0
	for ; n < 1_000_000 && addErr == nil; n++ {
		_, _, addErr = tr.AddString(fmt.Sprintf("http://host%d.example/%d", n*7919%100003, n))
	}
	if addErr == nil {
		fail("Add never failed under a 256 KiB file size limit")
	}
	if !errors.Is(addErr, syscall.EFBIG) {
		fail("Add failed with %v, want EFBIG", addErr)
	}
	var buf []byte
	for id := range tr.Len() {
		want := fmt.Sprintf("http://host%d.example/%d", id*7919%100003, id)
		if buf, err = tr.Get(uint32(id), buf[:0]); err != nil || string(buf) != want {
			fail("Get(%d) = %q, %v", id, buf, err)
		}
	}
	fmt.Printf("child ok: %d URLs, then %v\n", tr.Len(), addErr)
}

// TestLongURLs stores URLs whose entries need the long-length escape of
// the pointer records (bodies of 255 bytes and more) next to short ones,
// and reads them back before and after a crash-style reopen.
func TestLongURLs(t *testing.T) {
	dir := t.TempDir()
	tr, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	var urls []string
	for i := range 300 {
		n := r.IntN(40)
		if i%3 == 0 {
			n = 200 + r.IntN(DefaultMaxURLLen-250)
		}
		b := []byte(fmt.Sprintf("http://h%d.example/", r.IntN(20)))
		for range n {
			b = append(b, byte(r.IntN(256)))
		}
		id, added, err := tr.Add(b)
		if err != nil {
			t.Fatal(err)
		}
		if added {
			if id != uint32(len(urls)) {
				t.Fatalf("id %d, want %d", id, len(urls))
			}
			urls = append(urls, string(b))
		}
	}
	check := func() {
		t.Helper()
		var buf []byte
		for id, u := range urls {
			if buf, err = tr.Get(uint32(id), buf[:0]); err != nil || string(buf) != u {
				t.Fatalf("Get(%d): %v", id, err)
			}
			if got, ok := tr.FindString(u); !ok || got != uint32(id) {
				t.Fatalf("Find(url %d) = %d, %v", id, got, ok)
			}
		}
		n := 0
		for id, u := range tr.ByID() {
			if string(u) != urls[id] {
				t.Fatalf("ByID yielded %d with the wrong URL", id)
			}
			n++
		}
		if n != len(urls) {
			t.Fatalf("ByID yielded %d URLs, want %d", n, len(urls))
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
	defer tr.Close()
	check()
}

// TestConcurrentReaders runs readers against a writer (under -race this
// checks the locking).
func TestConcurrentReaders(t *testing.T) {
	tr, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	const n = 3000
	url := func(i int) string { return fmt.Sprintf("http://www.site%d.example/page/%d", i%97, i) }
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for k := 0; k < 20000; k++ {
				l := tr.Len()
				if l == 0 {
					continue
				}
				id := uint32(k * 7919 % l)
				var err error
				if buf, err = tr.Get(id, buf[:0]); err != nil || string(buf) != url(int(id)) {
					errs <- fmt.Errorf("Get(%d) = %q, %v", id, buf, err)
					return
				}
				if got, ok := tr.Find(buf); !ok || got != id {
					errs <- fmt.Errorf("Find(%q) = %d, %v", buf, got, ok)
					return
				}
			}
		}()
	}
	for i := range n {
		if _, _, err := tr.AddString(url(i)); err != nil {
			t.Fatal(err)
		}
		if i%500 == 0 {
			tr.Sync()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestArenaBeyond4GiB puts entries at arena offsets past 4 GiB (after a
// gap, which costs little disk: fallocate reserves it as unwritten
// extents) and reads them back before and after a reopen.
func TestArenaBeyond4GiB(t *testing.T) {
	if testing.Short() {
		t.Skip("reserves 4 GiB of disk")
	}
	dir := t.TempDir()
	tr, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	url := func(i int) string { return fmt.Sprintf("http://www.example%d.com/path/%d", i%7, i) }
	for i := range ptrBlock {
		tr.AddString(url(i))
	}
	const gap = 4<<30 + 12345
	if err := tr.arenF.ensure(gap + 1<<16); err != nil {
		t.Skipf("cannot reserve the gap: %v", err)
	}
	tr.remapped()
	tr.arenaEnd = gap // the next entry starts a block
	for i := ptrBlock; i < 3*ptrBlock; i++ {
		if id, added, err := tr.AddString(url(i)); err != nil || !added || id != uint32(i) {
			t.Fatalf("Add(%d) = %d, %v, %v", i, id, added, err)
		}
	}
	check := func() {
		t.Helper()
		var buf []byte
		for i := range 3 * ptrBlock {
			if buf, err = tr.Get(uint32(i), buf[:0]); err != nil || string(buf) != url(i) {
				t.Fatalf("Get(%d) = %q, %v", i, buf, err)
			}
			if id, ok := tr.FindString(url(i)); !ok || id != uint32(i) {
				t.Fatalf("Find(%d) = %d, %v", i, id, ok)
			}
		}
	}
	check()
	if tr.arenaEnd <= 4<<30 {
		t.Fatalf("arena ends at %d", tr.arenaEnd)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if tr, err = Open(dir, nil); err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	check()
}
