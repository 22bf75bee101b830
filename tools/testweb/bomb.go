package testweb

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
)

// gzipBomb returns the bomb body, built on first use.
func (s *Server) gzipBomb() []byte {
	s.bombOnce.Do(func() { s.bomb = makeGzipBomb(s.cfg.BombSize) })
	return s.bomb
}

// makeGzipBomb builds a gzip stream that inflates to size bytes of zeros
// (rounded down to MiB, at least one) at about a thousandth of that on the
// wire. It compresses one MiB once and repeats the compressed block: after a
// sync flush a block starts on a byte boundary, and since it only refers back
// to zeros it decodes the same wherever it is repeated.
func makeGzipBomb(size int64) []byte {
	const block = 1 << 20
	n := size / block
	if n < 1 {
		n = 1
	}
	zeros := make([]byte, block)
	var buf bytes.Buffer
	fw, _ := flate.NewWriter(&buf, flate.BestCompression)
	fw.Write(zeros)
	fw.Flush()
	first := append([]byte(nil), buf.Bytes()...)
	buf.Reset()
	fw.Write(zeros)
	fw.Flush()
	again := append([]byte(nil), buf.Bytes()...)
	buf.Reset()
	fw.Close()
	final := buf.Bytes()

	out := make([]byte, 0, 10+len(first)+int(n-1)*len(again)+len(final)+8)
	out = append(out, 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 0xff)
	out = append(out, first...)
	crc := crc32.Update(0, crc32.IEEETable, zeros)
	for i := int64(1); i < n; i++ {
		out = append(out, again...)
		crc = crc32.Update(crc, crc32.IEEETable, zeros)
	}
	out = append(out, final...)
	out = binary.LittleEndian.AppendUint32(out, crc)
	out = binary.LittleEndian.AppendUint32(out, uint32(n*block))
	return out
}
