package communicator

import (
	"bytes"
	"os"
	"runtime"
	"testing"
)

// TestSpillBigTailStreamed: a damaged tail that is most of a large spill
// file (zeros after a crash of the file system, junk appended) is moved
// aside without being read into memory whole, as it was: a tail of
// gigabytes failed the start for want of memory.
func TestSpillBigTailStreamed(t *testing.T) {
	dir := t.TempDir()
	path := spillPath(dir, 1, 2)
	if err := os.WriteFile(path, spillHeaderBytes(1, 2), 0o644); err != nil {
		t.Fatal(err)
	}
	const tail = 32 << 20
	if err := os.Truncate(path, spillHeader+tail); err != nil { // sparse zeros
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, err := openSpill(dir, 1, 2, 1000)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	s.close()
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > tail/4 {
		t.Errorf("opening a spill file with a %d-byte damaged tail allocated %d bytes", tail, alloc)
	}
	b, err := os.ReadFile(path + ".bad-16")
	if err != nil || len(b) != tail || !bytes.Equal(b[:4096], make([]byte, 4096)) {
		t.Errorf("the tail kept aside: %d bytes, %v; want %d", len(b), err, tail)
	}
	if fi, _ := os.Stat(path); fi.Size() != spillHeader {
		t.Errorf("spill file of %d bytes after the cut; want its header", fi.Size())
	}
}
