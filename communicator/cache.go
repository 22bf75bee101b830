package communicator

import (
	"encoding/binary"
	"hash/maphash"
	"sync/atomic"
)

// sentCache remembers hashes of recently sent (peer, tag, URL) triples in a
// direct-mapped table: a popular link is sent once while it stays in the
// table, and a collision only costs a resend. Lock-free: Send runs on
// many goroutines.
type sentCache struct {
	seed  maphash.Seed
	slots []atomic.Uint64
	mask  uint64
}

func newSentCache(n int) *sentCache {
	size := 1
	for size < n {
		size <<= 1
	}
	return &sentCache{seed: maphash.MakeSeed(), slots: make([]atomic.Uint64, size), mask: uint64(size - 1)}
}

func (c *sentCache) hash(to NodeID, tag uint64, url []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	var pre [10]byte
	binary.LittleEndian.PutUint16(pre[:], uint16(to))
	binary.LittleEndian.PutUint64(pre[2:], tag)
	h.Write(pre[:])
	h.Write(url)
	return h.Sum64() | 1 // 0 marks an empty slot
}

func (c *sentCache) seen(h uint64) bool { return c.slots[h&c.mask].Load() == h }
func (c *sentCache) add(h uint64)       { c.slots[h&c.mask].Store(h) }
