package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// dumpCrashedStore keeps the evidence of a crash test's failure, which
// comes about once in hundreds of runs under load and cannot be re-run:
// it copies dir to a new /tmp/crashdump-* directory and describes its
// index header, every entry of the index that judge finds damaged
// (its bytes, and where the segments hold records of its URL id), the
// same entries in prevIndex (a copy of the index as the previous round's
// recovery left it, so a failure tells an entry damaged before this
// round's writer from one it wrote), and the lines the writer child
// logged.
func dumpCrashedStore(t *testing.T, dir, prevIndex string, childLog []string) {
	t.Helper()
	dump, err := os.MkdirTemp("", "crashdump-")
	if err != nil {
		t.Logf("dump: %v", err)
		return
	}
	if out, err := exec.Command("cp", "-a", dir, dump).CombinedOutput(); err != nil {
		t.Logf("dump: copying %s to %s: %v: %s", dir, dump, err, out)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "crash dump of %s in %s\n", dir, dump)
	bad := describeIndex(&b, filepath.Join(dir, indexName), dir, nil)
	fmt.Fprintf(&b, "the same entries in %s, as the previous round's recovery left the index:\n", prevIndex)
	describeIndex(&b, prevIndex, "", bad)
	if out, err := exec.Command("cp", prevIndex, dump).CombinedOutput(); err != nil {
		t.Logf("dump: copying %s to %s: %v: %s", prevIndex, dump, err, out)
	}
	fmt.Fprintf(&b, "the writer child's last %d log lines:\n", len(childLog))
	for _, l := range childLog {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	os.WriteFile(filepath.Join(dump, "DUMP.txt"), []byte(b.String()), 0o644)
	t.Log(b.String())
}

// describeIndex writes what dumpCrashedStore says of the index at path:
// of the entries of ids only, or else of those judge finds damaged,
// which it returns. With dir, it says where dir's segments hold records
// of their ids.
func describeIndex(w io.Writer, path, dir string, ids []uint64) (bad []uint64) {
	data, err := os.ReadFile(path)
	if err != nil || len(data) < indexHeaderSize {
		fmt.Fprintf(w, "index: %v (%d bytes)\n", err, len(data))
		return nil
	}
	for i := range 2 {
		h, err := readIndexSlot(data[i*indexSlotSize:(i+1)*indexSlotSize], i)
		fmt.Fprintf(w, "header slot %d: seq %d checkpoint %s@%d entries %d dense %d (err %v)\n", i, h.seq, segmentName(h.ckSeg), h.ckOff, h.entries, h.dense, err)
	}
	h, _, err := readIndexHeader(path, data[:indexHeaderSize])
	if err != nil {
		fmt.Fprintf(w, "header: %v\n", err)
		return nil
	}
	ix := &index{dense: h.dense}
	entries := data[indexHeaderSize:]
	n := uint64(len(entries)) / indexEntrySize
	scan := ids == nil
	if scan {
		for id := range n {
			if _, _, st := decodeEntry(id, entries[id*indexEntrySize:]); ix.judge(id, st) == entryBad {
				bad = append(bad, id)
			}
		}
		ids = bad
	}
	for i, id := range ids {
		if i == 8 {
			fmt.Fprintf(w, "and %d more\n", len(ids)-i)
			break
		}
		if id >= n {
			fmt.Fprintf(w, "entry of URL id %d: beyond the file's %d entries\n", id, n)
			continue
		}
		e := entries[id*indexEntrySize : (id+1)*indexEntrySize]
		seg, off, st := decodeEntry(id, e)
		fmt.Fprintf(w, "entry of URL id %d at offset %d: % x (segment %d offset %d, state %d; below dense: %v)\n",
			id, entryOffset(id), e, seg, off, st, id < h.dense)
		for _, dn := range []uint64{id - 1, id + 1} {
			if dn < n {
				s, o, st := decodeEntry(dn, entries[dn*indexEntrySize:])
				fmt.Fprintf(w, "  neighbour %d: segment %d offset %d state %d\n", dn, s, o, st)
			}
		}
		if dir != "" {
			fmt.Fprintf(w, "  records of URL id %d in the segments: %s\n", id, recordsOf(dir, id))
		}
	}
	if scan {
		fmt.Fprintf(w, "%d damaged entries\n", len(bad))
	}
	return bad
}

// recordsOf lists where dir's segments hold records of URL id id.
func recordsOf(dir string, id uint64) string {
	nums, err := listSegments(dir)
	if err != nil {
		return err.Error()
	}
	var at []string
	for _, n := range nums {
		path := segmentPath(dir, n)
		f, err := os.Open(path)
		if err != nil {
			at = append(at, err.Error())
			continue
		}
		fi, _ := f.Stat()
		r, _, err := newSegmentReader(f, path, n, fi.Size(), true, storeID{})
		for err == nil {
			var off int64
			var h recordHeader
			off, h, _, err = r.next()
			if err == nil && h.urlID == id {
				at = append(at, fmt.Sprintf("%s@%d", segmentName(n), off))
			}
			var c *Corruption
			if errors.As(err, &c) {
				err = nil
			}
		}
		if err != io.EOF {
			at = append(at, fmt.Sprintf("%s: %v", segmentName(n), err))
		}
		f.Close()
	}
	return strings.Join(at, ", ")
}
