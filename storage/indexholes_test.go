package storage

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A url.idx extended by truncate(1) or copied sparse (256 MiB of holes
// here, terabytes possible) had every Scan's check of the whole index read
// the holes through the mapping, entry by entry: 12 s a GiB at a Scan's
// end, the page cache filled with zeros. Now holes above the dense mark
// are passed over unread: the pages stay out of memory (mincore), and an
// entry in the data after them is still judged.
func TestIndexHolesAreNotRead(t *testing.T) {
	const n = 30
	dir, _ := layoutStore(t, smallSegments(), n)
	path := filepath.Join(dir, indexName)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	size := fi.Size() + 256<<20
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
	last := uint64(size-indexHeaderSize)/indexEntrySize - 1
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("not an entry at all"[:indexEntrySize]), entryOffset(last)); err != nil {
		t.Fatal(err)
	}
	if holes, _ := unix.Seek(int(f.Fd()), indexHeaderSize, unix.SEEK_HOLE); holes >= size-indexEntrySize {
		t.Skip("the file system reports no holes")
	}

	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pages := 0
	if err := r.Scan(context.Background(), func(*Page) error { pages++; return nil }); err != nil || pages != n {
		t.Fatalf("scan: %d pages, %v, want %d", pages, err, n)
	}
	st := r.Stats()
	if want := "1 entries fail their CRC-32C or are zeroed, the first of URL id " + strconv.FormatUint(last, 10); len(st.Errors) != 1 || !strings.Contains(st.Errors[0].Error(), want) {
		t.Errorf("the entry after the holes: %v, want %q", st.Errors, want)
	}

	m, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	// The middle of the holes: read-ahead around the data may touch
	// their edges.
	lo, hi := fi.Size()+16<<20, size-16<<20
	vec := make([]byte, (hi-lo+4095)/4096)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[lo])), uintptr(hi-lo), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Skipf("mincore: %v", e)
	}
	resident := 0
	for _, v := range vec {
		resident += int(v & 1)
	}
	if resident > 0 {
		t.Errorf("the check of the index read %d of %d pages of its holes into memory", resident, len(vec))
	}
}
