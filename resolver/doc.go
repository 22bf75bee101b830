// Package resolver is kspider's own caching DNS stub resolver (thesis §5,
// "Parallel DNS Resolver"). It never goes through the C library: it speaks
// DNS with github.com/miekg/dns over UDP, falling back to TCP when an answer
// is truncated, to the servers of its configuration or, by default, those of
// /etc/resolv.conf.
//
// Many queries are in flight at once over a small pool of UDP sockets (at
// most 32,768 on each: past that a query fails at once, a failure cached
// as a server's for ServFailTTL, no server marked down); each
// reply is matched to its query by id, question and the server's address and
// port, so a reply that does not fit a query we sent (wrong id, wrong source,
// wrong question, malformed, not a response) is dropped and counted, and the
// real answer is still awaited. Query ids come from a ChaCha8 generator
// seeded from crypto/rand; each socket is bound to a kernel-chosen (random)
// port. Concurrent lookups of one name share one resolution.
//
// Servers are tried in order with a per-query timeout. A server that times
// out is marked down for Config.DownFor and skipped; once that time has
// passed exactly one query probes it again, so a dead server costs one
// timeout per DownFor, not one per query. SERVFAIL and REFUSED move on to
// the next server without marking the first one down.
//
// The cache is the thesis's hash table of buckets × slots with FIFO
// replacement inside a bucket (2048 × 8 by default, at most: it starts at
// 16 × 8 and grows fourfold as names come, cache_grow.go). Entries honour the
// records' TTLs (one with the high bit set read as 0, RFC 2181 §8) clamped
// to [MinTTL, MaxTTL]; NXDOMAIN and "no address"
// answers are cached for NegativeTTL, SERVFAIL and timeouts for ServFailTTL.
// CNAME chains are followed up to MaxCNAME links, and loops are detected.
// A cache hit takes no lock (entries are read under a per-entry sequence
// counter) and allocates nothing when the caller's slice has room (see
// AppendLookup).
package resolver
