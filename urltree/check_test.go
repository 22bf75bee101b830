package urltree

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestCheckMessages pins what Check and Open say for typical damage, and
// that a tree survives the loss of its whole meta file or pointer file.
func TestCheckMessages(t *testing.T) {
	fx := newCorruptFixture(t, 100, true)
	setup := func(edit func(dir string)) string {
		dir := t.TempDir()
		for nm, b := range fx.files {
			if err := os.WriteFile(filepath.Join(dir, nm), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		edit(dir)
		return dir
	}
	flip := func(name string, off int) func(string) {
		return func(dir string) {
			p := filepath.Join(dir, name)
			b, _ := os.ReadFile(p)
			b[off] ^= 0x10
			os.WriteFile(p, b, 0o644)
		}
	}
	for _, c := range []struct {
		name    string
		edit    func(string)
		openMsg string // "" if Open must succeed
		lost    uint64
		urls    uint64 // after a repair
	}{
		{"ptr", flip(ptrsName, headerSize+3*ptrRecord), "urltree.ptrs: offset 88: block pointer 3 says arena offset", 0, 100},
		{"arena", flip(arenaName, fx.used[arenaName]-40), "urltree.arena: offset", 0, 100},
		{"version", flip(arenaName, 11), "urltree.arena: offset 0: corrupt header", 0, 100},
		{"nodes", flip(nodesName, 100), "", 0, 100},
		{"no meta", func(dir string) { os.Remove(filepath.Join(dir, metaName)) }, "", 0, 96},
		{"no ptrs", func(dir string) { os.Remove(filepath.Join(dir, ptrsName)) }, "urltree.ptrs", 0, 100},
	} {
		dir := setup(c.edit)
		tr, err := Open(dir, nil)
		switch {
		case c.name == "no meta":
			// Open must not start a new tree over the old one's files.
			if err == nil || !strings.Contains(err.Error(), "urltree.meta: offset 0: missing, but urltree.nodes holds data") {
				t.Errorf("%s: Open = %v", c.name, err)
			}
		case c.openMsg == "" && err != nil:
			t.Errorf("%s: Open: %v", c.name, err)
		case c.openMsg == "":
			if !tr.Recovered() || !strings.Contains(tr.RecoveredWhy(), "checksum mismatch") {
				t.Errorf("%s: recovered %v (%s), want a rebuild for the checksum", c.name, tr.Recovered(), tr.RecoveredWhy())
			}
			tr.Close()
		case err == nil || !strings.Contains(err.Error(), c.openMsg):
			t.Errorf("%s: Open = %v, want %q", c.name, err, c.openMsg)
		}
		rep, err := Check(dir, true)
		if err != nil {
			t.Fatalf("%s: Check: %v", c.name, err)
		}
		t.Logf("%s: %v", c.name, rep.Findings)
		if c.openMsg != "" && (!rep.Repaired || rep.Lost < c.lost) {
			t.Errorf("%s: repaired %v, lost %d", c.name, rep.Repaired, rep.Lost)
		}
		tr, err = Open(dir, nil)
		if err != nil {
			t.Fatalf("%s: Open after repair: %v", c.name, err)
		}
		if uint64(tr.Len()) != c.urls {
			t.Errorf("%s: %d URLs after repair, want %d", c.name, tr.Len(), c.urls)
		}
		tr.Close()
	}
	if _, err := Check(t.TempDir(), false); !errors.Is(err, ErrNoTree) {
		t.Errorf("Check of an empty directory: %v, want ErrNoTree", err)
	}
}

// TestConvertV1: Open refuses a tree of format version 1, naming both
// versions; Check with repair converts it, keeping every id.
func TestConvertV1(t *testing.T) {
	fx := newCorruptFixture(t, 100, true)
	dir := t.TempDir()
	// Version 1 is version 2 without the checksums: no block trailers,
	// headers and commit slots without the new fields.
	arena := fx.files[arenaName]
	ptrs := append([]byte(nil), fx.files[ptrsName]...)
	v1 := append([]byte(nil), arena[:headerSize]...)
	for k := 0; k*ptrBlock < len(fx.urls); k++ {
		start := binary.LittleEndian.Uint64(ptrs[headerSize+k*ptrRecord:])
		end := uint64(fx.used[arenaName])
		if (k+1)*ptrBlock < len(fx.urls) {
			end = binary.LittleEndian.Uint64(ptrs[headerSize+(k+1)*ptrRecord:]) - blockTrailer
		}
		binary.LittleEndian.PutUint64(ptrs[headerSize+k*ptrRecord:], uint64(len(v1)))
		v1 = append(v1, arena[start:end]...)
	}
	arenaLen := len(v1) - headerSize
	v1 = append(v1, make([]byte, len(arena)-len(v1))...)
	meta := append([]byte(nil), fx.files[metaName]...)
	for _, off := range metaSlotOffsets {
		c, _ := decodeCommit(meta[off : off+metaSlotSize])
		c.arenaLen, c.tailCRC, c.nodesCRC = uint64(arenaLen), 0, 0
		copy(meta[off:], c.encode())
	}
	files := map[string][]byte{metaName: meta, nodesName: fx.files[nodesName], ptrsName: ptrs, arenaName: v1}
	for name, b := range files {
		b = append([]byte(nil), b...)
		binary.LittleEndian.PutUint32(b[8:], 1)
		clear(b[12:64]) // no ID, no checksum
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open(dir, nil); !errors.Is(err, ErrOldFormat) || !strings.Contains(err.Error(), "format version 1 (no checksums); this build reads versions 2 and 3") {
		t.Fatalf("Open of a version-1 tree: %v", err)
	}
	rep, err := Check(dir, true)
	if err != nil || !rep.Repaired || rep.Lost != 0 {
		t.Fatalf("Check: %v, %+v", err, rep)
	}
	tr, err := Open(dir, nil)
	if err != nil {
		t.Fatalf("Open after the conversion: %v", err)
	}
	defer tr.Close()
	var buf []byte
	for id, u := range fx.urls {
		if buf, err = tr.Get(uint32(id), buf[:0]); err != nil || string(buf) != u {
			t.Fatalf("Get(%d) = %q, %v; want %q", id, buf, err, u)
		}
		if got, ok := tr.FindString(u); !ok || got != uint32(id) {
			t.Fatalf("Find(%q) = %d, %v", u, got, ok)
		}
	}
}

// TestCheckNewerFormat: Check reports a newer format and refuses to
// repair it, changing nothing.
func TestCheckNewerFormat(t *testing.T) {
	fx := newCorruptFixture(t, 40, true)
	dir := t.TempDir()
	for nm, b := range fx.files {
		b = append([]byte(nil), b...)
		if nm == arenaName {
			binary.LittleEndian.PutUint32(b[8:], FormatVersion+1)
			binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
		}
		os.WriteFile(filepath.Join(dir, nm), b, 0o644)
	}
	rep, err := Check(dir, true)
	if !errors.Is(err, ErrNewerFormat) || rep.Repaired || !strings.Contains(fmt.Sprint(rep.Findings), "newer than this build's") {
		t.Fatalf("Check = %v, %+v", err, rep)
	}
	if _, err := os.Stat(filepath.Join(dir, "damaged")); err == nil {
		t.Fatal("a refused repair moved files")
	}
}

// TestCheckHealthy: a tree closed cleanly has no findings; one left by a
// crash has notes only.
func TestCheckHealthy(t *testing.T) {
	for _, clean := range []bool{true, false} {
		fx := newCorruptFixture(t, 70, clean)
		dir := t.TempDir()
		for nm, b := range fx.files {
			os.WriteFile(filepath.Join(dir, nm), b, 0o644)
		}
		rep, err := Check(dir, true)
		if err != nil || rep.Damaged() || rep.Repaired || rep.Lost != 0 || rep.URLs != 70 || (clean && len(rep.Findings) > 0) {
			t.Errorf("clean %v: Check = %v, %+v", clean, err, rep)
		}
	}
}

// TestRepairWithoutCommitAfterCrash: a node adds 48 URLs, syncs at 16 and
// is killed; its next run adds 16 other URLs as ids 16..31, whose entries
// are shorter, and closes; then the meta file is lost. A repair walks the
// arena as far as blocks verify. The block of ids 32..47 the first run
// left verified at its old pointer and came back, its references decoded
// against the second run's URLs: id 32 read "http://h.example/00/eeee…/z",
// a URL nobody added. Now the arena past the commit is zeroed when a
// tree reopens after a crash.
func TestRepairWithoutCommitAfterCrash(t *testing.T) {
	dir := t.TempDir()
	url := func(i int, mid string) string {
		if i < 16 {
			return fmt.Sprintf("http://other%d.example/", i)
		}
		return fmt.Sprintf("http://h.example/%02d/%s/%c", i%16, mid, 'x'+i/16)
	}
	tr, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 48 {
		if i == 16 {
			if err := tr.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := tr.AddString(url(i, strings.Repeat("a", 20))); err != nil {
			t.Fatal(err)
		}
	}
	tr.closeFiles() // kill -9: the commit holds 16 URLs
	if tr, err = Open(dir, nil); err != nil {
		t.Fatal(err)
	}
	want := make([]string, 16, 32)
	for i := range 16 {
		want[i] = url(i, "")
	}
	for i := 16; i < 32; i++ {
		want = append(want, url(i, strings.Repeat("e", 20)))
		if id, _, err := tr.AddString(want[i]); err != nil || id != uint32(i) {
			t.Fatalf("Add = %d, %v; want id %d", id, err, i)
		}
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, metaName), make([]byte, metaFileSize), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Check(dir, true); err != nil {
		t.Fatal(err)
	}
	if tr, err = Open(dir, nil); err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for id := range uint32(tr.Len()) {
		got, err := tr.Get(id, nil)
		switch {
		case errors.Is(err, ErrLost):
		case err != nil:
			t.Errorf("Get(%d): %v", id, err)
		case int(id) >= len(want):
			t.Errorf("id %d is back after the repair as %q; the tree held %d URLs", id, got, len(want))
		case string(got) != want[id]:
			t.Errorf("Get(%d) = %q, want %q", id, got, want[id])
		}
	}
}

// TestCheckExtendedFile: a tree file extended with zeros to a sparse
// terabyte. Check read every byte past the committed data for the note on
// what lies there (15 s per 4 GB: hours); now it reads up to where the
// file's data ends, and finds nothing wrong.
func TestCheckExtendedFile(t *testing.T) {
	dir := t.TempDir()
	tr, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		tr.AddString(fmt.Sprintf("http://h.example/%d", i))
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, arenaName), 1<<40); err != nil {
		t.Skipf("no sparse terabyte file here: %v", err)
	}
	type result struct {
		rep *CheckReport
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := Check(dir, false)
		done <- result{rep, err}
	}()
	select {
	case r := <-done:
		if r.err != nil || r.rep.Damaged() || r.rep.URLs != 100 {
			t.Errorf("Check: %v, %+v", r.err, r.rep)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Check of an arena extended to 1 TiB has not returned in 60 s")
	}
}

// TestCheckExtendedFileNoCommit: an arena extended with zeros to a sparse
// terabyte, and the meta file lost. Check guesses the URL count from the
// arena's size, 2^31, and made room for that many up front, 7 GB, to walk
// the few blocks there are ('out of memory' on a small machine); now the
// room grows with the blocks that verify.
func TestCheckExtendedFileNoCommit(t *testing.T) {
	dir := makeTree(t, "a", 100)
	if err := os.Remove(filepath.Join(dir, metaName)); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, arenaName), 1<<40); err != nil {
		t.Skipf("no sparse terabyte file here: %v", err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rep, err := Check(dir, false)
	runtime.ReadMemStats(&after)
	if err != nil || rep.URLs != 96 {
		t.Errorf("Check: %v, %+v; want the 96 URLs of the full blocks", err, rep)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20 {
		t.Errorf("Check allocated %d MB for a tree of 100 URLs", n>>20)
	}
}

// TestRepairDiskFull: a repair on a disk without room for the new tree
// failed, as it must, but left the part it had built in repair.tmp,
// holding what little space the disk had left; now it removes it, and the
// tree's files are as they were.
func TestRepairDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	src := makeTree(t, "a", 20000)
	p := filepath.Join(src, arenaName)
	b, _ := os.ReadFile(p)
	b[headerSize+100] ^= 0x40
	os.WriteFile(p, b, 0o644)
	total := int64(0)
	for _, n := range []string{metaName, nodesName, ptrsName, arenaName} {
		fi, err := os.Stat(filepath.Join(src, n))
		if err != nil {
			t.Fatal(err)
		}
		total += fi.Size()
	}
	disk := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(disk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", disk, "tmpfs", 0, fmt.Sprintf("size=%d", total*3/2)); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	defer unix.Unmount(disk, unix.MNT_DETACH)
	dir := filepath.Join(disk, "urls")
	os.Mkdir(dir, 0o755)
	before := map[string][]byte{}
	for _, n := range []string{metaName, nodesName, ptrsName, arenaName} {
		b, _ := os.ReadFile(filepath.Join(src, n))
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
		before[n] = b
	}
	var st0, st1 unix.Statfs_t
	unix.Statfs(disk, &st0)
	rep, err := Check(dir, true)
	if err == nil || rep.Repaired {
		t.Fatalf("repair on a full disk: %v, %+v; want an error", err, rep)
	}
	if unix.Statfs(disk, &st1); st1.Bfree < st0.Bfree {
		t.Errorf("the failed repair left %d KiB of the disk taken", (st0.Bfree-st1.Bfree)*uint64(st0.Bsize)>>10)
	}
	t.Logf("repair on a full disk: %v", err)
	if _, err := os.Stat(filepath.Join(dir, "repair.tmp")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("repair.tmp left behind: %v", err)
	}
	for n, b := range before {
		if got, _ := os.ReadFile(filepath.Join(dir, n)); string(got) != string(b) {
			t.Errorf("%s changed by the failed repair", n)
		}
	}
}
