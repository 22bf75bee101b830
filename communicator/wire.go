package communicator

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash"
)

// Wire format constants; the layout is documented in doc.go.
const (
	wireVersion = 1
	headerSize  = 36
	macSize     = 16
	// MinPayload and MaxPayload bound Config.Payload: 1232 bytes fit any
	// IPv6 path (1280 minus headers); 1472 fills a 1500-byte Ethernet MTU.
	MinPayload     = 512
	DefaultPayload = 1232
	MaxPayload     = 1472
	// maxRanges is how many ack ranges a datagram carries at most;
	// rangeReserve is the room a data datagram keeps for them.
	maxRanges    = 16
	rangeReserve = 24
	// maxDecoded bounds the bytes a datagram's items expand to: front
	// coding lets 1.4 KB name megabytes, and a forged-but-authentic
	// datagram must not make the receiver allocate them.
	maxDecoded = 64 << 10
)

// Flags: flagData marks a datagram with items; flagRaw says their
// suffixes are plain bytes, not Huffman-coded (a batch of one item whose
// code would not fit a datagram).
const (
	flagData = 1
	flagRaw  = 2
)

// maxSeq is the last sequence number an epoch uses: a sender stops there
// (at 10,000 datagrams a second, after about five days), says so (the log,
// PeerStats.Exhausted) and needs a restart, which starts a new epoch. Far
// from 2^32, so no comparison wraps.
const maxSeq = 1<<32 - 1<<20

// header is the fixed part of a datagram.
type header struct {
	version   uint8
	keyID     uint8
	flags     uint8
	nranges   uint8
	from, to  NodeID
	epoch     uint64 // sender's epoch
	peerEpoch uint64 // receiver's epoch as the sender last saw it; 0: none yet
	seq       uint32 // data sequence number; 0 in an ack-only datagram
	base      uint32 // sender's lowest unacknowledged sequence number
	ack       uint32 // every seq <= ack from the receiver is acknowledged
}

// ackRange says seqs [lo, hi] (inclusive) are acknowledged.
type ackRange struct{ lo, hi uint32 }

// Item is one byte string carried with its small application header
// (the node puts a URL's link depth in Tag).
type Item struct {
	Tag uint64
	URL []byte
}

var (
	errShort     = errors.New("datagram shorter than header and tag")
	errVersion   = errors.New("unknown wire version")
	errRanges    = errors.New("bad acknowledgement ranges")
	errItems     = errors.New("bad item encoding")
	errTooLarge  = errors.New("items expand beyond the decode limit")
	errNoItems   = errors.New("data datagram without items")
	errItemsNoSQ = errors.New("items without a sequence number")
)

func putHeader(b []byte, h *header) {
	b[0] = h.version
	b[1] = h.keyID
	b[2] = h.flags
	b[3] = h.nranges
	binary.BigEndian.PutUint16(b[4:], uint16(h.from))
	binary.BigEndian.PutUint16(b[6:], uint16(h.to))
	binary.BigEndian.PutUint64(b[8:], h.epoch)
	binary.BigEndian.PutUint64(b[16:], h.peerEpoch)
	binary.BigEndian.PutUint32(b[24:], h.seq)
	binary.BigEndian.PutUint32(b[28:], h.base)
	binary.BigEndian.PutUint32(b[32:], h.ack)
}

// parseHeader reads the fixed header of a datagram whose MAC is not yet
// checked; it looks at nothing past the header, so the caller can check
// key id, node ids and address before paying for the MAC.
func parseHeader(b []byte, h *header) error {
	if len(b) < headerSize+macSize {
		return errShort
	}
	if b[0] != wireVersion {
		return errVersion
	}
	h.version, h.keyID, h.flags, h.nranges = b[0], b[1], b[2], b[3]
	h.from = NodeID(binary.BigEndian.Uint16(b[4:]))
	h.to = NodeID(binary.BigEndian.Uint16(b[6:]))
	h.epoch = binary.BigEndian.Uint64(b[8:])
	h.peerEpoch = binary.BigEndian.Uint64(b[16:])
	h.seq = binary.BigEndian.Uint32(b[24:])
	h.base = binary.BigEndian.Uint32(b[28:])
	h.ack = binary.BigEndian.Uint32(b[32:])
	return nil
}

