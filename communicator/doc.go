// Package communicator carries small byte strings (URLs with a small
// header, such as link depth) from one node of the cluster to another in
// batched, acknowledged, authenticated UDP datagrams: the thesis's
// Communicator (§2.5). It knows nothing of crawling.
//
// # Datagram
//
// Every datagram is at most Config.Payload bytes (default 1232, at most
// 1472) and is sent with the don't-fragment flag (IP_PMTUDISC_DO), so an
// oversized one fails at send instead of being fragmented. All integers
// are big-endian:
//
//	offset size
//	0      1    version = 1
//	1      1    key id (which shared secret the tag is made with)
//	2      1    flags: bit 0 = carries items, bit 1 = suffixes uncoded
//	3      1    number of acknowledgement ranges, at most 16 (more:
//	            a malformed datagram)
//	4      2    sender node id
//	6      2    receiver node id
//	8      8    sender epoch (start time in ms << 16 | 16 random bits)
//	16     8    receiver epoch as the sender last saw it (0: never)
//	24     4    sequence number of this batch (0: acknowledgement only)
//	28     4    base: the sender's lowest unacknowledged sequence number
//	32     4    cumulative ack: every sequence number <= this one, sent by
//	            the receiver to the sender, is acknowledged
//	36     ...  ranges: per range uvarint(gap from the previous range's
//	            end, or from the cumulative ack; >= 2), uvarint(length-1)
//	...    ...  items: uvarint(count), then per item uvarint(bytes shared
//	            with the previous item), uvarint(suffix length),
//	            uvarint(tag); then all suffixes as one bit stream in the
//	            static Huffman code of huffman.go, zero-padded to a byte
//	            (with flag bit 1: the plain bytes of a single item whose
//	            code would not fit)
//	end-16 16   HMAC-SHA-256 over everything before it, first 16 bytes
//
// Items in a batch are sorted before front coding, so the links of one
// page (and neighbours in a sorted window of 16 datagrams) share their
// prefixes; order within a batch is not kept. The Huffman code, fitted to
// the byte frequencies of real URLs, gives common URL bytes 3 to 7 bits.
//
// # Reliability
//
// Each direction between two nodes numbers its batches 1, 2, ... per
// sender epoch, up to 2^32-2^20: a start that has used them all sends
// that peer nothing more until it restarts, and says so (the log once,
// PeerStats.Exhausted). A sender keeps up to Config.Window batches unacknowledged
// and retransmits each with exponential back-off (RetransmitMin doubling
// to RetransmitMax) and ±25% jitter. Acknowledgements ride on every
// datagram going back, or leave on their own. A receiver acknowledges a
// batch only when its handler's effect is durable: when the handler
// returns (Config.AckOnReturn) or when the application calls Durable(n)
// for the delivery number n the handler was given (DurableFrom(id, n):
// for peer id's batches only). Duplicates are
// dropped by (sender, epoch, sequence number).
//
// The retransmission timer starts from the measured round-trip time
// (RFC 6298, at least RetransmitMin). A batch that later-sent batches have
// overtaken is sent again at once; when the timer fires and nothing sent
// after a batch has been acknowledged, the peer is stalled or down, so only
// the oldest batch goes again, as a probe. A peer heard from with a new
// epoch (first contact, a restart) is alive but dropped or forgot every
// batch in flight: they all go again at once, not a probe it might hold.
//
// A receiver accepts items only in datagrams that name its current epoch;
// anything else is dropped and answered with an acknowledgement carrying
// the epoch (one round trip after each start, during which a sender keeps
// a single batch in flight). So a datagram recorded before a restart can
// never be replayed into the new incarnation, and a sender epoch older
// than one seen is refused.
//
// # Guarantees
//
//   - Loss, duplication, reordering, replay, retransmission, a peer down
//     for any time, a clean restart (Close, New) of the receiver: every item
//     reaches the peer's handler exactly once. (The state file keeps only
//     how far each sender is acknowledged in order; Close sends the
//     acknowledgements of batches that arrived out of order, and should
//     the network lose those, the batches are delivered again.)
//   - A clean restart of the sender: Close writes the memory queue and the
//     batches in flight to the spill file, and the next start sends them
//     under its new epoch; batches that had arrived but whose ack had not
//     come back are delivered again (at most a window).
//   - kill -9 of the receiver: no item is lost (only durable batches were
//     acknowledged). A batch its handler had seen but that was not yet
//     acknowledged, or whose acknowledgement was lost, is delivered again
//     after the restart. The receive positions in the state file (saved
//     at most every two flush intervals while they move, 100 ms by
//     default; with Lazy, at most every SpillUpkeepEvery) make that window
//     small, not empty: the handler must be idempotent, as the node's is
//     (the URL tree adds a URL once; a repeat is not admitted as new).
//   - kill -9 of the sender: items in its memory queue (control items
//     too: they wait in memory) and in flight are lost; spilled items survive once written (Sync, or the next tick),
//     and items of spill-file batches in flight may be delivered again. An
//     item counts as handed over only once acknowledged (Backlog); how a
//     node recovers the rest after a crash is the cluster's choice.
//   - Order: per peer, control items (Config.ControlTag) leave first;
//     the other items leave in the order of Send, in windows of
//     SortWindow bytes (sorted within a window), spilled items after the
//     memory queue that was there first; a lost batch arrives after later
//     ones. Handlers must not rely on order.
//
// # A peer that is down
//
// A peer is reported Down when batches have waited unacknowledged for
// DownAfter. Its items then fill the memory queue (QueueBytes), and
// further ones are appended to SpillDir/spill-<self>-<peer>; once the peer
// answers they are sent in order, and the file is truncated when all is
// acknowledged (under steady traffic, rewritten without a large
// acknowledged part: spillcompact.go). Items spilled in this run are also kept in memory (up to
// 512 KiB per peer) and sent from there: the file is read only for items
// of an earlier run or beyond that (spillmem.go). Stats shows per peer the queue, the items in flight, the
// spill file's size and unread items, retransmissions and the last ack;
// with Config.ControlTag, how many of the items waiting are control
// items (a node's hellos), which a peer that is gone for good has too.
// The spill file format is documented in spill.go, the state file's in
// state.go.
//
// # Security
//
// Every datagram is checked, in this order, for: size, version, key id
// (one of at most two keys, for rotation), sender node id, the sender's
// address, the HMAC-SHA-256 tag, the receiver node id, the sender epoch,
// the receiver epoch, the sequence number's window and freshness, and the
// items' encoding. A failure drops the datagram and counts it by reason
// (Stats.Drops). Without the secret nothing can be injected; a replay is
// a duplicate or a stale epoch. The first stale epoch of each peer is
// logged: a peer restarted without its state file and with its clock
// behind an epoch seen is refused, not only a replay.
package communicator
