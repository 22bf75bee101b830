package communicator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConfigErrors(t *testing.T) {
	conns, addrs := loopbackConns(t, 2)
	defer conns[1].Close()
	defer conns[0].Close()
	h := func(NodeID, uint64, []Item) {}
	short := Key{ID: 3, Secret: []byte("short")}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Self: 1, Peers: addrs, Conn: conns[0], Keys: []Key{testKey}, SendKey: 1}, "Handler is required"},
		{Config{Self: 9, Peers: addrs, Keys: []Key{testKey}, SendKey: 1, Handler: h}, "no address for Self"},
		{Config{Self: 1, Peers: addrs, Conn: conns[0], SendKey: 1, Handler: h}, "0 keys"},
		{Config{Self: 1, Peers: addrs, Conn: conns[0], Keys: []Key{short}, SendKey: 3, Handler: h}, "at least 16"},
		{Config{Self: 1, Peers: addrs, Conn: conns[0], Keys: []Key{testKey, testKey}, SendKey: 1, Handler: h}, "two keys with id 1"},
		{Config{Self: 1, Peers: addrs, Conn: conns[0], Keys: []Key{testKey}, SendKey: 2, Handler: h}, "SendKey 2"},
		{Config{Self: 1, Peers: addrs, Conn: conns[0], Keys: []Key{testKey}, SendKey: 1, Handler: h, Payload: 2000}, "Payload 2000"},
		{Config{Self: 1, Peers: addrs, Conn: conns[0], Keys: []Key{testKey}, SendKey: 1, Handler: h, QueueBytes: 3 << 30}, "QueueBytes 3221225472 above"},
		{Config{Self: 1, Peers: addrs, Conn: conns[0], Keys: []Key{testKey}, SendKey: 1, Handler: h, Window: 1 << 40}, "Window 1099511627776 above 65536"},
		{Config{Self: 1, Peers: addrs, Conn: conns[0], Keys: []Key{testKey}, SendKey: 1, Handler: h, SentCache: 1 << 50}, "SentCache 1125899906842624 above"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v", c.want, err)
		}
	}
}

// TestStateFile: the epoch grows across starts even if the clock steps
// back, and a damaged state file is an error naming it.
func TestStateFile(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1700000000, 0)
	s, err := openState(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	e1 := s.nextEpoch(now)
	if err := s.save(e1, []stateEntry{{2, 77, 1234}}); err != nil {
		t.Fatal(err)
	}
	s, err = openState(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if e2 := s.nextEpoch(now.Add(-time.Hour)); e2 <= e1 {
		t.Errorf("epoch after the clock stepped back: %d, not above %d", e2, e1)
	}
	if ent, ok := s.entry(2); !ok || ent.epoch != 77 || ent.cum != 1234 {
		t.Errorf("entry %+v, %v", ent, ok)
	}
	s.close()
	path := filepath.Join(dir, "state")
	b, _ := os.ReadFile(path)
	b[len(b)-6] ^= 1
	os.WriteFile(path, b, 0o644)
	// One slot damaged: the other opens, and the damage is reported.
	if s, err := openState(dir, 1); err != nil || len(s.warnings) != 1 || !strings.Contains(s.warnings[0].what, "checksum mismatch at offset") {
		t.Errorf("one damaged slot: %v %+v", err, s)
	} else {
		s.close()
	}
	b[len(b)/2-6] ^= 1
	os.WriteFile(path, b, 0o644)
	if _, err := openState(dir, 1); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "checksum mismatch at offset") {
		t.Errorf("damaged state file: %v", err)
	}
	os.WriteFile(path, b[:10], 0o644)
	if _, err := openState(dir, 1); err == nil || !strings.Contains(err.Error(), "shorter than a header") {
		t.Errorf("truncated state file: %v", err)
	}
}
