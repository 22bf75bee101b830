package communicator

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
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
	if err := os.Truncate(path, spillHeader+tail-1); err != nil { // sparse zeros
		t.Fatal(err)
	}
	// Junk at the end: zeros alone are not kept (TestSpillZerosNotKept).
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{0xff}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, err := openSpill(dir, 1, 2, 1000, 0)
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

// TestSpillTailCutFails: when the damaged tail cannot be moved aside (a
// full disk; here a file size limit) the tail stayed in the file, but the
// endpoint took the file to end where the tail began: items it then
// appended landed after the tail while it read at the tail, so they were
// skipped as damage and lost. Now the tail stays in place and is skipped,
// and what is appended after it is delivered.
func TestSpillTailCutFails(t *testing.T) {
	dir := t.TempDir()
	path := spillPath(dir, 1, 2)
	junk := bytes.Repeat([]byte("junk after a crash "), 4096) // 76 KB
	if err := os.WriteFile(path, append(spillHeaderBytes(1, 2), junk...), 0o644); err != nil {
		t.Fatal(err)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	small := lim
	small.Cur = 4096 // the copy of the tail fails (EFBIG; Go ignores SIGXFSZ)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &small); err != nil {
		t.Skipf("cannot lower the file size limit: %v", err)
	}
	s, err := openSpill(dir, 1, 2, 1000, 0)
	syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.errs) != 1 || !strings.Contains(s.errs[0], "stay in the file, skipped") {
		t.Errorf("errors %q; want one saying the tail stays in the file", s.errs)
	}
	if _, err := os.Stat(path + ".bad-16"); err == nil {
		t.Error("a part of the tail left in .bad-16 as if it were all of it")
	}
	// Items beyond what memory keeps are read back from the file in
	// this run, and all of them in the next.
	s.mem.limit = 100
	var want []string
	for k := range 20 {
		u := testURL(1, 2, k)
		want = append(want, u)
		if err := s.append(uint64(k), []byte(u)); err != nil {
			t.Fatal(err)
		}
	}
	readAll := func(run string) {
		var got []string
		for i := 0; s.unread(); i++ {
			if i > 100 {
				t.Fatalf("%s: reader does not advance", run)
			}
			var q queue
			if err := s.readChunk(&q, 4096); err != nil {
				t.Errorf("%s: %v", run, err)
			}
			for _, it := range q.items[q.head:] {
				got = append(got, string(q.bytesOf(it)))
			}
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: read back %d items, want the %d appended: %q", run, len(got), len(want), got)
		}
	}
	readAll("this run")
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	if s, err = openSpill(dir, 1, 2, 1000, 0); err != nil {
		t.Fatal(err)
	}
	defer s.close()
	readAll("the next run")
}

