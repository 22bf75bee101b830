package warc

import (
	"crypto/rand"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"time"
)

// recordIDNamespace is the UUID namespace of kspider's name-based record ids
// (a random UUID chosen once; changing it changes every exported id).
const recordIDNamespace = "\x6b\x73\x70\x1d\x9e\x2a\x4c\x51\x8f\x0b\x3e\x77\xc2\x19\xa4\x5d"

// ResponseRecordID returns the record id of the response record for the page
// with URL id urlID and url fetched at fetched: a version 5 UUID, so the same
// stored page always gets the same id.
func ResponseRecordID(urlID uint64, url string, fetched time.Time) string {
	h := sha1.New()
	h.Write([]byte(recordIDNamespace))
	var n [16]byte
	binary.BigEndian.PutUint64(n[:8], urlID)
	binary.BigEndian.PutUint64(n[8:], uint64(fetched.UnixNano()))
	h.Write(n[:])
	h.Write([]byte(url))
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | 0x50 // version 5
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	return formatUUID(u)
}

// RandomRecordID returns a record id made of a random (version 4) UUID.
func RandomRecordID() (string, error) {
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		return "", fmt.Errorf("warc: record id: %w", err)
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return formatUUID(u), nil
}

func formatUUID(u [16]byte) string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return "<urn:uuid:" + string(b[:]) + ">"
}
