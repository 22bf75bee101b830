package scheduler

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// checkFixture builds a closed scheduler of 300 URLs on 11 hosts in a new
// directory under base, and returns it with the committed byte ranges of
// each file (where any change is damage Check must find).
func checkFixture(t testing.TB, base, name string) (string, map[string][][2]int64) {
	t.Helper()
	clk := newFakeClock(1, time.Hour, 0)
	dir := filepath.Join(base, name)
	s := mustOpen(t, dir, basicConfig(clk))
	for id := range uint32(300) {
		if _, err := s.Add(id, fmt.Sprintf("host%d.example", id%11), 1); err != nil {
			t.Fatal(err)
		}
	}
	nHosts, namesLen := int64(len(s.hosts)), int64(s.namesLen)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, map[string][][2]int64{
		metaName:   {{0, headerSize}, {512, 512 + metaSlotSize}, {1024, 1024 + metaSlotSize}},
		statesName: {{0, headerSize + 300*recordSize}},
		hostsName:  {{0, headerSize + nHosts*hostRecSize}},
		namesName:  {{0, headerSize + namesLen}},
	}
}

func snapshot(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, n := range []string{metaName, statesName, hostsName, namesName} {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		out[n] = b
	}
	return out
}

func TestCheckClean(t *testing.T) {
	dir, _ := checkFixture(t, t.TempDir(), "clean")
	for _, repair := range []bool{false, true} {
		rep, err := Check(dir, repair)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Findings) != 0 || rep.URLs != 300 || rep.Hosts != 11 || !rep.Clean || rep.Repaired {
			t.Fatalf("clean scheduler: %+v", rep)
		}
	}
	if _, err := Check(t.TempDir(), false); !errors.Is(err, ErrNoScheduler) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("empty directory: %v", err)
	}
}

// TestCheckFaults injects bit flips, zeroed ranges (a few bytes, and whole
// records), swapped blocks of records and truncations into the
// committed part of every file, and junk appended at the end: Check must
// change nothing, report damage naming the file for every fault in
// committed data, and report damage whenever Open refuses the directory.
func TestCheckFaults(t *testing.T) {
	base := t.TempDir()
	clean, ranges := checkFixture(t, base, "clean")
	orig := snapshot(t, clean)
	rng := rand.New(rand.NewPCG(12, 34))
	type fault struct {
		kind, file string
		committed  bool
		apply      func(b []byte) []byte
	}
	var faults []fault
	// Whole records zeroed: a record size per file, so the zeros cover
	// one to four records exactly (a valid record is never all zero).
	recSize := map[string]int64{metaName: metaSlotSize, statesName: recordSize, hostsName: hostRecSize, namesName: 1}
	for file, rs := range ranges {
		pick := func() int64 {
			r := rs[rng.IntN(len(rs))]
			return r[0] + rng.Int64N(r[1]-r[0])
		}
		for range 12 {
			off, bit := pick(), byte(1)<<rng.IntN(8)
			faults = append(faults, fault{"bit flip", file, true, func(b []byte) []byte { b[off] ^= bit; return b }})
			off, n := pick(), int64(1+rng.IntN(4))
			faults = append(faults, fault{"zeroed range", file, true, func(b []byte) []byte {
				clear(b[off:min(off+n, int64(len(b)))])
				return b
			}})
			size := recSize[file]
			off, n = pick()/size*size, size*int64(1+rng.IntN(4))
			faults = append(faults, fault{"zeroed records", file, true, func(b []byte) []byte {
				clear(b[off:min(off+n, int64(len(b)))])
				return b
			}})
			end := rs[len(rs)-1][1]
			cut := rng.Int64N(end)
			faults = append(faults, fault{"truncation", file, true, func(b []byte) []byte { return b[:cut] }})
			// Two blocks of whole records swapped, one inside the
			// committed part, the other anywhere in the file.
			off, n = pick()/size*size, size*int64(1+rng.IntN(2))
			other := rng.Int64N(rs[len(rs)-1][1]) / size * size
			faults = append(faults, fault{"swapped blocks", file, true, func(b []byte) []byte {
				m := min(n, int64(len(b))-off, int64(len(b))-other, max(off, other)-min(off, other))
				x := bytes.Clone(b[off : off+m])
				copy(b[off:], b[other:other+m])
				copy(b[other:], x)
				return b
			}})
			junk := make([]byte, 1+rng.IntN(200))
			for i := range junk {
				junk[i] = byte(rng.Uint32())
			}
			faults = append(faults, fault{"appended junk", file, false, func(b []byte) []byte { return append(b, junk...) }})
		}
	}
	for i, f := range faults {
		dir := filepath.Join(base, fmt.Sprint(i))
		os.MkdirAll(dir, 0o755)
		for n, b := range orig {
			if n == f.file {
				b = f.apply(bytes.Clone(b))
				if bytes.Equal(b, orig[n]) {
					continue // zeroed bytes that were zero: no fault
				}
			}
			if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, f.file)); err != nil {
			continue
		}
		before := snapshot(t, dir)
		rep, err := Check(dir, false)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s in %s: Check: %v", f.kind, f.file, err)
		}
		if after := snapshot(t, dir); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("%s in %s: Check changed the files", f.kind, f.file)
		}
		named := false
		for _, x := range rep.Findings {
			named = named || (x.Damage && strings.Contains(x.File, f.file))
		}
		if f.committed && (!rep.Damaged() || !named) {
			t.Errorf("%s in committed %s: not reported as damage to it: %v", f.kind, f.file, rep.Findings)
		}
		s, oerr := Open(dir, basicConfig(newFakeClock(1, time.Hour, 0)))
		if oerr == nil {
			s.Close()
		} else if !rep.Damaged() {
			t.Errorf("%s in %s: Open fails (%v) but Check finds no damage: %v", f.kind, f.file, oerr, rep.Findings)
		}
		if oerr == nil || !rep.Damaged() {
			continue
		}
		// Repair: afterwards Check passes (or finds nothing left), Open
		// works, and a salvage keeps every URL record the fault missed.
		damaged := before[statesName]
		rrep, err := Check(dir, true)
		if err != nil || !rrep.Repaired {
			t.Fatalf("%s in %s: repair: %v %+v", f.kind, f.file, err, rrep)
		}
		if after, err := Check(dir, false); err == nil && after.Damaged() {
			t.Errorf("%s in %s: after repair: %v", f.kind, f.file, after.Findings)
		}
		s = mustOpen(t, dir, basicConfig(newFakeClock(1, time.Hour, 0)))
		if rrep.Salvaged > 0 {
			for id := range 300 {
				o := headerSize + 8*id
				if o+8 <= len(damaged) && bytes.Equal(damaged[o:o+8], orig[statesName][o:o+8]) && s.URL(uint32(id)).State != InList {
					t.Errorf("%s in %s: intact id %d lost by the repair", f.kind, f.file, id)
				}
			}
		}
		s.Close()
	}
}

