// Package scheduler is the node's scheduler (thesis §4 and §6): it owns
// what the node knows about every URL id and every host, and hands out
// per-host lists of URL ids to fetch, politely and inside the active
// phase, with no knowledge of HTTP. It also holds the phase clock the
// phases run on.
//
// # URL states
//
// Every URL id (the URL tree's dense ids) has an 8-byte record in
// sched.states (state.go): its State, link depth, retry count, host
// number and the redirects in a row that led to it (AddRedirect, since
// format version 4), with a 16-bit check. The states:
//
//	absent        never added (a gap record below the highest id, zero above it)
//	in-list       waiting to be handed out
//	in-progress   in a list handed out; in-list again after a restart
//	stalled       failed for now; retried after back-off, at most MaxRetries times
//	completed     fetched
//	redirected    fetched; the answer was a redirect
//	filtered      out of scope, never fetched
//	robots-denied robots.txt forbids it
//	failed        failed for good, or too many temporary failures
//
// # Hosts and phases
//
// Hosts have dense numbers too, given by Host on first sight and kept in
// sched.hosts (a 64-byte record each: hash, next start, Retry-After,
// Crawl-delay, robots status, error streak, pages admitted; hosts.go) and
// sched.names (the names back to back, each 1 to MaxHostLen = 266 bytes:
// the node's host key, "https:" and a port around a name of up to 254; a
// build from before, which took 255, reports a longer one as damage). A
// host's phase is
// HostHash(name) mod P, HostHash being FNV-1a 64 over the lower-cased name
// finished with the SplitMix64 mixer: the same on every node, run and
// architecture. The record keeps the hash, so the scheduler knows a URL's
// host and phase from its state record alone.
//
// # The window and the buckets
//
// The sliding window covers Window ids from the oldest unfinished one
// (window.go). A scan walks it once per phase and queues every in-list or
// stalled id of the active phase at its host's element. Hosts with queued
// ids take one of Rows rows of their column (a hash of the name keyed
// per Open, so names cannot be chosen to crowd one, mod Columns, a
// prime) — at most Columns × Rows hosts are in play at once; others wait
// for a row — and move FREE → QUEUING → FETCHING → TIMEWAIT → FREE
// (bucket.go). A full list (ListLen ids) is ready at once; a partial one
// after PartialWait, or as soon as the scan has covered the whole window,
// since the window then has nothing more for its host. TryNext and Next
// hand out ready lists only while the clock's Phase says MayStart; a list
// carries Until, the start of the slot's closing guard, after which the
// node starts no fetch and reports the rest NotTried. Every id handed out
// must be reported: a host stays FETCHING until its whole list is, or
// until the node calls Release (its connection is done; the ids not
// reported yet stay in progress and are reported later, while the host's
// politeness wait runs and its next list goes out). When
// the active phase changes, queued ids are dropped and the scan starts
// again; lists out stay out until reported.
//
// Politeness: a host never has two lists out; TIMEWAIT after a list lasts
// the largest of MinDelay, the host's Crawl-delay (up to MaxCrawlDelay) and
// ErrorDelay doubled per list with errors in a row (up to MaxBackoff), and
// never ends before a 429/503 Retry-After (up to MaxRetryAfter). The end
// is stored as the host's next start, which also holds across a restart
// and is checked again when the list goes out, in case the clock stepped
// back; one further from now than the wait the config imposes on the host
// (its delay and error back-off as above, at least ErrorDelay; stored by
// a run whose clock was ahead, or under a longer delay since lowered) is
// cut to that, a Retry-After to MaxRetryAfter, and so is a TIMEWAIT in
// memory when the clock steps back by more than a second during a run.
// With MaxHostsPerIP, at most that many hosts of one IP address (SetIP)
// fetch at once; the addresses of hosts with nothing queued or out are
// forgotten past 65,536, so the node sets the address with every list.
//
// # Files and durability
//
// A scheduler is a directory of four files, each starting with a 64-byte
// header (magic, format version 4, the URL tree's ID, header checksum;
// file.go):
//
//	sched.meta    the commit record: two checksummed slots (file.go)
//	sched.states  8 bytes per URL id (state.go)
//	sched.hosts   64 bytes per host (hosts.go)
//	sched.names   host names back to back (hosts.go)
//
// The array files are mapped in full and grow by a quarter at a time,
// space reserved with fallocate first, so a full disk is an error from Add
// or Host rather than a SIGBUS (Open cuts a file extended with holes back
// to its data or its commit and reserves the rest). Sync writes back
// names, hosts and states, then the next commit slot with how many
// records of each are durable; once a file's fdatasync has failed, every
// later Sync and Close fails with it and commits nothing more.
// Open checks every record (checksums, states, host numbers, that names
// follow each other and match their hashes): damage inside the committed
// part is an error naming the file, record and offset — never a silent
// reset — and so is a newer format. Past the commit, a record naming a
// host that did not survive a crash is dropped and counted
// (OpenStats.Dropped; the node adds such URLs again from its URL tree);
// in-progress records become in-list again. An open scheduler holds an
// exclusive flock on sched.meta, so a second process gets ErrLocked.
//
// The records are by the URL tree's ids, so the files carry the tree's ID
// (Config.TreeID, urltree.Tree.ID): Open refuses with ErrForeign a
// scheduler of another tree (a directory copied from another data
// directory, or its tree replaced) and a file whose ID is not the meta
// file's (one copied or swapped in), naming it, and Check reports such a
// file and will not repair (CheckFor, given the tree's ID, also a
// scheduler of another tree). A states file of format version 3 is read as
// it is (its records are version 4's with no redirects counted) and given
// the version 4 header at Open, so a build of before refuses it as newer
// instead of reading the counts as host bits; the other files stay at
// version 3, their format unchanged. Files from before format version 3 (states at
// version 1 or 2, the others at 1, without ID or header checksum), and
// files created with no TreeID, are read and given the ID by the next Open
// with one: the array files first, the meta file last, so a crash in
// between leaves a scheduler it upgrades again. Such files say nothing of
// their tree, so that Open first compares up to 4096 of their records,
// spread over the ids, with the tree's URLs (Config.HostOf): one whose
// record names another host than the tree's URL of that id is of another
// data directory, refused with ErrForeign and left without an ID; so is
// one of whose records compared the tree has no URL at any (a new or
// emptied tree beside another directory's scheduler), as the tree cannot
// vouch for it. CheckFor,
// given the same hosts, compares the same records and reports such a
// scheduler as damage it does not repair.
//
// # The phase clock
//
// The phase clock is the system clock corrected by the offset measured
// against several NTP servers (github.com/beevik/ntp): each round asks every
// server once, drops answers that fail Validate, come from too high a
// stratum or took too long, and takes the median offset of the rest. Rounds
// repeat every NTPConfig.Interval (Clock.Run).
//
// Time is cut into slots of Cluster.PhaseLength from Cluster.Epoch, both the
// same on every node: slot t = floor((now − epoch) / phase_length). Node i of
// N, with P ≥ N phases, is in phase (i + t) mod P during slot t, so the nodes
// swap host sets at every slot boundary at the same moment.
//
// Two nodes disagree about that moment by at most their clocks' errors, so
// the clock brackets every boundary with a guard interval (default twice
// the offset bound) in which no new fetch starts, and it reports itself
// unsafe when it cannot vouch for its error: the measured offset exceeds the
// bound (default 100 ms), no NTP server has answered well for longer than
// ClockConfig.MaxSilence, or none ever has, or the system clock was
// stepped by more than the bound since the last good round (its wall time
// ran apart from the monotonic clock). An unsafe clock starts no new
// fetches at all (Phase.MayStart), since it does not know where the
// boundaries are. NodeClock makes a Clock the scheduler's PhaseSource.
//
// # Concurrency
//
// All methods are safe for concurrent use; one mutex guards the state.
package scheduler