// appendRanges encodes ack ranges above cum as (gap, length-1) uvarint
// pairs, each gap counted from the previous range's end.
func appendRanges(b []byte, cum uint32, rs []ackRange) []byte {
	prev := cum
	for _, r := range rs {
		b = binary.AppendUvarint(b, uint64(r.lo-prev))
		b = binary.AppendUvarint(b, uint64(r.hi-r.lo))
		prev = r.hi
	}
	return b
}

// parseRanges decodes n ranges from b and returns the rest of b (the
// items). Ranges must be increasing and not touch each other or cum, and
// be at most maxRanges: no sender of this wire version sends more, so a
// datagram with more is malformed, not ranges to walk.
func parseRanges(b []byte, n int, cum uint32, dst []ackRange) ([]ackRange, []byte, error) {
	if n > maxRanges {
		return dst, nil, errRanges
	}
	prev := uint64(cum)
	for range n {
		gap, k := binary.Uvarint(b)
		if k <= 0 {
			return dst, nil, errRanges
		}
		b = b[k:]
		span, k := binary.Uvarint(b)
		if k <= 0 {
			return dst, nil, errRanges
		}
		b = b[k:]
		lo := prev + gap
		hi := lo + span
		if gap < 2 || hi > 0xffffffff {
			return dst, nil, errRanges
		}
		dst = append(dst, ackRange{uint32(lo), uint32(hi)})
		prev = hi
	}
	return dst, b, nil
}

// itemEncoder builds a datagram body: uvarint(item count), then per item
// uvarint(bytes shared with the previous item), uvarint(suffix length),
// uvarint(tag), then the suffixes of all items as one Huffman bit stream
// (huffman.go), zero-padded to a byte.
type itemEncoder struct {
	h     *huffCode
	prev  []byte
	hdr   []byte
	bits  bitWriter
	count int
	nbits int
	// decoded is the bytes the items expand to, which the receiver
	// bounds by maxDecoded: front coding puts hundreds of long URLs with
	// a common prefix in one datagram.
	decoded int
}

func (e *itemEncoder) reset() {
	if e.h == nil {
		e.h = huffTable()
	}
	e.prev, e.hdr, e.count, e.nbits, e.decoded = e.prev[:0], e.hdr[:0], 0, 0, 0
	e.bits.reset()
}

func sharedPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i+8 <= n && binary.LittleEndian.Uint64(a[i:]) == binary.LittleEndian.Uint64(b[i:]) {
		i += 8
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// add appends an item if the body stays within room bytes and its items
// within maxDecoded.
func (e *itemEncoder) add(tag uint64, url []byte, room int) bool {
	if e.decoded+len(url) > maxDecoded {
		return false
	}
	p := sharedPrefix(e.prev, url)
	suf := url[p:]
	bits := 0
	for _, c := range suf {
		bits += int(e.h.size[c])
	}
	hdr := uvarintLen(uint64(p)) + uvarintLen(uint64(len(suf))) + uvarintLen(tag)
	if uvarintLen(uint64(e.count+1))+len(e.hdr)+hdr+(e.nbits+bits+7)/8 > room {
		return false
	}
	e.hdr = binary.AppendUvarint(e.hdr, uint64(p))
	e.hdr = binary.AppendUvarint(e.hdr, uint64(len(suf)))
	e.hdr = binary.AppendUvarint(e.hdr, tag)
	for _, c := range suf {
		e.bits.write(e.h.code[c], e.h.size[c])
	}
	e.nbits += bits
	e.decoded += len(url)
	e.count++
	e.prev = append(e.prev[:0], url...)
	return true
}

// appendTo appends the finished body to dst; reset before the next batch.
func (e *itemEncoder) appendTo(dst []byte) []byte {
	e.bits.flush()
	dst = binary.AppendUvarint(dst, uint64(e.count))
	dst = append(dst, e.hdr...)
	return append(dst, e.bits.buf...)
}

// rawBody appends the body of a one-item batch with a plain suffix.
func rawBody(dst []byte, tag uint64, url []byte) []byte {
	dst = binary.AppendUvarint(dst, 1)
	dst = binary.AppendUvarint(dst, 0)
	dst = binary.AppendUvarint(dst, uint64(len(url)))
	dst = binary.AppendUvarint(dst, tag)
	return append(dst, url...)
}

// decodeItems expands a datagram body into items whose URL slices point
// into buf (returned, possibly grown). No item may be empty or longer than
// maxURL, the sum stays under maxDecoded, and the bit stream must end in
// the last byte with zero padding. A first pass validates and sizes, so
// buf is grown once and the slices handed out stay valid.
func decodeItems(body []byte, raw bool, maxURL int, dst []Item, buf []byte) ([]Item, []byte, error) {
	dst, buf = dst[:0], buf[:0]
	count, k := binary.Uvarint(body)
	if k <= 0 || count == 0 || count > uint64(len(body)/3) {
		return dst, buf, errItems
	}
	hdrs := body[k:]
	total, suffixes, prevLen, pos := 0, 0, 0, 0
	for range count {
		p, s, _, n, err := nextItem(hdrs[pos:], prevLen, maxURL)
		if err != nil {
			return dst, buf, err
		}
		pos += n
		prevLen = p + s
		suffixes += s
		if total += prevLen; total > maxDecoded {
			return dst, buf, errTooLarge
		}
	}
	// Every code is at least one bit: a cheap bound before decoding.
	if suffixes > 8*len(hdrs[pos:]) || raw && suffixes != len(hdrs[pos:]) {
		return dst, buf, errItems
	}
	if cap(buf) < total {
		buf = make([]byte, 0, total)
	}
	h := huffTable()
	r := bitReader{b: hdrs[pos:]}
	prevOff, prevLen, pos := 0, 0, 0
	for range count {
		p, s, tag, n, _ := nextItem(hdrs[pos:], prevLen, maxURL)
		pos += n
		off := len(buf)
		buf = append(buf, buf[prevOff:prevOff+p]...)
		if raw {
			buf = append(buf, r.b[:s]...)
			r.b = r.b[s:]
		} else {
			for range s {
				c, ok := r.next(h)
				if !ok {
					return dst, buf, errItems
				}
				buf = append(buf, c)
			}
		}
		prevOff, prevLen = off, p+s
		dst = append(dst, Item{Tag: tag, URL: buf[off : off+prevLen : off+prevLen]})
	}
	if len(r.b) > 0 || r.n >= 8 || r.acc&(1<<r.n-1) != 0 {
		return dst, buf, errItems // trailing bytes or non-zero padding
	}
	return dst, buf, nil
}

// nextItem reads one item header: shared prefix p, suffix length s, tag,
// and how many bytes they took.
func nextItem(b []byte, prevLen, maxURL int) (p, s int, tag uint64, n int, err error) {
	pv, k1 := binary.Uvarint(b)
	if k1 <= 0 {
		return 0, 0, 0, 0, errItems
	}
	sv, k2 := binary.Uvarint(b[k1:])
	if k2 <= 0 {
		return 0, 0, 0, 0, errItems
	}
	tag, k3 := binary.Uvarint(b[k1+k2:])
	if k3 <= 0 {
		return 0, 0, 0, 0, errItems
	}
	if pv > uint64(prevLen) || sv > uint64(maxURL) || pv+sv == 0 || pv+sv > uint64(maxURL) {
		return 0, 0, 0, 0, errItems
	}
	return int(pv), int(sv), tag, k1 + k2 + k3, nil
}

// macer computes truncated HMAC-SHA-256 tags with one key; not safe for
// concurrent use.
type macer struct {
	h   hash.Hash
	sum [sha256.Size]byte
}

func newMacer(secret []byte) *macer { return &macer{h: hmac.New(sha256.New, secret)} }

// tag returns the 16-byte tag of b (valid until the next call).
func (m *macer) tag(b []byte) []byte {
	m.h.Reset()
	m.h.Write(b)
	return m.h.Sum(m.sum[:0])[:macSize]
}

// seal appends the tag of b to b.
func (m *macer) seal(b []byte) []byte { return append(b, m.tag(b)...) }

// verify reports whether b ends in the right tag for the rest of b.
func (m *macer) verify(b []byte) bool {
	n := len(b) - macSize
	return hmac.Equal(m.tag(b[:n]), b[n:])
}
