// Package urltree is the KSpider URL tree: a set of URLs that assigns each
// a dense id (0, 1, 2, … in order of first addition, never reused) and
// stores it prefix-compressed, in memory-mapped files a node resumes from
// after a crash.
//
// # The tree
//
// Every URL is a node of an AVL tree ordered by the URL bytes. Its entry
// stores not the URL but the id of a reference URL, the length of the
// prefix the two share, and the differing tail. The reference is the
// neighbour (in byte order) sharing the longest prefix, which an insertion
// meets on its path anyway; if that neighbour shares at least as much with
// its own reference, the entry refers past it, so every hop of a Get adds
// bytes.
//
// A search compares the URL with a node starting at the smaller of its
// common prefix lengths with the two bounds of the descent (every URL
// between the bounds shares that prefix), and follows a node's reference
// chain only while it still covers positions at or after that point.
//
// # Files
//
// A tree is a directory of four files, each starting with a 64-byte header
// (magic, FormatVersion; see file.go):
//
//	urltree.meta   the commit record: two checksummed slots (meta.go)
//	urltree.nodes  tree nodes, 8 bytes per id: left, right, balance (node.go)
//	urltree.ptrs   offset of every 16th arena entry, 8 bytes each (entry.go)
//	urltree.arena  entries in id order: lengths, reference, tail (entry.go)
//
// The array files are mapped in full and grow by a quarter at a time;
// space is reserved with fallocate before it is mapped, so a full disk
// makes Add fail with an error instead of the process dying of SIGBUS.
// Node links have 31 bits, so a tree holds up to 2^31 URLs; arena offsets
// have 64 bits.
//
// # Durability
//
// Sync writes back the arena and pointer files, then the next commit slot
// with the number of durable entries. Open trusts only that prefix: after a
// crash, entries past it are ignored (and later overwritten), so a URL
// added after the last Sync is wholly there or wholly gone. Open checks
// every durable entry's bounds and reference, so later reads cannot run
// out of bounds. The node file is trusted only after a clean Close (its
// structure is checked); otherwise Open rebuilds it by reinserting every
// durable URL in id order, which takes about as long as adding them did.
//
// # Concurrency
//
// One writer and any number of readers: Add, Sync and Close take a write
// lock; Find, Get, Len and the iterators a read lock.
package urltree
