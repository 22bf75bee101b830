package scheduler

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzStates feeds arbitrary bytes to the state-file decoder as the body
// of sched.states: it must return an error or a table of valid records
// with nothing left in progress, never panic.
func FuzzStates(f *testing.F) {
	var seed []byte
	for id := range uint32(8) {
		seed = binary.LittleEndian.AppendUint64(seed, uint64(makeRecord(id, State(1+id%8), uint8(id), uint8(id), id%3)))
	}
	f.Add(seed, uint64(4), uint32(3), uint8(2))
	f.Add(seed[:20], uint64(9), uint32(1), uint8(1))
	f.Add(make([]byte, 64), uint64(0), uint32(0), uint8(2))
	gaps := binary.LittleEndian.AppendUint64(nil, uint64(gapRecord(0)))
	gaps = binary.LittleEndian.AppendUint64(gaps, 0)
	gaps = binary.LittleEndian.AppendUint64(gaps, uint64(makeRecord(2, InList, 0, 1, 0)))
	f.Add(gaps, uint64(3), uint32(1), uint8(2))
	f.Fuzz(func(t *testing.T, body []byte, durable uint64, nHosts uint32, v uint8) {
		version := uint32(1 + v%2)
		b := make([]byte, headerSize+len(body)/8*8)
		copy(b[headerSize:], body)
		recs := records(b)
		var sink findings
		decodeStates("fuzz.states", version, records(bytes.Clone(b)), durable, nHosts, &sink)
		s, err := decodeStates("fuzz.states", version, recs, durable, nHosts, nil)
		if (err != nil) != anyDamage(sink.list) {
			t.Fatalf("Open's mode: %v; Check's mode found %v", err, sink.list)
		}
		if err != nil {
			return
		}
		if s.count < durable {
			t.Fatalf("count %d below durable %d", s.count, durable)
		}
		for i, r := range recs {
			if err := checkRecord(uint32(i), r); err != nil {
				t.Fatalf("accepted bad record %d: %v", i, err)
			}
			if r.added() && (r.state() == InProgress || r.host() >= nHosts) {
				t.Fatalf("record %d left %v of host %d (%d hosts)", i, r.state(), r.host(), nHosts)
			}
			if version >= 2 && r == 0 && uint64(i) < durable {
				t.Fatalf("version %d: zero record %d inside the %d durable ones accepted", version, i, durable)
			}
			if r.added() && uint64(i) >= s.count {
				t.Fatalf("record %d past count %d", i, s.count)
			}
		}
	})
}

// validHostFiles builds a host table of n hosts and its names file.
func validHostFiles(n int) (hosts, names []byte) {
	hosts = make([]byte, headerSize+n*hostRecSize)
	putHeader(hosts, magicHosts, [16]byte{1})
	names = make([]byte, headerSize)
	putHeader(names, magicNames, [16]byte{1})
	for i := range n {
		name := fmt.Sprintf("host%d.example", i)
		h := hostRec{hash: HostHash(name), nameOff: uint64(len(names) - headerSize), nameLen: uint16(len(name)), crawlDelay: uint32(i), robots: RobotsOK}
		names = append(names, name...)
		h.encode(uint32(i), hosts[headerSize+i*hostRecSize:])
	}
	return hosts, names
}

// FuzzHosts feeds arbitrary host and name files to the host-table
// decoder: an error or a table of valid, distinct names matching their
// hashes, never a panic.
func FuzzHosts(f *testing.F) {
	h, n := validHostFiles(5)
	f.Add(h, n, uint64(5), uint64(len(n)-headerSize), true)
	f.Add(h, n, uint64(2), uint64(0), false)
	f.Add(h[:100], n[:70], uint64(1), uint64(3), true)
	torn := bytes.Clone(h)
	torn[headerSize+hostRecSize+8] ^= 0x10 // host 1's next start, its checksum left as it was
	f.Add(torn, n, uint64(5), uint64(len(n)-headerSize), false)
	f.Fuzz(func(t *testing.T, hosts, names []byte, durable, durableNames uint64, clean bool) {
		s, err := decodeHosts("fuzz.hosts", "fuzz.names", hosts, names, durable, durableNames, clean, nil)
		// Check's mode: every problem recorded, the scan going on.
		var sink findings
		decodeHosts("fuzz.hosts", "fuzz.names", hosts, names, durable, durableNames, clean, &sink)
		if (err != nil) != anyDamage(sink.list) {
			t.Fatalf("Open's mode: %v; Check's mode found %v", err, sink.list)
		}
		if err != nil {
			return
		}
		if uint64(len(s.recs)) < durable || len(s.names) != len(s.recs) || s.index.n != len(s.recs) {
			t.Fatalf("%d records, %d names, %d index entries, %d durable", len(s.recs), len(s.names), s.index.n, durable)
		}
		for i, name := range s.names {
			if h, ok := s.index.find(name, s.names); checkHostName(name) != nil || HostHash(name) != s.recs[i].hash || !ok || h != uint32(i) {
				t.Fatalf("host %d: bad name %q", i, name)
			}
		}
	})
}

// FuzzOpen damages one file of a real scheduler directory with arbitrary
// bytes at an arbitrary offset: Open must fail with an error or open a
// usable scheduler, never panic.
func FuzzOpen(f *testing.F) {
	f.Add(uint8(0), uint16(70), []byte{0xff})
	f.Add(uint8(1), uint16(64+64+3), []byte{1, 2, 3})
	f.Add(uint8(2), uint16(66), []byte("X"))
	f.Add(uint8(3), uint16(512), []byte{9, 9, 9, 9, 9, 9, 9, 9, 9})
	clk := newFakeClock(2, time.Hour, 0)
	tmpl := f.TempDir()
	s := mustOpen(f, tmpl, Config{Clock: clk, Phases: 2})
	for id := range uint32(50) {
		s.Add(id, fmt.Sprintf("h%d.example", id%6), uint8(id))
	}
	for _, l := range drain(f, s) {
		s.Report(l.IDs[0], Outcome{Kind: Fetched})
	}
	s.Sync()
	s.Add(50, "late.example", 0)
	killed(s) // as if killed: the last add is past the commit
	files := []string{statesName, hostsName, namesName, metaName}
	f.Fuzz(func(t *testing.T, which uint8, off uint16, data []byte) {
		dir := t.TempDir()
		for _, n := range files {
			b, err := os.ReadFile(filepath.Join(tmpl, n))
			if err != nil {
				t.Fatal(err)
			}
			if n == files[int(which)%len(files)] && int(off) < len(b)+16 {
				b = append(b, make([]byte, 16)...)
				copy(b[off:], data)
				if which&4 != 0 {
					b = b[:off]
				}
			}
			if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		s, err := Open(dir, Config{Clock: clk, Phases: 2})
		if err != nil {
			return
		}
		defer s.Close()
		for id := range uint32(s.Len()) {
			if u := s.URL(id); u.State != Absent {
				if _, err := s.HostInfo(u.Host); err != nil {
					t.Fatalf("id %d: %v", id, err)
				}
			}
		}
		drain(t, s)
		if _, err := s.Add(uint32(s.Len()), "new.example", 1); err != nil {
			t.Fatal(err)
		}
	})
}
