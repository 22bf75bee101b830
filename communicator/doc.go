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
//	2      1    flags: bit 0 = carries items
//	3      1    number of acknowledgement ranges
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
//	...    ...  items, to the tag: uvarint(bytes shared with the previous
//	            item), uvarint(suffix length), uvarint(tag), suffix
//	end-16 16   HMAC-SHA-256 over everything before it, first 16 bytes
//
// Items in a batch are sorted before front coding, so the links of one
// page (and neighbours in a sorted window of 16 datagrams) share their
// prefixes; order within a batch is not kept.
//
// # Reliability
//
// Each direction between two nodes numbers its batches 1, 2, ... per
// sender epoch. A sender keeps up to Config.Window batches unacknowledged
// and retransmits each with exponential back-off (RetransmitMin doubling
// to RetransmitMax) and ±25% jitter. Acknowledgements ride on every
// datagram going back, or leave on their own. A receiver acknowledges a
// batch only when its handler's effect is durable: when the handler
// returns (Config.AckOnReturn) or when the application calls Durable(n)
// for the delivery number n the handler was given. Duplicates are
// dropped by (sender, epoch, sequence number).
//
// A receiver accepts items only in datagrams that name its current epoch;
// anything else is dropped and answered with an acknowledgement carrying
// the epoch (one round trip after each start). So a datagram recorded
// before a restart can never be replayed into the new incarnation, and a
// sender epoch older than one seen is refused.
package communicator
