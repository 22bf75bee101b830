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
// (magic, FormatVersion, the tree's ID, header checksum; see file.go):
//
//	urltree.meta   the commit record: two checksummed slots (meta.go)
//	urltree.nodes  tree nodes, 12 bytes per id (node.go)
//	urltree.ptrs   arena offset of every 16th entry (entry.go)
//	urltree.arena  entries in id order: length, lcp, reference, coded tail,
//	               and a checksum after every block of 16 (entry.go)
//
// Integers are little endian, except key-word windows and Huffman codes,
// which are big endian so that they compare and decode MSB first. The
// array files are mapped in full and grow by a quarter at a time; space is
// reserved with fallocate before it is mapped, so a full disk makes Add
// fail with an error instead of the process dying of SIGBUS (a writer's
// Open cuts a file extended with holes back to its data and reserves the
// rest). Node links
// have 31 bits, so a tree holds up to 2^31 URLs; arena offsets have 64.
//
// # Durability
//
// Sync writes back the arena and pointer files, then the next commit slot
// with the number of durable entries, the arena length and the checksum of
// the last, unfinished block. Open trusts only that prefix: after a crash,
// entries past it are ignored (a writer's Open zeroes them), so a URL
// added after the last Sync is wholly there or wholly gone.
//
// # Damage
//
// Everything stored is checksummed with CRC-32C: the file headers (so a
// damaged version field is a corrupt header, not a newer format), the
// commit slots, every block of 16 arena entries (its trailer, or the commit
// for the last block), and the node file (its checksum is in the commit a
// clean Close writes). The pointer file needs none of its own: each
// pointer must point at a block that verifies, and one that does not while
// its block verifies where the block before ends is reported as damage in
// the pointer file. Open verifies every committed block and checks every
// entry's bounds, reference and code, so a Find or Get never returns a URL
// other than the one added: damage in the arena, pointers, meta or a header
// makes Open fail with a *CorruptError naming the file and the offset.
// Damage in the node file costs nothing: Open rebuilds it, as after a
// crash, by reinserting every durable URL in id order, which takes about
// as long as adding them did (2.8 s per million URLs; a clean open takes
// 0.3 s).
//
// Check (check.go) verifies a tree directory the way bbolt check does and
// lists all the damage; with repair it rebuilds the tree from the entries
// whose blocks verify, keeping every id. An id whose entry is damaged, or
// whose reference chain passes through a damaged entry, becomes a lost
// entry: Get returns ErrLost for it, and Lost counts them. The damaged
// files are moved into the directory's damaged/ folder, never deleted. A
// repair also converts a tree of format version 1 (without checksums),
// which Open refuses; it refuses files of a newer version.
//
// # Identity
//
// A new tree draws a random 16-byte ID (Tree.ID) and records it in the
// header of each of its files (format version 3). Open refuses a file
// whose ID is not the meta file's with ErrForeign naming both: a file
// copied or swapped in from another tree would otherwise be read as this
// one's. Check reports it and will not repair such a tree, which would
// mix the two; a repair keeps the ID. A tree of format version 2 has none:
// it is read as it is, and a writer's Open gives it one (the array files
// first, the meta file last, so a crash in between leaves a tree the next
// Open upgrades again). Whoever keeps data by a tree's ids (the scheduler)
// records the ID to refuse another tree's.
//
// # Concurrency
//
// One writer and any number of readers: Add, Sync and Close take a write
// lock; Find, Get, Len and the iterators a read lock.
// A tree open for writing holds an exclusive flock on urltree.meta, so a
// second writer (another Open, or Check with repair) gets ErrLocked; a
// ReadOnly Open takes no lock.
package urltree
