package urltree

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestHuffmanRoundTrip(t *testing.T) {
	h := huffTables()
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		n := r.IntN(200)
		if i < 20 {
			n = i
		}
		tail := make([]byte, n)
		for j := range tail {
			if r.IntN(4) == 0 {
				tail[j] = byte(r.IntN(256))
			} else {
				tail[j] = "abcdefghijklmnopqrstuvwxyz0123456789/.-"[r.IntN(39)]
			}
		}
		prefix := []byte{0xff, 0x00, 0xaa}
		code := h.appendCoded(append([]byte(nil), prefix...), tail)
		if len(code)-len(prefix) != h.codedLen(tail) {
			t.Fatalf("codedLen %d, coded %d bytes", h.codedLen(tail), len(code)-len(prefix))
		}
		// Garbage after the code must not be read.
		code = append(code, 0x12, 0x34, 0x56)
		rd := tailReader{a: code, pos: uint64(len(prefix)) * 8, end: uint64(len(code)-3) * 8, h: h}
		var got []byte
		for {
			b, ok := rd.next()
			if !ok {
				break
			}
			got = append(got, b)
		}
		if rd.bad || !bytes.Equal(got, tail) {
			t.Fatalf("round trip of %q gave %q (bad %v)", tail, got, rd.bad)
		}
		rd = tailReader{a: code, pos: uint64(len(prefix)) * 8, end: uint64(len(code)-3) * 8, h: h}
		if got := rd.appendAll([]byte("x")); string(got) != "x"+string(tail) {
			t.Fatalf("appendAll of %q gave %q", tail, got)
		}
		rd = tailReader{a: code, pos: uint64(len(prefix)) * 8, end: uint64(len(code)-3) * 8, h: h}
		part := make([]byte, n/2)
		if k := rd.fill(part); k != len(part) || !bytes.Equal(part, tail[:n/2]) {
			t.Fatalf("fill of %q gave %q", tail, part[:k])
		}
	}
}
