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
	shift uint // the hash's top bits pick the slot
}

func newSentCache(n int) *sentCache {
	size, bits := 1, uint(0)
	for size < n {
		size <<= 1
		bits++
	}
	return &sentCache{seed: maphash.MakeSeed(), slots: make([]atomic.Uint64, size), shift: 64 - bits}
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

func (c *sentCache) slot(h uint64) *atomic.Uint64 { return &c.slots[h>>c.shift&uint64(len(c.slots)-1)] }
func (c *sentCache) seen(h uint64) bool           { return c.slot(h).Load() == h }
func (c *sentCache) add(h uint64)                 { c.slot(h).Store(h) }