// TestCheckLeftover: a host record past the commit that a crash cut short
// is a note, not damage, and Open still opens the directory.
func TestCheckLeftover(t *testing.T) {
	dir, ranges := checkFixture(t, t.TempDir(), "leftover")
	path := filepath.Join(dir, hostsName)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(bytes.Repeat([]byte("half a host record "), 4)[:hostRecSize], ranges[hostsName][0][1])
	f.Close()
	rep, err := Check(dir, false)
	if err != nil || rep.Damaged() || len(rep.Findings) != 1 || rep.Findings[0].File != path {
		t.Fatalf("leftover: %v %+v", err, rep)
	}
	s := mustOpen(t, dir, basicConfig(newFakeClock(1, time.Hour, 0)))
	s.Close()
}

// TestCheckRepair: damage confined to URL records costs those records
// only: they become gaps (the damaged file copied into damaged/<time>/),
// and everything else is kept. Damage anywhere else moves the files into
// damaged/<time>/ intact, and the next Open starts an empty scheduler.
func TestCheckRepair(t *testing.T) {
	dir, _ := checkFixture(t, t.TempDir(), "repair")
	orig := snapshot(t, dir)
	b := bytes.Clone(orig[statesName])
	b[headerSize+8*17+3] ^= 0x10
	clear(b[headerSize+8*40 : headerSize+8*43])
	os.WriteFile(filepath.Join(dir, statesName), b, 0o644)
	rep, err := Check(dir, true)
	if err != nil || !rep.Damaged() || !rep.Repaired || rep.Salvaged != 4 {
		t.Fatalf("repair: %v %+v", err, rep)
	}
	if got, err := os.ReadFile(filepath.Join(rep.Quarantine, statesName)); err != nil || !bytes.Equal(got, b) {
		t.Errorf("damaged states file not kept in %s: %v", rep.Quarantine, err)
	}
	if rep, err := Check(dir, false); err != nil || len(rep.Findings) != 0 {
		t.Fatalf("after repair: %v %v", err, rep.Findings)
	}
	s := mustOpen(t, dir, basicConfig(newFakeClock(1, time.Hour, 0)))
	for id := range uint32(300) {
		lost := id == 17 || id >= 40 && id < 43
		if u := s.URL(id); lost != (u.State == Absent) {
			t.Errorf("id %d after repair: %+v", id, u)
		}
	}
	s.Close()

	dir, _ = checkFixture(t, t.TempDir(), "repair-hosts")
	orig = snapshot(t, dir)
	b = bytes.Clone(orig[hostsName])
	b[headerSize+64*3+9] ^= 0x10
	os.WriteFile(filepath.Join(dir, hostsName), b, 0o644)
	orig[hostsName] = b
	rep, err = Check(dir, true)
	if err != nil || !rep.Damaged() || !rep.Repaired || rep.Salvaged != 0 {
		t.Fatalf("repair: %v %+v", err, rep)
	}
	for n, want := range orig {
		got, err := os.ReadFile(filepath.Join(rep.Quarantine, n))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s not moved intact into %s: %v", n, rep.Quarantine, err)
		}
	}
	if _, err := Check(dir, false); !errors.Is(err, ErrNoScheduler) {
		t.Errorf("after repair: %v", err)
	}
	s = mustOpen(t, dir, basicConfig(newFakeClock(1, time.Hour, 0)))
	if s.Len() != 0 {
		t.Errorf("after repair the scheduler holds %d URLs", s.Len())
	}
	s.Close()
}

