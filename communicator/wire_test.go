package communicator

import (
	"bytes"
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
		var body []byte
		for _, it := range in {
			_, p := enc.encodedLen(it.Tag, it.URL)
			body = enc.appendItem(body, it.Tag, it.URL, p)
		}
		out, _, err := decodeItems(body, 4096, nil, nil)
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
	for _, b := range [][]byte{
		{0, 0, 0},      // empty item
		{1, 1, 0, 'a'}, // prefix longer than the previous item
		{0, 5, 0, 'a'}, // suffix beyond the body
		{0, 1},         // truncated
		{0, 0x80},      // truncated varint
		{0, 3, 0, 'a', 'b'} /* short */} {
		if _, _, err := decodeItems(b, 100, nil, nil); err == nil {
			t.Errorf("%x accepted", b)
		}
	}
	// Prefix sharing may not expand past maxDecoded: 1 KB of suffix
	// shared by hundreds of items.
	var body []byte
	body = append(body, 0, 0x80, 8, 0)
	body = append(body, bytes.Repeat([]byte{'x'}, 1024)...)
	for range 100 {
		body = append(body, 0x80, 8, 0, 0) // p=1024, s=0
	}
	if _, _, err := decodeItems(body, 4096, nil, nil); err != errTooLarge {
		t.Errorf("expansion: %v, want errTooLarge", err)
	}
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