// TestSpillSyncFailureSticks: after an fsync of a spill file failed (here
// its descriptor closed under it, as a failing device gives EIO), the next
// Sync with nothing new to write returned nil, so the caller took the
// items spilled before for durable: the timer's own fsync failing (only
// logged) made the application's next Sync say all was well. Now every
// later fsync of the file fails with the first error.
func TestSpillSyncFailureSticks(t *testing.T) {
	s, err := openSpill(t.TempDir(), 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.append(1, []byte("http://a.example/"))
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
	s.f.Close()
	if err := s.sync(); err == nil { // the timer's upkeep
		t.Fatal("fsync on a closed descriptor succeeded")
	}
	for i := range 3 {
		if err := s.syncItems(); err == nil || !strings.Contains(err.Error(), "fsync failed") { // the caller's Sync
			t.Fatalf("Sync %d after a failed fsync: %v; want the failure again", i, err)
		}
	}
}

// TestSpillZerosNotKept: a spill file extended with zeros (truncate -s, a
// sparse file, or a crash's zero-filled tail) had the start check every
// offset of the zeros as a record (about 90 s a gigabyte: hours for a
// sparse 64 GiB) and then copy them all to <file>.bad-<offset>, writing
// them out; now runs of zeros are passed by the word and their holes
// unread, a tail of zeros is cut off without a copy (said so), and the
// records around them are delivered.
func TestSpillZerosNotKept(t *testing.T) {
	items := func(s *spill, from, n int) {
		for k := from; k < from+n; k++ {
			if err := s.append(uint64(k), []byte(testURL(1, 2, k))); err != nil {
				t.Fatal(err)
			}
		}
	}
	extend := func(path string, by int64) {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, fi.Size()+by); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name      string
		junk      string // after the items, before the zeros
		zeros     int64
		after     int // items appended after the zeros
		kept, say string
	}{
		{name: "tail", zeros: 64 << 30, say: "were all zeros"},
		{name: "junk then zeros", junk: "junk of a torn write", zeros: 1 << 30, kept: "junk of a torn write", say: "zero bytes after them cut off"},
		{name: "middle", zeros: 4 << 30, after: 30, say: "skipped"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := spillPath(dir, 1, 2)
			s, err := openSpill(dir, 1, 2, 1000, 0)
			if err != nil {
				t.Fatal(err)
			}
			items(s, 0, 20)
			if err := s.close(); err != nil {
				t.Fatal(err)
			}
			if c.junk != "" {
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.WriteString(c.junk)
				f.Close()
			}
			extend(path, c.zeros)
			if c.after > 0 {
				// A record written after the zeros (the file reopened
				// by an endpoint of a build that did not cut them).
				fi, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				w := spill{version: spillVersion, end: fi.Size()} // each record's checksum names its offset
				w.appendRecord(append([]byte{recItem, 0}, "http://after.example/"...))
				for range c.after - 1 {
					w.appendRecord(append([]byte{recItem, 0}, "http://after.example/"...))
				}
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.Write(w.buf)
				f.Close()
			}
			err = within(t, "opening the spill file", func() error {
				var err error
				s, err = openSpill(dir, 1, 2, 1000, 0)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			if want := int64(20 + c.after); s.unreadItems != want {
				t.Errorf("%d items to deliver, want %d", s.unreadItems, want)
			}
			if len(s.errs) != 1 || !strings.Contains(s.errs[0], c.say) {
				t.Errorf("open said %q; want one line saying %q", s.errs, c.say)
			}
			ents, _ := os.ReadDir(dir)
			var bad []string
			for _, e := range ents {
				if strings.Contains(e.Name(), ".bad-") {
					b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
					bad = append(bad, string(b))
				}
			}
			if want := []string{c.kept}; c.kept == "" && len(bad) > 0 || c.kept != "" && strings.Join(bad, "|") != strings.Join(want, "|") {
				t.Errorf("kept aside %d files (%d bytes in the first); want %q alone", len(bad), len(strings.Join(bad, "")), c.kept)
			}
			if fi, _ := os.Stat(path); c.after == 0 && fi.Size() > 4096 {
				t.Errorf("spill file of %d bytes after the open", fi.Size())
			}
			err = within(t, "CheckSpill", func() error { _, err := CheckSpill(dir); return err })
			if err != nil {
				t.Error(err)
			}
		})
	}
}

// TestSpillUnwrittenNotDamage: a start creates each peer's spill file and
// writes its header without an fsync (nothing is in it yet), so a crash
// soon after may leave the file empty, or zeros, or part of its header.
// The next start took that for a foreign header: moved to .bad-0 "nothing
// in it delivered", a .bad file more per crash, and kspider check called
// it damage (exit 1). Now such a file holds nothing and is made anew
// without a word, and check finds nothing wrong.
func TestSpillUnwrittenNotDamage(t *testing.T) {
	for name, content := range map[string][]byte{
		"empty":       nil,
		"part header": spillHeaderBytes(1, 2)[:7],
		"zeros":       make([]byte, spillHeader),
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := spillPath(dir, 1, 2)
			if err := os.WriteFile(path, content, 0o644); err != nil {
				t.Fatal(err)
			}
			rep, err := CheckSpill(dir)
			if err != nil || len(rep.Findings) != 0 {
				t.Errorf("CheckSpill: %v, %+v; want nothing found", err, rep)
			}
			s, err := openSpill(dir, 1, 2, 1000, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.errs) > 0 {
				t.Errorf("open said %q; want nothing", s.errs)
			}
			if err := s.append(1, []byte("http://a.example/")); err != nil {
				t.Fatal(err)
			}
			if err := s.close(); err != nil {
				t.Fatal(err)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Errorf("%d files in the directory; want the spill file alone", len(ents))
			}
			if s, err = openSpill(dir, 1, 2, 1000, 0); err != nil || len(s.errs) > 0 || s.unreadItems != 1 {
				t.Fatalf("reopened: %v, %q, %d items; want the one appended", err, s.errs, s.unreadItems)
			}
			s.close()
		})
	}
}

