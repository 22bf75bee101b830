package communicator

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// A spill file whose header is this file's cut short and zeros after the
// cut (or all zeros), with intact records after it, lost its header
// alone: a cut into the header while the endpoint wrote on (it writes
// each record at its offset, so the cut's bytes read as zeros), or a
// zeroed first block. Taken for a foreign file, it was moved aside whole,
// its items not delivered. Its records are checked as this file's with
// the header put back (version 2's checksums bind them to their offsets;
// version 1's are tried too, as the endpoint appends in the file's
// version); if an item verifies, the header is written again and the
// items are delivered.

// scanSpillHeaderless is scanSpill, but for a file whose header is a
// cut-short one of self and peer followed by zeros and that holds an
// intact item after it, which it scans with the header put back: hdr is
// then that header, to be written again (nil otherwise).
func scanSpillHeaderless(r io.ReaderAt, size int64, self, peer NodeID, maxURL int, controlTag uint64) (sc spillScan, hdr []byte, err error) {
	sc, err = scanSpill(r, size, self, peer, maxURL, controlTag)
	if !errors.Is(err, errSpillHeader) || size <= spillHeader {
		return sc, nil, err
	}
	got := make([]byte, spillHeader)
	if n, _ := r.ReadAt(got, 0); n < spillHeader {
		return sc, nil, err
	}
	for _, v := range []uint16{spillVersion, 1} {
		want := spillHeaderOf(v, self, peer)
		if !cutShort(got, want) {
			continue
		}
		sc2, err2 := scanSpill(headerOver{r, want}, size, self, peer, maxURL, controlTag)
		if err2 == nil && sc2.items > 0 {
			return sc2, want, nil
		}
	}
	return sc, nil, err
}

// cutShort reports whether got is want up to some byte and zeros after.
func cutShort(got, want []byte) bool {
	k := 0
	for k < len(got) && got[k] == want[k] {
		k++
	}
	return nonZero(got[k:]) < 0 && !bytes.Equal(got, want)
}

// headerLostText says what a start does with a file whose header was
// cut (scanSpillHeaderless).
func headerLostText(sc *spillScan) string {
	return fmt.Sprintf("header at offset 0 cut short, zeros after the cut (cut into while the endpoint wrote on, or zeroed), with %d intact items after it: the header is written again and they are delivered", sc.items)
}

// headerOver reads r with hdr in place of its first bytes.
type headerOver struct {
	r   io.ReaderAt
	hdr []byte
}

func (h headerOver) ReadAt(p []byte, off int64) (int, error) {
	n, err := h.r.ReadAt(p, off)
	if off < int64(len(h.hdr)) {
		copy(p[:n], h.hdr[off:])
	}
	return n, err
}
