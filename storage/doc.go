// Package storage is kspider's page store: the Storage Manager of the thesis
// (§8). Fetched pages flow through a pipeline
//
//	Put ─▶ incoming pool ─▶ compressor goroutines ─▶ compressed pool ─▶ one saver per directory
//
// Both pools are bounded channels, so a crawl faster than its disks is slowed
// down (Put blocks) rather than losing pages. Each saver owns one data
// directory - one disk - and takes the next compressed record whenever it is
// free, so a fast disk takes more records than a slow one and a failed disk
// takes none.
//
// A caller that must hold a page back before it may be stored can compress
// it first (Encode, on its own goroutine), reuse the page's buffers at once,
// and later hand the record to the compressed pool (PutEncoded): it then
// holds the compressed record, not the page, while it waits.
//
// # Directory layout
//
// A data directory holds
//
//	LOCK               flock(2)ed by the one Store writing the directory (a link there is refused)
//	STORE              the store's ID (identity.go: magic, version 1, 16 random bytes, CRC-32C)
//	00000001.seg …     segment files, appended to sequentially, rolled at Config.SegmentSize
//	url.idx            the index: URL id → (segment, offset), mmapped
//
// # Store identity
//
// URL ids are one URL tree's, so records of another store under them are
// other pages. The first Store to open a store gives it an ID - the URL
// tree's (Config.TreeID, as the spider opens it), else a random one -
// kept in each data directory's STORE file and in the header of every
// segment written since. Open refuses a store of another tree than
// Config.TreeID (a node's storage directories swapped for another's), and
// Open and OpenReader refuse directories of two stores
// listed together (ErrForeign, naming both files); a new directory
// listed with a store's joins it. A segment naming another store (copied
// in) is damage over its whole length: none of its records is read or
// indexed, the pages the index had there are lost, kspider check --repair
// moves it into damaged/. A damaged STORE file is damage a Reader reads
// past (the segments name the store; segments naming two stores are then
// an error naming both, not the newest's store taken) and a writer
// refuses; check --repair sets it aside and writes it anew from the
// segments. Stores from before
// identities (segments of version 1 and 2, no STORE file) are read as
// they are and given an ID by the next Store; their old segments name no
// store and are not checked.
//
// # Segment files (format version 3)
//
// A segment starts with a 40-byte header (see segmentHeaderSize in segment.go):
// the magic "KSPS", the format version, the segment's number (the same as in
// its name), the CRC-32C of those 12 bytes, the store's ID and the CRC-32C
// of all before it. Records follow back to back. Version 2 segments (a
// 16-byte header, no store ID) and version 1 (no header CRC either),
// records alike, are read as they are; a newer version is refused with an
// error naming both versions (so is version 3 by a kspider reading 1 and 2
// only). A damaged header is reported, and the records behind it are still
// read: each has its own checksum.
//
// Every record is self-describing, so a segment can be read without its
// index, and a damaged record can be skipped by searching for the next
// magic. A record is a 64-byte fixed header (recordHeader in record.go, all
// integers little-endian) followed by the server IP (0, 4 or 16 bytes), the
// URL, the response header block and the body as compressed by the record's
// codec. The CRC-32C (Castagnoli) in the header covers every byte of the
// record but the magic and the CRC field itself, so a flipped bit anywhere -
// in the codec, the lengths, the URL or the body - is detected before
// anything is decoded. (Record version 1 left bytes 4…7, version and codec,
// out of the CRC; such records are still read.)
//
// Codecs: 0 none, 1 LZO1X-1 (the default, as in the thesis; lzo.go is
// liblzo 2.10's lzo1x_1 compressor, allocation-free, whose output any LZO1X
// decoder reads, and a bounds-checked decoder), 2 S2 and 3 zstd
// (github.com/klauspost/compress). The codec is a
// field of each record, so a store may mix them; a body the configured codec
// does not shrink (an image, an archive) is stored with codec none.
//
// # Index (format version 4)
//
// url.idx is a 4096-byte header page (indexheader.go: the header twice, in
// two 2048-byte slots each with its CRC-32C, written in turn, so a
// checkpoint cut short by a crash leaves the previous one intact) followed by an array of 16-byte entries addressed by URL id:
// entry i, at byte 4096+16·i, holds the segment number (uint32, 0 = no
// record), the record's offset in that segment (uint64) and the CRC-32C of
// both mixed with the URL id (uint32). Every id below the highest one set
// has a non-zero entry (a "none" entry when the directory holds no record
// of it), and the header says up to where: a zeroed entry there is damage,
// so a reader never takes a URL whose latest fetch is in this directory
// for one it does not hold, and return an older fetch from another. Get(urlID) is therefore one lookup in
// memory and one read of the segment. The file is grown with fallocate(2)
// before it is mapped larger, so a full disk is a write error, not a SIGBUS;
// a growth the disk has no room for is refused before anything is
// allocated. URL ids are the URL tree's, below 2^32: Put refuses a larger
// one, and a record naming one is damage like a failed checksum, so the
// index never grows past 64 GiB.
//
// The index is a cache of what the segments hold. An index of version 1
// (entries without CRC), 2 (no "none" entries), 3 (one header slot) or
// with both header slots damaged is rebuilt from the segments, by a writer
// on disk and by a Reader in memory; one damaged slot is reported
// (TornHeader) and the other used.
//
// An index entry is set only after its record has been synced, so the index
// never points at data a crash could take away. The header holds a
// checkpoint (segment, offset) up to which every record is known to be in
// the index; it is written only after the entries it covers have been
// msynced. Opening a directory re-reads the segments from the checkpoint on
// and so rebuilds whatever the index missed.
//
// # Re-crawls: the latest record wins
//
// When a URL id is stored more than once, Get returns, and Scan visits, only
// the latest record: within a directory the one written last (the index
// simply points at it); across directories the one with the later FetchTime
// (on a tie, the directory listed later). Superseded records stay in the
// segments until a future compaction.
//
// The records of one URL id name one URL: the URL tree numbers a URL once,
// and a re-crawl stores it again. A later record naming another URL is a
// page of another crawl (a directory of another store listed with this
// one's, or its pages written into one): a Scan reports such ids as
// damage, once per pair of directories, and counts the pages they hide
// lost.
//
// # Durability and crashes
//
// A record is durable once its saver has written and fdatasynced it; savers
// sync every Config.SyncEvery records or Config.SyncInterval, whichever comes
// first (or as soon as their input is empty while Store.SyncWhenIdle is on),
// and report the URL ids just made durable through Config.OnDurable
// (Store.Durable counts them). After a crash (kill -9, power loss) the next
// Open truncates a torn record at the tail of the last segment (unless the
// index has it: a durable record damaged, kept for kspider check, new
// records then going to a new segment) and re-indexes the records after
// the checkpoint; every record reported durable is kept.
//
// A saver whose directory fails (disk full, I/O error, read-only file
// system) stops with an error naming the directory; the records it had not
// yet made durable go back to the compressed pool and the other savers
// store them. Nothing written before is touched. Put fails only when every
// saver has stopped.
//
// # Reading
//
// A Reader (OpenReader) serves Get by URL id and Scan over all records, one
// goroutine per directory. It never writes: records a crashed writer left
// beyond the index checkpoint are indexed in memory, and so are all of a
// directory's without a usable index, about 50 bytes a record with no
// bound (some 5 GB for 100 million pages): the Reader says how many and
// how much, and kspider check --repair rewrites the index on disk; such an
// open reads every segment, and OpenReaderContext counts the bytes it
// reads (OpenProgress) and ends with its context, as a Scan's rebuild of
// a view ends with the Scan's. It may be opened on a
// store that is being written: Scan then reads the segments as they were at
// OpenReader (a record being appended at that moment may be reported
// damaged; a segment cut meanwhile, as a writer's recovery cuts a torn
// tail, is read up to the cut, the bytes gone a damaged region), while
// Get follows the live index, apart from URL ids beyond the index's size
// at OpenReader.
//
// # Damage: readers never lie
//
// A Reader that meets damage skips exactly the damaged bytes and keeps
// everything else; it counts and describes what it met (ScanStats.Damage,
// Errors with file and offset, Lost pages):
//
//   - a record failing its checks: Scan resynchronises on the next valid
//     record and reports the region skipped; Get returns an error naming
//     the file and offset. A page's body may hold records that pass every
//     check (a page that is a segment of a kspider store), so the search
//     starts behind a record whose checksum alone failed, and takes only
//     a record the index points at, after the checkpoint too (every
//     record reported durable is indexed; one never synced, behind
//     damage, is counted in the damaged region, and a writer's recovery
//     cuts it with a torn tail). The bytes the search checksums for
//     candidates it rejects are bounded (searchBytesPerByte): a region of
//     candidates claiming large records is passed over in linear time;
//   - bytes that cannot be read (EIO: a bad sector): a damaged region like
//     any other, found block by block (4 KiB) and marked Unreadable; a
//     writer's recovery fails on them instead, so that an unreadable tail
//     is never cut away as a torn one;
//   - url.idx truncated while mapped (by hand, another program): an entry
//     beyond the cut, which would be a SIGBUS, is damage like a bad
//     entry (the view rebuilt from the segments); a writer's saver stops
//     with an error naming the file, its synced records re-indexed at the
//     next open;
//   - a damaged segment header: reported, the records are still read;
//   - an index entry failing its CRC or zeroed below the header's dense
//     mark (Get then rebuilds the view before it answers), missing for a record the segments
//     hold before the checkpoint, or pointing at anything but a later
//     record of its URL id: the directory's index is rebuilt in memory
//     from the segments (and the damage reported), so no page is dropped
//     as "superseded" by a damaged entry;
//   - a link, FIFO or directory under a segment's name (never opened):
//     reported with what it is, whether in the numbering or after it;
//   - segments shorter than the index checkpoint, missing from the
//     numbering, or ending before records the index knows (after the
//     checkpoint too, unless a writer is at work: an entry is set only
//     once its record is synced): reported, with the pages lost.
//
// After a full Scan, the index is checked entry by entry (verifyIndex), so
// damage in entries of pages whose records are gone is reported too, and
// so are entries pointing at no record of their URL id (counted against
// the records the Scan found where the index points). An index found
// damaged, the view rebuilt, still counts the pages its entries that pass
// their CRC name in damaged or missing bytes, the segments holding no
// other record of them.
// kspider check (Check) runs all of this over a directory and, with
// repair, rewrites what can be rebuilt.
package storage
