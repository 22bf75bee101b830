package cluster

import (
	"fmt"
	"strings"

	"github.com/kspider/kspider/spider/scope"
)

// Partition says what of a URL decides the node that owns it.
type Partition uint8

const (
	ByURL    Partition = iota // the whole canonical URL (the thesis's choice; best balance)
	ByHost                    // the host name: a host's URLs all on one node, fewest URLs exchanged
	ByDomain                  // the registrable domain (eTLD+1): a site's subdomains together
)

// ParsePartition reads the config's cluster.partition value.
func ParsePartition(s string) (Partition, error) {
	switch s {
	case "", "url":
		return ByURL, nil
	case "host":
		return ByHost, nil
	case "domain":
		return ByDomain, nil
	}
	return 0, fmt.Errorf("partition %q is not \"url\", \"host\" or \"domain\"", s)
}

func (p Partition) String() string {
	switch p {
	case ByURL:
		return "url"
	case ByHost:
		return "host"
	case ByDomain:
		return "domain"
	}
	return fmt.Sprintf("Partition(%d)", uint8(p))
}

// Partitioner maps a canonical URL to the node that owns it. It is a pure
// function of the URL, the partition and the number of nodes, so every
// node computes the same owner.
type Partitioner struct {
	By    Partition
	Nodes int // N >= 1
}

// Owner returns the node (0..N-1) owning canonical URL u. A URL whose host
// cannot be found (not http(s)) is partitioned by its whole text.
func (p Partitioner) Owner(u string) int {
	if p.Nodes <= 1 {
		return 0
	}
	key := u
	switch p.By {
	case ByHost:
		if h := HostOf(u); h != "" {
			key = h
		}
	case ByDomain:
		if h := HostOf(u); h != "" {
			key = scope.Registrable(h)
		}
	}
	return Reduce(OwnerHash(key), p.Nodes)
}

// OwnerHash is the partition hash: FNV-1a 64 over the bytes (ASCII letters
// lower-cased, so a host hashes the same in any case) started from the
// state after the domain-separation prefix "kspider/owner\x00", finished
// with the SplitMix64 mixer. The prefix makes it independent of the
// scheduler's phase hash (scheduler.HostHash, plain FNV-1a): with host
// partitioning and the same hash, a node would own only hosts of the phases
// it never works on together. OwnerHash("example.com") = 0xb23a6b8d62234afc
// (pinned by a test: every node must compute the same).
func OwnerHash(key string) uint64 {
	h := uint64(ownerSeed)
	for i := 0; i < len(key); i++ {
		c := key[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		h ^= uint64(c)
		h *= fnvPrime
	}
	return mix(h)
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// ownerSeed is FNV-1a 64 of "kspider/owner\x00" (a constant, checked by a test).
const ownerSeed = 0xa9177609830ac549

func fnv(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

func mix(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

// Reduce maps hash h onto 0..n-1 by its high bits (Lemire's multiply-shift),
// so the owner does not depend on the low bits "mod P" gives the phase.
func Reduce(h uint64, n int) int {
	hi := (h >> 32) * uint64(n)
	return int(hi >> 32)
}

// HostOf is the host name of canonical http(s) URL u, lower-cased, without
// user info and port: "" when u is not http(s).
func HostOf(u string) string {
	rest, ok := strings.CutPrefix(u, "https://")
	if !ok {
		if rest, ok = strings.CutPrefix(u, "http://"); !ok {
			return ""
		}
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = rest[i+1:]
	}
	if strings.HasPrefix(rest, "[") { // IPv6 literal
		if i := strings.IndexByte(rest, ']'); i >= 0 {
			return rest[:i+1]
		}
		return rest
	}
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		rest = rest[:i]
	}
	return strings.ToLower(strings.TrimSuffix(rest, "."))
}
