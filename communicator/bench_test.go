package communicator

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// benchURLs are sorted synthetic URLs, as packFrom hands them to the encoder.
func benchURLs(n int) [][]byte {
	r := rand.New(rand.NewPCG(3, 4))
	var us [][]byte
	for i := range n {
		us = append(us, fmt.Appendf(nil, "https://www.site%d.example/%s/page-%d.html", r.IntN(5000), []string{"news", "a/b", "img", "x?id="}[r.IntN(4)], i))
	}
	slices.SortFunc(us, bytes.Compare)
	return us
}

// BenchmarkItems encodes and decodes full datagram bodies; ns/op is per
// URL (both directions), and neither side allocates once warm.
func BenchmarkItems(b *testing.B) {
	us := benchURLs(4096)
	room := DefaultPayload - headerSize - macSize - rangeReserve
	var enc itemEncoder
	var body []byte
	var items []Item
	var buf []byte
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		enc.reset()
		for n := 0; n < 40 && enc.add(0, us[i%len(us)], room); n++ {
			i++
		}
		body = enc.appendTo(body[:0])
		var err error
		if items, buf, err = decodeItems(body, false, 1100, items, buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i), "ns/url")
}

// BenchmarkSeal is the HMAC of one full datagram.
func BenchmarkSeal(b *testing.B) {
	m := newMacer(testKey.Secret)
	d := make([]byte, DefaultPayload-macSize, DefaultPayload)
	b.SetBytes(int64(len(d)))
	for b.Loop() {
		d = m.seal(d[:DefaultPayload-macSize])
	}
}
