package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"net/netip"
	"time"
)

// recordHeader is the fixed part of every record, stored little-endian:
//
//	off len field
//	  0   4 magic      "KSPr"
//	  4   1 version    recordVersion
//	  5   1 codec      Codec
//	  6   1 ipLen      0 (unknown), 4 or 16
//	  7   1 reserved   0
//	  8   4 crc        CRC-32C of bytes 4 … 7 and 12 … length-1 (version 1:
//	                   12 … length-1 only, so its codec byte was unprotected)
//	 12   4 length     the whole record, this header included
//	 16   8 urlID
//	 24   8 fetchTime  Unix nanoseconds, UTC (math.MinInt64: unknown, the zero time)
//	 32   8 duration   nanoseconds
//	 40   4 urlLen
//	 44   4 headerLen  response header block
//	 48   4 rawLen     body before compression
//	 52   4 compLen    body as stored
//	 56   2 status     HTTP status code
//	 58   6 reserved   0
//	 64     ip[ipLen] url[urlLen] header[headerLen] body[compLen]
type recordHeader struct {
	version   uint8
	codec     Codec
	ipLen     uint8
	crc       uint32
	length    uint32
	urlID     uint64
	fetchTime int64
	duration  int64
	urlLen    uint32
	headerLen uint32
	rawLen    uint32
	compLen   uint32
	status    uint16
}

