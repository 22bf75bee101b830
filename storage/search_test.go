package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"sync/atomic"
	"testing"
)

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r io.ReaderAt
	n atomic.Int64
}

func (c *countingReaderAt) ReadAt(b []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(b, off)
	c.n.Add(int64(n))
	return n, err
}

// fakeHeader is a record header that passes every check but its CRC,
// claiming length bytes.
func fakeHeader(length uint32) []byte {
	b := make([]byte, recordHeaderSize)
	copy(b, recordMagic)
	b[4] = recordVersion
	binary.LittleEndian.PutUint32(b[8:], 0xdeadbeef)
	binary.LittleEndian.PutUint32(b[12:], length)
	binary.LittleEndian.PutUint64(b[16:], 7)
	binary.LittleEndian.PutUint32(b[48:], length-recordHeaderSize)
	binary.LittleEndian.PutUint32(b[52:], length-recordHeaderSize)
	return b
}

// The search for the next record after damage checked every candidate
// whole: a region of candidates each claiming a large record (a hostile
// page stored uncompressed, its own header damaged or torn by a crash)
// made it read and checksum each, quadratic in the region's size (512
// candidates of 2 MiB in 4 MiB: 1 GiB read here; a 10 MB page of them,
// hundreds of GB, minutes at every open). Now the bytes it reads and
// checksums for candidates it rejects are bounded by one record's largest
// size and 16 times the bytes it searched.
func TestSearchAfterDamageIsLinear(t *testing.T) {
	const candidates, every, claim = 512, 4 << 10, 2 << 20
	b := encodeSegmentHeader(1, storeID{})
	b = append(b, make([]byte, 100)...) // damage: no record here
	for range candidates {
		// Each claims past the end of the one before: read anew.
		b = append(b, fakeHeader(claim)...)
		b = append(b, make([]byte, every-recordHeaderSize)...)
	}
	b = append(b, make([]byte, claim)...)
	f := &countingReaderAt{r: bytes.NewReader(b)}
	r, hdr, err := newSegmentReader(f, "test.seg", 1, int64(len(b)), false, storeID{})
	if err != nil || hdr != nil {
		t.Fatal(err, hdr)
	}
	_, _, _, err = r.next()
	var c *Corruption
	if !errors.As(err, &c) || c.Offset+c.Skipped != int64(len(b)) {
		t.Fatalf("next: %v, want one damaged region to the end", err)
	}
	if bound := int64(maxRecordSize + 16*len(b) + 2*readWindow); f.n.Load() > bound {
		t.Fatalf("the search read %d bytes of a %d-byte file, more than %d", f.n.Load(), len(b), bound)
	}
}