// FuzzCheck writes data the fuzzer chooses over one of the files of a
// scheduler: Check must not panic, must change nothing, must report damage
// naming the file for any change inside the committed part, and whenever
// Open refuses the directory.
func FuzzCheck(f *testing.F) {
	clean, ranges := checkFixture(f, f.TempDir(), "clean")
	orig := snapshot(f, clean)
	files := []string{metaName, statesName, hostsName, namesName}
	f.Add(uint8(1), uint32(64+8*5), []byte{0xff})
	f.Add(uint8(2), uint32(64+3), []byte{0, 0, 0})
	f.Add(uint8(0), uint32(1024+8), []byte{7})
	f.Add(uint8(1), uint32(64+8*7), make([]byte, 16)) // two whole records zeroed
	f.Add(uint8(0), uint32(512), make([]byte, 64))    // a commit slot zeroed
	f.Fuzz(func(t *testing.T, which uint8, off uint32, data []byte) {
		dir := t.TempDir()
		file := files[int(which)%len(files)]
		for n, b := range orig {
			if n == file {
				b = bytes.Clone(b)
				o := int(off) % (len(b) + 1)
				b = append(b[:o], append(data, b[min(o+len(data), len(b)):]...)...)
			}
			if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		before := snapshot(t, dir)
		rep, err := Check(dir, false)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(snapshot(t, dir)) != fmt.Sprint(before) {
			t.Fatal("Check changed the files")
		}
		changed := false
		for _, r := range ranges[file] {
			for o := r[0]; o < r[1]; o++ {
				changed = changed || o >= int64(len(before[file])) || before[file][o] != orig[file][o]
			}
		}
		named := false
		for _, x := range rep.Findings {
			named = named || x.Damage && strings.Contains(x.File, file)
		}
		if changed && !named {
			t.Fatalf("committed bytes of %s changed, Check found no damage to it: %v", file, rep.Findings)
		}
		s, oerr := Open(dir, basicConfig(newFakeClock(1, time.Hour, 0)))
		if oerr == nil {
			s.Close()
		} else if !rep.Damaged() {
			t.Fatalf("Open fails (%v) but Check finds no damage: %v", oerr, rep.Findings)
		}
	})
}

// TestCheckRepairLocked: a repair never moves the files of a scheduler
// that is open; a read-only check still runs.
func TestCheckRepairLocked(t *testing.T) {
	dir, _ := checkFixture(t, t.TempDir(), "locked")
	s := mustOpen(t, dir, basicConfig(newFakeClock(1, time.Hour, 0)))
	defer s.Close()
	if _, err := Check(dir, true); !errors.Is(err, ErrLocked) {
		t.Fatalf("repair of an open scheduler: %v", err)
	}
	if rep, err := Check(dir, false); err != nil || rep.Damaged() {
		t.Fatalf("check of an open scheduler: %v %+v", err, rep)
	}
}

// TestCheckExtendedFiles: a scheduler file extended with zeros to a sparse
// terabyte (which Open takes) made Check fail ("mmap: cannot allocate
// memory": it mapped the whole file private and writable), and with it
// kspider check and its repair; now Check maps as far as the data reaches
// and finds nothing wrong.
func TestCheckExtendedFiles(t *testing.T) {
	for _, name := range []string{statesName, hostsName, namesName} {
		clk := newFakeClock(1, time.Hour, 0)
		dir := t.TempDir()
		s := mustOpen(t, dir, basicConfig(clk))
		for id := range uint32(20) {
			if id == 10 {
				if err := s.Sync(); err != nil {
					t.Fatal(err)
				}
			}
			s.Add(id, fmt.Sprintf("h%d.example", id%3), 0)
		}
		s.closeFiles() // kill -9: ids 10..19 are past the commit
		if err := os.Truncate(filepath.Join(dir, name), 1<<40); err != nil {
			t.Skipf("no sparse terabyte file here: %v", err)
		}
		for _, repair := range []bool{false, true} {
			rep, err := Check(dir, repair)
			if err != nil || rep.Damaged() || rep.URLs != 20 || rep.Hosts != 3 {
				t.Errorf("%s extended to 1 TiB: Check(repair %v) = %v, %+v; want no damage, 20 URLs, 3 hosts", name, repair, err, rep)
			}
		}
	}
}

// TestCheckExtendedFilesMetaHeader: with sched.meta's header damaged (a
// flipped bit in its ID), Check mapped the other files whole, so one
// extended with zeros to a sparse terabyte still failed with "mmap: cannot
// allocate memory"; now it maps them as far as their data or the rebuilt
// commit reaches, finds the header alone damaged, and the repair rewrites it.
func TestCheckExtendedFilesMetaHeader(t *testing.T) {
	for _, name := range []string{statesName, hostsName, namesName} {
		clk := newFakeClock(1, time.Hour, 0)
		dir := t.TempDir()
		s := mustOpen(t, dir, basicConfig(clk))
		for id := range uint32(20) {
			if id == 10 {
				if err := s.Sync(); err != nil {
					t.Fatal(err)
				}
			}
			s.Add(id, fmt.Sprintf("h%d.example", id%3), 0)
		}
		s.closeFiles() // kill -9: ids 10..19 are past the commit
		if err := os.Truncate(filepath.Join(dir, name), 1<<40); err != nil {
			t.Skipf("no sparse terabyte file here: %v", err)
		}
		meta := filepath.Join(dir, metaName)
		b, err := os.ReadFile(meta)
		if err != nil {
			t.Fatal(err)
		}
		b[14] ^= 0x10 // in the ID: the magic stays intact
		if err := os.WriteFile(meta, b, 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := Check(dir, false)
		if err != nil || !onlyIn(rep.Findings, meta) || rep.URLs != 20 || rep.Hosts != 3 {
			t.Fatalf("%s extended to 1 TiB, meta header damaged: Check = %v, %+v; want the meta header alone damaged, 20 URLs, 3 hosts", name, err, rep)
		}
		if rep, err := Check(dir, true); err != nil || rep.HeadersRewritten != 1 {
			t.Fatalf("%s: repair = %v, %+v; want the meta header rewritten", name, err, rep)
		}
		if rep, err := Check(dir, false); err != nil || rep.Damaged() || rep.URLs != 20 {
			t.Fatalf("%s: after the repair: %v, %+v", name, err, rep)
		}
	}
}

// TestSalvageExtendedStates: a repair of damaged URL records in a states
// file extended with zeros (sparse) copied the whole file, zeros and all,
// into damaged/ (a terabyte written for a sparse terabyte, until the disk
// was full) and read every record the file could hold; now it copies and
// reads as far as the data reaches, the copy keeping the file's size as a
// hole.
func TestSalvageExtendedStates(t *testing.T) {
	clk := newFakeClock(1, time.Hour, 0)
	dir := t.TempDir()
	s := mustOpen(t, dir, basicConfig(clk))
	for id := range uint32(20) {
		s.Add(id, fmt.Sprintf("h%d.example", id%3), 0)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, statesName)
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0x55}, headerSize+3*recordSize+2); err != nil {
		t.Fatal(err)
	}
	const size = 1 << 30
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rep, err := Check(dir, true)
	if err != nil || !rep.Repaired || rep.Salvaged != 1 {
		t.Fatalf("repair: %v, %+v; want 1 record salvaged", err, rep)
	}
	var st unix.Stat_t
	kept := filepath.Join(rep.Quarantine, statesName)
	if err := unix.Stat(kept, &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != size || st.Blocks*512 > 1<<20 {
		t.Errorf("the copy kept in %s: %d bytes, %d allocated; want %d, a few KiB", rep.Quarantine, st.Size, st.Blocks*512, size)
	}
	s = mustOpen(t, dir, basicConfig(clk))
	defer s.Close()
	if s.Len() != 20 || s.URL(3) != (URLInfo{}) || s.URL(4).State != InList {
		t.Errorf("after the repair: %d URLs, URL 3 %+v, URL 4 %+v", s.Len(), s.URL(3), s.URL(4))
	}
}

// TestCheckMetaStray: a byte changed in sched.meta outside its header and
// commit slots (a sector of it overwritten), or the file grown or cut
// short after its second slot, was said
// ok: nothing reads those bytes, so Open takes the file, but the file is
// not as written. Now Check reports it, Open still opens the scheduler,
// and a repair writes the meta file anew from its valid commit.
func TestCheckMetaStray(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 68))
	for i := range 30 {
		dir := idFixture(t, [16]byte{9})
		path := filepath.Join(dir, metaName)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var off int
		switch i {
		case 0:
			off = len(b)
			b = append(b, 'x')
		case 1:
			off = 1088 + rng.IntN(len(b)-1088)
			b = b[:off]
		default:
			for off = rng.IntN(len(b)); off < headerSize || off >= 512 && off < 576 || off >= 1024 && off < 1088; off = rng.IntN(len(b)) {
			}
			b[off] ^= byte(1 + rng.IntN(255))
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := Check(dir, false)
		if err != nil || !rep.Damaged() || !strings.Contains(fmt.Sprint(rep.Findings), path) {
			t.Fatalf("sched.meta changed at offset %d: %v, %+v; want damage naming it", off, err, rep)
		}
		s, err := Open(dir, idConfig([16]byte{9}))
		if err != nil {
			t.Fatalf("Open of the scheduler with sched.meta changed at offset %d: %v", off, err)
		}
		s.Close()
		if rep, err := Check(dir, true); err != nil || !rep.MetaRewritten {
			t.Fatalf("repair: %v, %+v", err, rep)
		}
		if rep, err := Check(dir, false); err != nil || rep.Damaged() || rep.URLs != 30 {
			t.Fatalf("after the repair: %v, %+v", err, rep)
		}
	}
}

