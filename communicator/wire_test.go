package communicator

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestHeaderRoundTrip(t *testing.T) {
	h := header{version: wireVersion, keyID: 7, flags: flagData, nranges: 3, from: 513, to: 2,
		epoch: 1<<63 + 5, peerEpoch: 42, seq: 1 << 31, base: 99, ack: 98}
	b := make([]byte, headerSize+macSize)
	putHeader(b, &h)
	var g header
	if err := parseHeader(b, &g); err != nil || g != h {
		t.Fatalf("got %+v, %v; want %+v", g, err, h)
	}
	if parseHeader(b[:len(b)-1], &g) == nil {
		t.Error("short datagram accepted")
	}
	b[0] = 2
	if parseHeader(b, &g) == nil {
		t.Error("version 2 accepted")
	}
}

func TestRangesRoundTrip(t *testing.T) {
	rs := []ackRange{{12, 12}, {14, 20}, {300, 1000}}
	b := appendRanges(nil, 10, rs)
	got, rest, err := parseRanges(append(b, 0xAA), len(rs), 10, nil)
	if err != nil || !slices.Equal(got, rs) || !bytes.Equal(rest, []byte{0xAA}) {
		t.Fatalf("got %v %x %v", got, rest, err)
	}
	// Touching ranges (gap 1) and overflow are malformed.
	for _, bad := range [][]ackRange{{{11, 12}}, {{12, 13}, {14, 15}}} {
		if _, _, err := parseRanges(appendRanges(nil, 10, bad), len(bad), 10, nil); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if _, _, err := parseRanges([]byte{0x80}, 1, 0, nil); err == nil {
		t.Error("truncated varint accepted")
	}
	// At most maxRanges, what every sender of the wire version sends.
	var many []ackRange
	for i := range uint32(maxRanges + 1) {
		many = append(many, ackRange{12 + 3*i, 12 + 3*i})
	}
	if _, _, err := parseRanges(appendRanges(nil, 10, many[:maxRanges]), maxRanges, 10, nil); err != nil {
		t.Errorf("%d ranges refused: %v", maxRanges, err)
	}
	if _, _, err := parseRanges(appendRanges(nil, 10, many), len(many), 10, nil); err == nil {
		t.Errorf("%d ranges accepted", len(many))
	}
}

func TestItemsRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var in []Item
		for range 1 + r.IntN(40) {
			u := fmt.Sprintf("http://host%d.example/%s", r.IntN(5), bytes.Repeat([]byte("ab/"), r.IntN(30)))
			in = append(in, Item{Tag: r.Uint64N(1 << uint(r.IntN(64))), URL: []byte(u)})
		}
		if round%2 == 0 {
			slices.SortFunc(in, func(a, b Item) int { return bytes.Compare(a.URL, b.URL) })
		}
		var enc itemEncoder
		enc.reset()
		for _, it := range in {
			if !enc.add(it.Tag, it.URL, 1<<20) {
				t.Fatal("item does not fit")
			}
		}
		body := enc.appendTo(nil)
		out, _, err := decodeItems(body, false, 4096, nil, nil)
		if err != nil || len(out) != len(in) {
			t.Fatalf("round %d: %d items, %v; want %d", round, len(out), err, len(in))
		}
		for i := range in {
			if out[i].Tag != in[i].Tag || !bytes.Equal(out[i].URL, in[i].URL) {
				t.Fatalf("round %d item %d: %d %q; want %d %q", round, i, out[i].Tag, out[i].URL, in[i].Tag, in[i].URL)
			}
		}
	}
}

func TestItemsMalformed(t *testing.T) {
	var enc itemEncoder
	enc.reset()
	enc.add(1, []byte("http://a.example/x"), 1000)
	enc.add(2, []byte("http://a.example/y"), 1000)
	good := enc.appendTo(nil)
	if _, _, err := decodeItems(good, false, 100, nil, nil); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"no items":         {0},
		"count too high":   {9, 0, 1, 0, 'a'},
		"empty item":       {1, 0, 0, 0},
		"prefix too long":  {1, 1, 1, 0, 'a'},
		"truncated":        {1, 0, 1},
		"truncated varint": {1, 0, 0x80},
		"bits run out":     good[:len(good)-1],
		"trailing byte":    append(bytes.Clone(good), 0),
		"padding not zero": func() []byte { b := bytes.Clone(good); b[len(b)-1] |= 1; return b }(),
	} {
		if _, _, err := decodeItems(b, false, 100, nil, nil); err == nil {
			t.Errorf("%s: %x accepted", name, b)
		}
	}
	// Raw (uncoded) one-item bodies.
	raw := rawBody(nil, 7, []byte("http://b.example/"))
	if out, _, err := decodeItems(raw, true, 100, nil, nil); err != nil || len(out) != 1 || string(out[0].URL) != "http://b.example/" || out[0].Tag != 7 {
		t.Fatalf("raw: %v %v", out, err)
	}
	if _, _, err := decodeItems(raw[:len(raw)-1], true, 100, nil, nil); err == nil {
		t.Error("short raw body accepted")
	}
	// Prefix sharing may not expand past maxDecoded: 1 KB shared by
	// hundreds of one-byte items.
	body := []byte{0x80, 1} // 128 items
	body = binary.AppendUvarint(body, 0)
	body = binary.AppendUvarint(body, 1000)
	body = append(body, 0)
	for range 127 {
		body = append(body, 0xe8, 7, 1, 0) // p=1000, s=1
	}
	body = append(body, bytes.Repeat([]byte{0}, 2000)...)
	if _, _, err := decodeItems(body, false, 4096, nil, nil); err != errTooLarge {
		t.Errorf("expansion: %v, want errTooLarge", err)
	}
}

// TestHuffmanCode: the code is complete and prefix-free, and every byte
// round-trips.
func TestHuffmanCode(t *testing.T) {
	h := huffTable()
	kraft := 0.0
	for c := range 256 {
		if h.size[c] == 0 || h.size[c] > huffMax {
			t.Fatalf("byte %d: code length %d", c, h.size[c])
		}
		kraft += 1 / float64(uint(1)<<h.size[c])
	}
	if kraft != 1 {
		t.Errorf("Kraft sum %v, want 1", kraft)
	}
	var w bitWriter
	for c := range 256 {
		w.write(h.code[c], h.size[c])
	}
	w.flush()
	r := bitReader{b: w.buf}
	for c := range 256 {
		if got, ok := r.next(h); !ok || got != byte(c) {
			t.Fatalf("byte %d decoded as %d, %v", c, got, ok)
		}
	}
	t.Logf("code lengths: 'e' %d, '/' %d, 'a' %d, 0xff %d", h.size['e'], h.size['/'], h.size['a'], h.size[0xff])
}

func TestMAC(t *testing.T) {
	m := newMacer([]byte("0123456789abcdef"))
	b := m.seal([]byte("hello datagram"))
	if len(b) != 14+macSize || !m.verify(b) {
		t.Fatal("sealed datagram does not verify")
	}
	b[3] ^= 1
	if m.verify(b) {
		t.Error("damaged datagram verifies")
	}
	b[3] ^= 1
	if newMacer([]byte("0123456789abcdeX")).verify(b) {
		t.Error("wrong key verifies")
	}
}
