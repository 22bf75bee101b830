// Package urltree is the KSpider URL tree: a set of URLs that assigns each
// a dense id (0, 1, 2, … in order of first addition, never reused) and
// stores it prefix-compressed, in memory-mapped files a node resumes from
// after a crash.
//
// # The tree
//
// Every URL is a node of an AVL tree ordered by the URL bytes. Its entry
// stores not the URL but a reference, the length of the prefix the URL
// shares with it, and the differing tail, Huffman coded. The reference is
// the neighbour (in byte order) sharing the longest prefix, which an
// insertion meets on its path anyway, adjusted so that Get stays cheap
// (entry.go, chooseRef): the entry refers past references that would add
// no bytes, stores itself the bytes of hops that would add four bytes or
// fewer, and takes a leading "http://", "https://www." and the like from a
// built-in prefix (static.go). A Get follows 1.3 hops on average.
//
// A node is 12 bytes: two child links, the balance, and a key word: how
// many bytes the URL shares with its closer bound (the nearest ancestor on
// either side) and its next three bytes. A search knows how many bytes the
// URL it looks for shares with both bounds, so four steps in five decide
// from the key word alone and never touch the arena (window.go). When they
// do, the comparison starts at the first byte not known to be equal and
// follows the reference chain only until it meets a node on the search
// path, whose common prefix with the URL is known (search.go).
//
// # Files
//
// A tree is a directory of four files, each starting with a 64-byte header
// (magic, FormatVersion; see file.go):
//
//	urltree.meta   the commit record: two checksummed slots (meta.go)
//	urltree.nodes  tree nodes, 12 bytes per id (node.go)
//	urltree.ptrs   arena offset of every 16th entry (entry.go)
//	urltree.arena  entries in id order: length, lcp, reference, coded tail
//	               (entry.go)
//
// Integers are little endian, except key-word windows and Huffman codes,
// which are big endian so that they compare and decode MSB first. The
// array files are mapped in full and grow by a quarter at a time; space is
// reserved with fallocate before it is mapped, so a full disk makes Add
// fail with an error instead of the process dying of SIGBUS. Node links
// have 31 bits, so a tree holds up to 2^31 URLs; arena offsets have 64.
//
// # Durability
//
// Sync writes back the arena and pointer files, then the next commit slot
// with the number of durable entries and the arena length. Open trusts only
// that prefix: after a crash, entries past it are ignored (and later
// overwritten), so a URL added after the last Sync is wholly there or
// wholly gone. Open checks every durable entry's bounds, reference and
// code, so later reads cannot run out of bounds. The node file is trusted
// only after a clean Close (its structure is checked); otherwise Open
// rebuilds it by reinserting every durable URL in id order, which takes
// about as long as adding them did (2.8 s per million URLs; a clean open
// takes 0.3 s).
//
// # Concurrency
//
// One writer and any number of readers: Add, Sync and Close take a write
// lock; Find, Get, Len and the iterators a read lock.
package urltree
