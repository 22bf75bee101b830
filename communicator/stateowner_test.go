package communicator

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stateV2 is a version 2 state file (two slots of 512 bytes, no node id)
// holding epoch and ents in both slots.
func stateV2(epoch uint64, ents []stateEntry) []byte {
	slot := make([]byte, stateSlotAlign)
	copy(slot, stateMagic)
	binary.BigEndian.PutUint32(slot[8:], stateVersion2)
	binary.BigEndian.PutUint32(slot[12:], stateSlotAlign)
	binary.BigEndian.PutUint64(slot[16:], 1)
	binary.BigEndian.PutUint64(slot[24:], epoch)
	binary.BigEndian.PutUint32(slot[32:], uint32(len(ents)))
	for i, e := range ents {
		r := slot[stateSlotHead2+i*stateEntrySize:]
		binary.BigEndian.PutUint16(r, uint16(e.id))
		binary.BigEndian.PutUint64(r[2:], e.epoch)
		binary.BigEndian.PutUint32(r[10:], e.cum)
	}
	binary.BigEndian.PutUint32(slot[stateSlotAlign-4:], crc32.Checksum(slot[:stateSlotAlign-4], castagnoli))
	return append(append([]byte(nil), slot...), slot...)
}

// TestStateFileOtherNode: a communicator directory node 1 wrote, started
// as node 2 (copied from node 1, or the node renumbered), is refused,
// naming both nodes: node 1's receive positions taken by node 2 would
// drop the batches node 3 sends node 2 as already delivered, under node
// 3's running epoch, which nothing would ever deliver again.
func TestStateFileOtherNode(t *testing.T) {
	dir := t.TempDir()
	conns, addrs := loopbackConns(t, 3)
	cfg := func(self NodeID) Config {
		return Config{Self: self, Peers: addrs, Conn: conns[self-1], Keys: []Key{testKey}, SendKey: testKey.ID,
			Handler: func(NodeID, uint64, []Item) {}, AckOnReturn: true, SpillDir: dir}
	}
	ep, err := New(cfg(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := ep.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "state")
	before, _ := os.ReadFile(path)
	ep, err = New(cfg(2))
	if err == nil {
		ep.Close()
		t.Fatal("node 2 started on node 1's state file")
	}
	for _, want := range []string{path, "written by node 1", "this is node 2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("the refused start changed the state file")
	}
	// Node 1 itself still starts on it.
	if ep, err = New(cfg(1)); err != nil {
		t.Fatal(err)
	}
	ep.Close()
}

// TestStateFileV2: a version 2 file (no node id) is read, its positions
// and epoch kept, and rewritten as version 3 naming the node.
func TestStateFileV2(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	const oldEpoch = 1 << 60
	os.WriteFile(path, stateV2(oldEpoch, []stateEntry{{2, 77, 1234}, {3, 78, 5}}), 0o644)
	st, err := openState(dir, 4)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := st.entry(2); !ok || e.cum != 1234 || st.last != oldEpoch || st.f != nil || st.ownerKnown {
		t.Fatalf("version 2 read: %+v", st)
	}
	if err := st.save(oldEpoch+1, st.list()); err != nil {
		t.Fatal(err)
	}
	st.close()
	b, _ := os.ReadFile(path)
	if v := binary.BigEndian.Uint32(b[8:]); v != stateVersion {
		t.Fatalf("rewritten as version %d", v)
	}
	st, err = openState(dir, 4)
	if err != nil {
		t.Fatal(err)
	}
	st.close()
	if e, ok := st.entry(3); !ok || e.cum != 5 || e.epoch != 78 || !st.ownerKnown || st.owner != 4 || st.last != oldEpoch+1 {
		t.Fatalf("version 3 after the rewrite: %+v", st)
	}
	if _, err := openState(dir, 5); err == nil || !strings.Contains(err.Error(), "written by node 4") {
		t.Fatalf("node 5 on node 4's converted file: %v", err)
	}
}

// TestCheckSpillStateOwner: kspider check said ok for a communicator
// directory holding node 2's spill file beside node 1's state file (two
// nodes' directories merged), which neither node can start on whole; now
// that is damage naming both, and the state's node is in the report.
func TestCheckSpillStateOwner(t *testing.T) {
	dir, _ := spillFixture(t) // spill-1-2 and node 1's state
	rep, err := CheckSpill(dir)
	if err != nil || rep.Damaged() || !rep.StateNodeKnown || rep.StateNode != 1 {
		t.Fatalf("node 1's own files: %v %+v", err, rep)
	}
	s, err := openSpill(dir, 2, 3, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.append(0, []byte("http://a.example/"))
	s.close()
	rep, err = CheckSpill(dir)
	if err != nil || !rep.Damaged() || len(rep.Findings) != 1 || !strings.Contains(rep.Findings[0].What, "spill file of node 2 beside the state file of node 1") {
		t.Fatalf("node 2's spill file beside node 1's state: %v %+v", err, rep)
	}
}

// TestStateFileV2OtherNode: a version 2 state file names no node, so one
// node 2 wrote (batches from nodes 1 and 3 acknowledged) was taken by
// node 1 started on that directory, which would have dropped node 3's
// batches to it up to node 2's positions as already delivered, and then
// rewritten it as version 3 naming node 1; kspider check said ok. Now
// the entry for node 1, which never receives from itself, gives the other
// writer away: node 1 refuses the file, and check reports it.
func TestStateFileV2OtherNode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	old := stateV2(1<<60, []stateEntry{{1, 77, 1234}, {3, 78, 5}})
	os.WriteFile(path, old, 0o644)
	s, err := openSpill(dir, 1, 3, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.append(0, []byte("http://a.example/"))
	s.close()
	rep, err := CheckSpill(dir)
	if err != nil || !rep.Damaged() {
		t.Errorf("check of node 1's spill file beside node 2's version 2 state: %v %+v", err, rep)
	}
	_, err = openState(dir, 1)
	if err == nil || !strings.Contains(err.Error(), "this is node 1") || !strings.Contains(err.Error(), path) {
		t.Fatalf("node 1 on a version 2 state file holding its own position: %v", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(old) {
		t.Error("the refused open changed the state file")
	}
	st, err := openState(dir, 2) // the node that wrote it
	if err != nil {
		t.Fatal(err)
	}
	st.close()
}