const (
	recordMagic      = "KSPr"
	recordVersion    = 2
	recordHeaderSize = 64
	crcStart         = 12 // the CRC covers the record from here on (and bytes 4…7)

	// maxRecordSize bounds one record, so a corrupt length cannot make a
	// reader allocate gigabytes. Put refuses larger pages.
	maxRecordSize = 256 << 20
	// maxURLLen bounds a stored URL; real ones are far shorter.
	maxURLLen = 64 << 10
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// The fetch time is stored in Unix nanoseconds; the zero time.Time, which
// they cannot express, as zeroFetchTime.
const zeroFetchTime = math.MinInt64

var (
	minFetchTime = time.Unix(0, math.MinInt64+1)
	maxFetchTime = time.Unix(0, math.MaxInt64)
)

func encodeFetchTime(t time.Time) int64 {
	if t.IsZero() {
		return zeroFetchTime
	}
	return t.UnixNano()
}

func decodeFetchTime(ns int64) time.Time {
	if ns == zeroFetchTime {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// ErrCorrupt marks a record that fails its checks; errors wrapping it name
// the file and offset.
var ErrCorrupt = errors.New("corrupt record")

// checkPage reports why p cannot be stored, if it cannot.
func checkPage(p *Page) error {
	switch {
	case p == nil:
		return errors.New("storage: nil page")
	case p.URLID > maxIndexedID:
		return fmt.Errorf("storage: page %d (%s): URL id beyond the largest a store holds (%d)", p.URLID, p.URL, uint64(maxIndexedID))
	case len(p.URL) > maxURLLen:
		return fmt.Errorf("storage: page %d: URL of %d bytes exceeds %d", p.URLID, len(p.URL), maxURLLen)
	case p.Status < 0 || p.Status > math.MaxUint16:
		return fmt.Errorf("storage: page %d (%s): HTTP status %d out of range", p.URLID, p.URL, p.Status)
	case !p.FetchTime.IsZero() && (p.FetchTime.Before(minFetchTime) || p.FetchTime.After(maxFetchTime)):
		return fmt.Errorf("storage: page %d (%s): fetch time %v cannot be stored (years 1678 to 2262)", p.URLID, p.URL, p.FetchTime)
	case recordHeaderSize+16+len(p.URL)+len(p.Header)+len(p.Body) > maxRecordSize:
		return fmt.Errorf("storage: page %d (%s): %d body bytes exceed the record limit of %d", p.URLID, p.URL, len(p.Body), maxRecordSize)
	}
	return nil
}

// appendRecordPrefix appends the fixed header (with length, compLen and crc
// still zero) and the uncompressed metadata of p to dst. The compressed body
// is appended after it and finishRecord completes the header.
func appendRecordPrefix(dst []byte, p *Page, codec Codec) []byte {
	var ip []byte
	if p.ServerIP.IsValid() {
		ip = p.ServerIP.AsSlice()
	}
	var h [recordHeaderSize]byte
	copy(h[0:4], recordMagic)
	h[4] = recordVersion
	h[5] = byte(codec)
	h[6] = byte(len(ip))
	binary.LittleEndian.PutUint64(h[16:], p.URLID)
	binary.LittleEndian.PutUint64(h[24:], uint64(encodeFetchTime(p.FetchTime)))
	binary.LittleEndian.PutUint64(h[32:], uint64(p.Duration))
	binary.LittleEndian.PutUint32(h[40:], uint32(len(p.URL)))
	binary.LittleEndian.PutUint32(h[44:], uint32(len(p.Header)))
	binary.LittleEndian.PutUint32(h[48:], uint32(len(p.Body)))
	binary.LittleEndian.PutUint16(h[56:], uint16(p.Status))
	dst = append(dst, h[:]...)
	dst = append(dst, ip...)
	dst = append(dst, p.URL...)
	dst = append(dst, p.Header...)
	return dst
}

// finishRecord fills in the lengths and the CRC of the record rec, whose
// compressed body is its last compLen bytes.
func finishRecord(rec []byte, compLen int) {
	binary.LittleEndian.PutUint32(rec[12:], uint32(len(rec)))
	binary.LittleEndian.PutUint32(rec[52:], uint32(compLen))
	binary.LittleEndian.PutUint32(rec[8:], recordCRC(recordVersion, rec))
}

// recordCRC is the checksum of the whole record rec of the given version.
func recordCRC(version uint8, rec []byte) uint32 {
	if version == 1 {
		return crc32.Checksum(rec[crcStart:], castagnoli)
	}
	return crc32.Update(crc32.Checksum(rec[4:8], castagnoli), castagnoli, rec[crcStart:])
}

// parseRecordHeader decodes and checks the fixed header in b (at least
// recordHeaderSize bytes). It checks everything that can be checked without
// the rest of the record, so a reader never trusts a corrupt length.
func parseRecordHeader(b []byte) (recordHeader, error) {
	var h recordHeader
	if string(b[0:4]) != recordMagic {
		return h, fmt.Errorf("%w: bad magic %q", ErrCorrupt, b[0:4])
	}
	if b[4] != 1 && b[4] != recordVersion {
		// Not ErrVersion: a record of a newer version comes in a segment
		// of a newer version, refused before; here it is a flipped bit.
		return h, fmt.Errorf("%w: unknown record format version %d", ErrCorrupt, b[4])
	}
	if b[7] != 0 {
		return h, fmt.Errorf("%w: reserved byte %#x", ErrCorrupt, b[7])
	}
	h.version = b[4]
	h.codec = Codec(b[5])
	h.ipLen = b[6]
	h.crc = binary.LittleEndian.Uint32(b[8:])
	h.length = binary.LittleEndian.Uint32(b[12:])
	h.urlID = binary.LittleEndian.Uint64(b[16:])
	h.fetchTime = int64(binary.LittleEndian.Uint64(b[24:]))
	h.duration = int64(binary.LittleEndian.Uint64(b[32:]))
	h.urlLen = binary.LittleEndian.Uint32(b[40:])
	h.headerLen = binary.LittleEndian.Uint32(b[44:])
	h.rawLen = binary.LittleEndian.Uint32(b[48:])
	h.compLen = binary.LittleEndian.Uint32(b[52:])
	h.status = binary.LittleEndian.Uint16(b[56:])
	switch {
	case !h.codec.valid():
		return h, fmt.Errorf("%w: unknown codec %d", ErrCorrupt, h.codec)
	case h.ipLen != 0 && h.ipLen != 4 && h.ipLen != 16:
		return h, fmt.Errorf("%w: IP length %d", ErrCorrupt, h.ipLen)
	case h.length < recordHeaderSize || h.length > maxRecordSize:
		return h, fmt.Errorf("%w: record length %d", ErrCorrupt, h.length)
	case uint64(recordHeaderSize)+uint64(h.ipLen)+uint64(h.urlLen)+uint64(h.headerLen)+uint64(h.compLen) != uint64(h.length):
		return h, fmt.Errorf("%w: field lengths do not add up to the record length %d", ErrCorrupt, h.length)
	case h.urlID > maxIndexedID:
		return h, fmt.Errorf("%w: URL id %d, beyond the largest a store holds (%d)", ErrCorrupt, h.urlID, uint64(maxIndexedID))
	case h.rawLen > maxRecordSize:
		return h, fmt.Errorf("%w: body length %d", ErrCorrupt, h.rawLen)
	case h.codec == CodecNone && h.rawLen != h.compLen:
		return h, fmt.Errorf("%w: uncompressed body of %d bytes stored in %d", ErrCorrupt, h.rawLen, h.compLen)
	}
	return h, nil
}

// checkRecord verifies the CRC of the whole record rec (h.length bytes).
func checkRecord(h recordHeader, rec []byte) error {
	if got := recordCRC(h.version, rec[:h.length]); got != h.crc {
		return fmt.Errorf("%w: CRC-32C %08x, header says %08x", ErrCorrupt, got, h.crc)
	}
	return nil
}

// recordURL is the URL of the checked record rec.
func recordURL(h recordHeader, rec []byte) []byte {
	s := recordHeaderSize + uint32(h.ipLen)
	return rec[s : s+h.urlLen]
}

// recordBody is the stored (compressed) body of the checked record rec.
func recordBody(h recordHeader, rec []byte) []byte {
	return rec[recordHeaderSize+uint32(h.ipLen)+h.urlLen+h.headerLen : h.length]
}

// decodeRecord turns the checked record rec into a Page whose fields own
// their memory. dec decompresses the body.
func decodeRecord(h recordHeader, rec []byte, dec *decoder) (*Page, error) {
	p := &Page{
		URLID:     h.urlID,
		FetchTime: decodeFetchTime(h.fetchTime),
		Duration:  time.Duration(h.duration),
		Status:    int(h.status),
	}
	b := rec[recordHeaderSize:h.length]
	if h.ipLen > 0 {
		ip, _ := netip.AddrFromSlice(b[:h.ipLen])
		p.ServerIP = ip
		b = b[h.ipLen:]
	}
	p.URL = string(b[:h.urlLen])
	b = b[h.urlLen:]
	if h.headerLen > 0 {
		p.Header = append([]byte(nil), b[:h.headerLen]...)
	}
	b = b[h.headerLen:]
	body, err := dec.decode(h.codec, make([]byte, 0, h.rawLen), b, int(h.rawLen))
	if err != nil {
		return nil, fmt.Errorf("%w: %v body of page %d: %v", ErrCorrupt, h.codec, h.urlID, err)
	}
	p.Body = body
	return p, nil
}