// TestCheckFindingsBounded: Check listed every damaged record, a finding
// of about 150 bytes each, so a states file with junk written over it (a
// misdirected write, a file of random bytes: 100,000 records here) cost
// many times its size in memory, and kspider check printed a line for
// each. Now the first findingsListed of a file are listed, the rest
// summed up in one damage finding naming where they start; the repair
// still mends them all.
func TestCheckFindingsBounded(t *testing.T) {
	dir, _ := checkFixture(t, t.TempDir(), "junk")
	const junk = 100000
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, junk*recordSize)
	for i := range b {
		b[i] = byte(r.Uint32()) | 1 // never a zero record
	}
	f, err := os.OpenFile(filepath.Join(dir, statesName), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rep, err := Check(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	summed := 0
	for _, f := range rep.Findings {
		if strings.Contains(f.What, "more problems") && f.Damage && f.File == filepath.Join(dir, statesName) {
			summed++
			if want := fmt.Sprintf("%d more problems", junk-findingsListed); !strings.Contains(f.What, want) {
				t.Errorf("summary %q; want %q", f, want)
			}
		}
	}
	if len(rep.Findings) > findingsListed+1 || summed != 1 {
		t.Fatalf("%d findings, %d summing up the rest; want at most %d, one", len(rep.Findings), summed, findingsListed+1)
	}
	rep, err = Check(dir, true)
	if err != nil || !rep.Repaired || rep.Salvaged != junk {
		t.Fatalf("repair: %v, repaired %v, %d records made gaps; want %d", err, rep.Repaired, rep.Salvaged, junk)
	}
	if rep, err := Check(dir, false); err != nil || rep.Damaged() || rep.URLs != 300 {
		t.Fatalf("after the repair: %v, %d findings, %d URLs", err, len(rep.Findings), rep.URLs)
	}
}
