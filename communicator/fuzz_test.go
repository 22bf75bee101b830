package communicator

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// sealedSeed is a valid data datagram from node 2 to node 1.
func sealedSeed(items ...string) []byte {
	h := header{version: wireVersion, keyID: testKey.ID, flags: flagData, from: 2, to: 1, epoch: 5, peerEpoch: 0, seq: 1, base: 1}
	b := make([]byte, headerSize)
	var enc itemEncoder
	enc.reset()
	for _, u := range items {
		enc.add(3, []byte(u), 1000)
	}
	b = enc.appendTo(b)
	putHeader(b, &h)
	return newMacer(testKey.Secret).seal(b)
}

// FuzzReceive feeds any bytes to an endpoint's datagram path, as from a
// known peer's address. With seal set, the header's key and node ids are
// made right and the tag recomputed, so the fuzzer reaches the parsing
// behind the MAC.
func FuzzReceive(f *testing.F) {
	f.Add(sealedSeed("http://a.example/", "http://a.example/x", "http://b.example/"), false)
	f.Add(sealedSeed("http://a.example/"), true)
	f.Add([]byte{1, 1, 0, 0}, true)
	// One endpoint for all inputs: state carried from input to input is
	// more to chew on, and binding sockets per input would be slow.
	conns, addrs := loopbackConns(&testing.T{}, 2)
	var delivered atomic.Int64
	ep, err := New(Config{Self: 1, Peers: addrs, Conn: conns[0], Keys: []Key{testKey}, SendKey: testKey.ID,
		AckOnReturn: true, Handler: func(_ NodeID, _ uint64, items []Item) {
			for _, it := range items {
				if len(it.URL) == 0 {
					panic("empty item delivered")
				}
			}
			delivered.Add(1)
		}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { ep.Close(); conns[1].Close() })
	r := &receiver{e: ep}
	f.Fuzz(func(t *testing.T, b []byte, seal bool) {
		b = bytes.Clone(b)
		if seal && len(b) >= headerSize+macSize {
			b[0], b[1] = wireVersion, testKey.ID
			binary.BigEndian.PutUint16(b[4:], 2)
			binary.BigEndian.PutUint16(b[6:], 1)
			binary.BigEndian.PutUint64(b[16:], ep.Epoch())
			b = newMacer(testKey.Secret).seal(b[:len(b)-macSize])
		}
		before := delivered.Load()
		r.receive(b, addrs[2])
		r.receive(b, addrs[2]) // a replay is a duplicate at most
		if d := delivered.Load() - before; d > 1 {
			t.Fatalf("datagram delivered %d times", d)
		}
	})
}

// FuzzSpillReader opens any bytes as a spill file: it must report every
// damaged stretch naming an offset and deliver the intact records, never
// panic or loop, and every item the scan counted must be read back, the
// control items (tags from 8 on) among them as counted too.
func FuzzSpillReader(f *testing.F) {
	dir := f.TempDir()
	s, err := openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		f.Fatal(err)
	}
	s.append(7, []byte("http://a.example/"))
	s.append(8, []byte("http://b.example/long/path"))
	s.mark(spillHeader+8+1+1+17, false)
	s.append(9, []byte("http://c.example/"))
	s.close()
	good, _ := os.ReadFile(spillPath(dir, 1, 2))
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add(spillHeaderBytes(1, 2))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "spill-1-2"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		sc, scanErr := scanSpill(bytes.NewReader(b), int64(len(b)), 1, 2, 1000, 8)
		s, err := openSpill(dir, 1, 2, 1000, 8)
		if errors.Is(err, errSpillNewer) && errors.Is(scanErr, errSpillNewer) {
			return // a later build's file, whole: refused
		}
		if err != nil {
			t.Fatal(err)
		}
		defer s.close()
		if (scanErr != nil && !errors.Is(scanErr, errSpillUnwritten) || len(sc.bad) > 0) != (len(s.errs) > 0) {
			t.Fatalf("scan error %v but open reported %q", scanErr, s.errs)
		}
		if s.unreadControl != int64(sc.unreadControl) || sc.unreadControl > sc.unread {
			t.Fatalf("open counted %d control items unread, the scan %d (of %d)", s.unreadControl, sc.unreadControl, sc.unread)
		}
		q := queue{controlTag: 8}
		for i := 0; s.unread(); i++ {
			if i > len(b) {
				t.Fatal("reader does not advance")
			}
			if err := s.readChunk(&q, 4096); err != nil {
				t.Fatal(err)
			}
		}
		if sc.good >= spillHeader && q.len() != sc.unread {
			t.Fatalf("read %d items back; the scan counted %d", q.len(), sc.unread)
		}
		if sc.good >= spillHeader && q.control != sc.unreadControl || s.unreadControl != 0 {
			t.Fatalf("read %d control items back; the scan counted %d, and %d are left unread", q.control, sc.unreadControl, s.unreadControl)
		}
	})
}

// FuzzDecodeItems: any body decodes or fails cleanly, and what decodes
// re-encodes to items that decode the same.
func FuzzDecodeItems(f *testing.F) {
	var enc itemEncoder
	enc.reset()
	enc.add(1, []byte("http://a.example/x"), 1000)
	enc.add(2, []byte("http://a.example/y?q=1"), 1000)
	f.Add(enc.appendTo(nil), false)
	f.Add(rawBody(nil, 3, []byte("http://b.example/")), true)
	f.Fuzz(func(t *testing.T, body []byte, raw bool) {
		items, _, err := decodeItems(body, raw, 1100, nil, nil)
		if err != nil {
			return
		}
		var enc itemEncoder
		enc.reset()
		for _, it := range items {
			if len(it.URL) == 0 || len(it.URL) > 1100 {
				t.Fatalf("item of %d bytes", len(it.URL))
			}
			if !enc.add(it.Tag, it.URL, 1<<30) {
				t.Fatal("re-encoding failed")
			}
		}
		again, _, err := decodeItems(enc.appendTo(nil), false, 1100, nil, nil)
		if err != nil || len(again) != len(items) {
			t.Fatalf("re-decoded %d items, %v; want %d", len(again), err, len(items))
		}
		for i := range items {
			if again[i].Tag != items[i].Tag || !bytes.Equal(again[i].URL, items[i].URL) {
				t.Fatalf("item %d differs after re-encoding", i)
			}
		}
	})
}