// TestSpillDamagedUnderReader: a record damaged after the open checked the
// file (a bad sector, a stray write) made the reader give up on the rest
// of the file: every item after it, gigabytes for a peer down for long,
// lost for one flipped bit. Now the reader skips to the next intact
// record, as the open does, and counts the stretch with the open's.
func TestSpillDamagedUnderReader(t *testing.T) {
	dir := t.TempDir()
	s, err := openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	var offs []int64
	for k := range n {
		offs = append(offs, s.end)
		s.append(uint64(k), []byte(testURL(1, 2, k)))
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	if s, err = openSpill(dir, 1, 2, 1000, 0); err != nil { // an earlier run's items: read from the file
		t.Fatal(err)
	}
	defer s.close()
	f, err := os.OpenFile(s.path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{1000, 1500} {
		f.WriteAt([]byte{0xff}, offs[k]+recHead+5)
	}
	f.Close()
	var got []string
	var errs []string
	for i := 0; s.unread(); i++ {
		if i > n {
			t.Fatal("reader does not advance")
		}
		var q queue
		if err := s.readChunk(&q, 4096); err != nil {
			errs = append(errs, err.Error())
		}
		for _, it := range q.items[q.head:] {
			got = append(got, string(q.bytesOf(it)))
		}
	}
	if len(got) != n-2 || got[999] != testURL(1, 2, 999) || got[1000] != testURL(1, 2, 1001) || got[n-3] != testURL(1, 2, n-1) {
		t.Errorf("read %d items; want the %d but items 1000 and 1500", len(got), n-2)
	}
	if len(errs) != 2 || !strings.Contains(errs[0], fmt.Sprintf("offset %d", offs[1000])) || !strings.Contains(errs[1], fmt.Sprintf("next intact record at offset %d", offs[1501])) {
		t.Errorf("errors %q; want two naming the damaged records and where reading went on", errs)
	}
	if s.skippedRegions != 2 || s.unreadItems != 0 {
		t.Errorf("%d damaged stretches counted, %d items still unread; want 2, 0", s.skippedRegions, s.unreadItems)
	}
}

// TestSpillTailDirSynced: a damaged tail's copy (<file>.bad-<off>) was
// fsynced but not its directory before the spill file was cut, so a power
// cut could keep the cut and lose the copy's name, the tail gone with it.
// Now the directory is fsynced first, and if that fails the tail stays in
// the file and the copy is not left behind.
func TestSpillTailDirSynced(t *testing.T) {
	dir := t.TempDir()
	path := spillPath(dir, 1, 2)
	whole := append(spillHeaderBytes(1, 2), bytes.Repeat([]byte("junk after a crash "), 100)...)
	size := int64(len(whole))
	open := func() *spill {
		t.Helper()
		if err := os.WriteFile(path, whole, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return &spill{path: path, f: f}
	}
	fileSize := func() int64 {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}

	s := open()
	synced := false
	s.tailDirSync = func(d string) error {
		if d != dir {
			t.Errorf("fsynced directory %s, want %s", d, dir)
		}
		if n := fileSize(); n != size {
			t.Errorf("the spill file was cut to %d bytes before the directory of its tail's copy was fsynced", n)
		}
		synced = true
		return syncDir(d)
	}
	bad, err := s.cutTail(spillHeader, size)
	if err != nil {
		t.Fatal(err)
	}
	if !synced {
		t.Error("the tail kept aside and the spill file cut without an fsync of the directory")
	}
	if got, err := os.ReadFile(bad); err != nil || !bytes.Equal(got, whole[spillHeader:]) {
		t.Errorf("%s: %d bytes, %v; want the %d bytes of the tail", bad, len(got), err, size-spillHeader)
	}
	if n := fileSize(); n != spillHeader {
		t.Errorf("spill file of %d bytes after the cut, want %d", n, spillHeader)
	}

	s = open()
	s.tailDirSync = func(string) error { return syscall.EIO }
	bad, err = s.cutTail(spillHeader, size)
	if err == nil || !strings.Contains(err.Error(), "directory") {
		t.Fatalf("cutTail with the directory's fsync failing: %q, %v; want an error saying so", bad, err)
	}
	if n := fileSize(); n != size {
		t.Errorf("spill file cut to %d bytes though the directory holding the copy of its tail was not fsynced", n)
	}
	if _, err := os.Stat(path + ".bad-16.1"); err == nil {
		t.Error("the copy whose name may not last was left behind: the next start keeps the tail aside again")
	}
}

// TestSpillLengthDamagedUnderReader: a record whose length field was
// damaged after the open (a stray write: a length longer than any record)
// was taken by the reader for one cut by the end of its read and read
// again at the next call, from its start; finding nothing whole there, it
// gave up on everything up to the end of the file ('no whole record at
// offset ...; N bytes not delivered'): 999 items here, gigabytes for a
// peer down for long. Now such a length is damage the reader skips to the
// next intact record, as any other.
func TestSpillLengthDamagedUnderReader(t *testing.T) {
	dir := t.TempDir()
	s, err := openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	var offs []int64
	for k := range n {
		offs = append(offs, s.end)
		s.append(uint64(k), []byte(testURL(1, 2, k)))
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	if s, err = openSpill(dir, 1, 2, 1000, 0); err != nil { // an earlier run's items: read from the file
		t.Fatal(err)
	}
	defer s.close()
	f, err := os.OpenFile(s.path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0x7f}, offs[1000]) // the length's top byte
	f.Close()
	got := 0
	var errs []string
	for i := 0; s.unread(); i++ {
		if i > n {
			t.Fatal("reader does not advance")
		}
		var q queue
		if err := s.readChunk(&q, 4096); err != nil {
			errs = append(errs, err.Error())
		}
		got += q.len()
	}
	if got != n-1 {
		t.Errorf("read %d items; want the %d but item 1000 (errors %q)", got, n-1, errs)
	}
	if len(errs) != 1 || !strings.Contains(errs[0], fmt.Sprintf("offset %d", offs[1000])) || !strings.Contains(errs[0], fmt.Sprintf("next intact record at offset %d", offs[1001])) {
		t.Errorf("errors %q; want one naming the damaged record and where reading went on", errs)
	}
}

// TestSpillAppendAfterShrink: a spill file cut short under the endpoint
// (a truncate by something else) loses what lay past the cut, said with
// the sizes; but the file was appended to (O_APPEND then) at its new end, and
// with the offsets still counted from the old one every item spilled for
// the rest of the run was read as damage ('bad record length ... damaged
// under the reader') and never delivered: 0 of 40. Now the reader takes
// the offsets from the file as it is: the 40 are delivered, and a restart
// finds them intact after the one cut record.
func TestSpillAppendAfterShrink(t *testing.T) {
	dir := t.TempDir()
	s, err := openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	for k := range 40 {
		s.append(uint64(k), []byte(testURL(1, 2, k)))
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	if s, err = openSpill(dir, 1, 2, 1000, 0); err != nil { // an earlier run's items: read from the file
		t.Fatal(err)
	}
	defer s.close()
	seen := map[string]int{}
	var errs []error
	read := func() {
		t.Helper()
		for i := 0; s.unread(); i++ {
			if i > 100 {
				t.Fatal("reader does not advance")
			}
			var q queue
			if err := s.readChunk(&q, 500); err != nil {
				errs = append(errs, err)
			}
			for _, it := range q.items[q.head:] {
				seen[string(q.bytesOf(it))]++
			}
		}
	}
	var q queue
	if err := s.readChunk(&q, 500); err != nil {
		t.Fatal(err)
	}
	fileSize := s.flushed
	cut := s.readOff + 30 // inside the next record
	if err := os.Truncate(s.path, cut); err != nil {
		t.Fatal(err)
	}
	read()
	before := len(seen)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), fmt.Sprintf("shrank under the endpoint from %d to %d bytes", fileSize, cut)) {
		t.Fatalf("errors after the cut at %d: %v; want one saying the file shrank to %d bytes", cut, errs, cut)
	}
	// As a peer down for long: read back from the file, not from memory.
	s.mem.limit = 1
	for k := 100; k < 140; k++ {
		s.append(uint64(k), []byte(testURL(1, 2, k)))
	}
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
	read()
	for k := 100; k < 140; k++ {
		if c := seen[testURL(1, 2, k)]; c != 1 {
			t.Errorf("item %d spilled after the cut read %d times, want 1 (errors %v)", k, c, errs)
		}
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	if s, err = openSpill(dir, 1, 2, 1000, 0); err != nil {
		t.Fatal(err)
	}
	// Nothing acknowledged: those read before the cut, and the 40.
	if want := int64(q.len() + before + 40); s.unreadItems != want {
		t.Errorf("reopened: %d items to deliver, want %d: the 40 spilled after the cut intact (errors %q)", s.unreadItems, want, s.errs)
	}
}
