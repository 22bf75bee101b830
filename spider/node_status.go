package spider

// The node's status: one snapshot (Status) that the progress line, the
// status page, its JSON and the Prometheus metrics all read, so that they
// never disagree.
//
// # JSON (version 1)
//
// Status marshals to one object whose field names are part of the format
// (StatusVersion): a new field may be added within a version; a renamed,
// removed or re-meant one bumps the version. Counts are since the node
// opened (this run), URL states are of the whole data directory. Pages and
// bytes stored are those the store has made durable (Node.Durable), not
// those handed to it: after a store failure the others are lost. Rates are
// pages (stored) and megabytes (10^6 bytes of bodies stored) per second.
//
//	version            1
//	time, started      RFC 3339 instants: the snapshot, the start of Run
//	uptime_seconds     since started, on the monotonic clock (rates too: a
//	                   step of the system clock leaves them right)
//	state              "open" (before Run), "running", "paused", "draining", "stopped"
//	totals             pages, fetched, bytes, urls_known, queue (unfinished URLs),
//	                   in_list, in_progress, stalled, completed, redirected,
//	                   failed (URLs given up), fetch_errors (failed attempts),
//	                   robots_denied, robots_over_budget (URLs denied this
//	                   run because robots.txt was too costly to check, by
//	                   no rule), robots_cache_bytes, robots_cache_evicted
//	                   (origins evicted to bound them), robots_abandoned
//	                   (robots.txt fetches sent and cut short by their
//	                   list's end, nothing cached; one never sent is not
//	                   counted), links, admitted, rejected,
//	                   filtered {reason: count} (scope.Reason names, too-deep)
//	rates              pages_per_second, mb_per_second (last 10 s),
//	                   avg_pages_per_second, avg_mb_per_second (since started)
//	history            step_seconds, pages_per_second [], mb_per_second []:
//	                   the last hour, oldest first, one value per step (1 s
//	                   for the first 10 minutes of a run, then 10 s)
//	phase              active (-1: none may start), phases, slot, next_swap,
//	                   seconds_to_swap, in_guard, may_start, clock_safe,
//	                   clock_synced, clock_offset_seconds, clock_reason, clock_source
//	scheduler          window_size, window_lo, window_scan, window_end,
//	                   rows, rows_used, hosts_in_view, ready, out, ip_blocked,
//	                   buckets {FREE, QUEUING, FETCHING, TIMEWAIT: hosts}
//	fetchers           busy (lists out), max, politeness_delay_seconds
//	dns                hits, misses, hit_rate, queries, timeouts;
//	                   prefetched, prefetch_failed, prefetch_late: a cluster
//	                   node's lookups of its next slot's hosts before the
//	                   swap (resolved, failed, cut off at the slot's start)
//	storage []         dir, bytes, records, free_bytes, size_bytes,
//	                   write_bytes_per_second, failed
//	http_statuses      {"200": count, ...} responses by status code
//	errors             {kind: count} failed fetches by collector.Kind name;
//	                   not-tried: URLs of a list never sent, whatever
//	                   ended the list (listed again, no retry spent)
//	fetch_seconds      buckets [{le, count}] (cumulative), count, sum
//	top_queued_hosts   [{host, queued}] most ids queued in the window first
//	slowest_hosts      [{host, seconds_per_page, pages, at}] slowest first
//	peers []           node, addr, up, queue, spilled_bytes, last_heard: the
//	                   cluster's communicator's view, or NodeConfig.Peers;
//	                   dropped_forged (wrong address or MAC), dropped_replayed
//	                   (old epoch, already delivered: replays and
//	                   retransmissions), dropped_bad (misdirected, malformed,
//	                   beyond the window): datagrams in the peer's name;
//	                   config_mismatch [] (its cluster block's differing keys),
//	                   probe_rounds (termination probes: answered by the
//	                   peer on node 0, received from node 0 on the others),
//	                   lost_dir (it came back with a new data directory in
//	                   this crawl: the URLs it held are lost), stale_control
//	                   (its control messages of a run before a restart, its
//	                   or ours, sent again from a spill file: ignored)
//
// # Cost
//
// Counting is a few atomic adds per response and one short mutex per list
// (the slowest hosts, a fixed array of statusTopK entries). The history is a
// fixed ring of one sample a second for an hour, written by one goroutine.
// Taking a Status holds the scheduler's lock for one pass over the hosts
// with work in the window (Scheduler.Stats) and never sorts: the top hosts
// are kept in bounded arrays.

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kspider/kspider/collector"
	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/spider/scope"
)

// fetchBuckets are the fetch time histogram's upper bounds, in seconds
// (Prometheus's default buckets).
var fetchBuckets = [...]float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// statusState is the node's status bookkeeping; its zero value is ready
// once clock is set. Rates and the uptime are measured on clock's
// monotonic readings, so a step of the system clock leaves them right.
type statusState struct {
	clock     wallMono
	started   atomic.Int64 // Run's start, Unix ns; 0 before Run
	startMono atomic.Int64 // Run's start on clock's monotonic reading, ns
	stopped   atomic.Bool

	statuses [600]atomic.Uint64 // responses by status code (0..599)
	kinds    [numCollectKinds]atomic.Uint64
	buckets  [len(fetchBuckets) + 1]atomic.Uint64 // the last is +Inf
	fetchNs  atomic.Uint64

	slowMu sync.Mutex
	slow   [statusTopK]slowHost
	nslow  int

	histMu sync.Mutex
	hist   [historySeconds + 1]sample // ring, one a second
	hn     int                        // samples in the ring
	hi     int                        // next write position
	disk   []uint64                   // store bytes per dir at diskAt
	diskAt time.Duration              // monotonic
	rate   []float64                  // write bytes/s per dir over the last interval
}

type sample struct {
	mono         time.Duration
	pages, bytes uint64
}

type slowHost struct {
	host  uint32
	ns    int64 // per page
	pages int
	at    time.Time
}

// countResult counts one response or failure of the collector, whose
// outcome for the scheduler is o. A URL never sent that carries its list's
// failure (a list ended by a host's timeout: the rest come back with its
// kind and no attempt) is counted not-tried, as the node treats it:
// counted by that kind, a stalled list of 20 showed 20 timeouts for one.
func (s *statusState) countResult(r *collector.Result, o scheduler.Kind) {
	if r.Status > 0 && r.Status < len(s.statuses) {
		s.statuses[r.Status].Add(1)
	}
	k := r.Kind
	if k != collector.OK && r.Status == 0 && r.Attempts == 0 && o == scheduler.NotTried {
		k = collector.NotTried
	}
	if k != collector.OK && int(k) < len(s.kinds) {
		s.kinds[k].Add(1)
	}
	if r.Status > 0 {
		d := r.Timings.Total
		i := 0
		for i < len(fetchBuckets) && d.Seconds() > fetchBuckets[i] {
			i++
		}
		s.buckets[i].Add(1)
		s.fetchNs.Add(uint64(max(d, 0)))
	}
}

// countList notes host h's time per page in a list just fetched, keeping
// the statusTopK slowest hosts (a host's latest list replaces its entry;
// entries older than slowStale give way first).
func (s *statusState) countList(h uint32, b *collector.Batch, now time.Time) {
	if b == nil {
		return
	}
	var total time.Duration
	pages := 0
	for i := range b.Results {
		if r := &b.Results[i]; r.Status > 0 {
			total += r.Timings.Total
			pages++
		}
	}
	if pages == 0 {
		return
	}
	e := slowHost{host: h, ns: int64(total) / int64(pages), pages: pages, at: now}
	s.slowMu.Lock()
	defer s.slowMu.Unlock()
	low := -1
	for i := 0; i < s.nslow; i++ {
		if s.slow[i].host == h {
			s.slow[i] = e
			return
		}
		if low < 0 || s.worse(i, low, now) {
			low = i
		}
	}
	if s.nslow < len(s.slow) {
		s.slow[s.nslow] = e
		s.nslow++
		return
	}
	if now.Sub(s.slow[low].at) > slowStale || e.ns > s.slow[low].ns {
		s.slow[low] = e
	}
}

// worse: entry i should give way before entry j (stale first, then faster).
func (s *statusState) worse(i, j int, now time.Time) bool {
	si, sj := now.Sub(s.slow[i].at) > slowStale, now.Sub(s.slow[j].at) > slowStale
	if si != sj {
		return si
	}
	return s.slow[i].ns < s.slow[j].ns
}

// begin notes the start of Run.
func (s *statusState) begin() {
	wall, mono := s.clock()
	s.startMono.Store(int64(mono))
	s.started.Store(wall.UnixNano())
}

// record adds a history sample taken at mono (clock's monotonic reading);
// the sampler calls it once a second.
func (s *statusState) record(mono time.Duration, pages, bytes uint64, disks []DiskStatus) {
	s.histMu.Lock()
	defer s.histMu.Unlock()
	s.hist[s.hi] = sample{mono: mono, pages: pages, bytes: bytes}
	s.hi = (s.hi + 1) % len(s.hist)
	s.hn = min(s.hn+1, len(s.hist))
	if len(s.disk) != len(disks) || mono-s.diskAt >= historyStep*time.Second {
		if len(s.disk) == len(disks) {
			dt := (mono - s.diskAt).Seconds()
			for i, d := range disks {
				s.rate[i] = float64(sub(d.Bytes, s.disk[i])) / dt
			}
		} else {
			s.disk, s.rate = make([]uint64, len(disks)), make([]float64, len(disks))
		}
		for i, d := range disks {
			s.disk[i] = d.Bytes
		}
		s.diskAt = mono
	}
}

// at returns the k-th sample, 0 the oldest kept.
func (s *statusState) at(k int) sample {
	return s.hist[(s.hi-s.hn+k+len(s.hist))%len(s.hist)]
}

// history fills the rates and the history from the ring.
func (s *statusState) history(st *Status) {
	s.histMu.Lock()
	defer s.histMu.Unlock()
	// One point a second while the history is short (a fresh crawl has a
	// chart at once), one per historyStep seconds past historyFine.
	step := 1
	if s.hn-1 > historyFine {
		step = historyStep
	}
	st.History.StepSeconds = step
	st.History.PagesPerSecond = []float64{}
	st.History.MBPerSecond = []float64{}
	rate := func(a, b sample) (float64, float64) {
		dt := (b.mono - a.mono).Seconds()
		if dt <= 0 {
			return 0, 0
		}
		return float64(sub(b.pages, a.pages)) / dt, float64(sub(b.bytes, a.bytes)) / 1e6 / dt
	}
	if s.hn >= 2 {
		last := s.at(s.hn - 1)
		st.Rates.PagesPerSecond, st.Rates.MBPerSecond = rate(s.at(max(s.hn-1-historyStep, 0)), last)
		// Steps end at the newest sample, so the last point is current.
		first := (s.hn - 1) % step
		for k := first; k+step < s.hn; k += step {
			p, m := rate(s.at(k), s.at(k+step))
			st.History.PagesPerSecond = append(st.History.PagesPerSecond, p)
			st.History.MBPerSecond = append(st.History.MBPerSecond, m)
		}
	}
	for i := range st.Storage {
		if i < len(s.rate) {
			st.Storage[i].WriteRate = s.rate[i]
		}
	}
}

// sampleLoop records a history sample every second until ctx ends.
func (n *Node) sampleLoop(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	n.sample()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n.sample()
		}
	}
}

func (n *Node) sample() {
	_, mono := n.ss.clock()
	n.ss.record(mono, n.Durable(), n.DurableBytes(), n.disks())
}

func (n *Node) disks() []DiskStatus {
	ds := n.store.Disks()
	out := make([]DiskStatus, len(ds))
	for i, d := range ds {
		out[i] = DiskStatus{Dir: d.Dir, Bytes: d.Bytes, Records: d.Records, Free: d.Free, Size: d.Size, Failed: d.Failed}
	}
	return out
}

// Status returns a snapshot of the node. It is safe to call at any time
// between OpenNode and Close, from any goroutine.
func (n *Node) Status() *Status { return n.status(true) }

// status takes the snapshot; full adds what only the status page shows
// (URL states, scheduler, hosts, disks, statuses, errors, histogram), which
// the progress line spares: it reads atomics and takes no scheduler lock.
func (n *Node) status(full bool) *Status {
	now, mono := n.ss.clock()
	st := &Status{Version: StatusVersion, Time: now.UTC(), State: n.stateName()}
	if ns := n.ss.started.Load(); ns != 0 {
		st.Started = time.Unix(0, ns).UTC()
		st.Uptime = (mono - time.Duration(n.ss.startMono.Load())).Seconds()
	}
	// The progress line (!full) reads atomics only: no scheduler lock.
	var ss scheduler.Stats
	if full {
		ss = n.sched.Stats(statusTopK)
	}
	t := &st.Totals
	t.Pages, t.Fetched, t.Bytes = n.Durable(), n.st.fetched.Load(), n.DurableBytes()
	t.URLs, t.Queue = uint64(n.tree.Len()), uint64(max(n.unfinished.Load(), 0))
	t.InList, t.InProgress, t.Stalled = ss.States[scheduler.InList], ss.States[scheduler.InProgress], ss.States[scheduler.Stalled]
	t.Completed, t.Redirected, t.Failed = ss.States[scheduler.Completed], ss.States[scheduler.Redirected], ss.States[scheduler.Failed]
	t.RobotsDenied, t.RobotsOverBudget = ss.States[scheduler.RobotsDenied], n.st.deniedOverBudget.Load()
	t.RobotsAbandoned = uint64(max(n.robots.src.Abandoned(), 0))
	if full {
		held, evicted := n.robots.src.Cache.Bytes()
		t.RobotsCacheBytes, t.RobotsCacheEvicted = uint64(max(held, 0)), uint64(max(evicted, 0))
	}
	t.FetchErrors, t.Links, t.Admitted, t.Rejected = n.st.errors.Load(), n.st.links.Load(), n.st.admitted.Load(), n.st.rejected.Load()
	t.Filtered = map[string]uint64{scope.TooDeep.String(): n.st.tooDeep.Load()}
	for r, c := range n.filter.Counts() {
		if scope.Reason(r) != scope.OK && scope.Reason(r) != scope.TooDeep {
			t.Filtered[scope.Reason(r).String()] = c
		}
	}
	if st.Uptime > 0 {
		st.Rates.AvgPagesPerSecond = float64(t.Pages) / st.Uptime
		st.Rates.AvgMBPerSecond = float64(t.Bytes) / 1e6 / st.Uptime
	}
	n.phaseStatus(&st.Phase)
	st.HTTPStatuses, st.Errors = map[string]uint64{}, map[string]uint64{}
	st.TopQueued, st.Slowest, st.Peers, st.Storage = []HostQueued{}, []HostSlow{}, []PeerStatus{}, []DiskStatus{}
	st.Scheduler.Buckets = map[string]int{}
	if !full {
		n.ss.history(st)
		return st
	}
	st.Scheduler = SchedulerStatus{WindowSize: ss.WindowSize, WindowLo: ss.WindowLo, WindowScan: ss.WindowScan,
		WindowEnd: ss.WindowEnd, Rows: ss.Rows, RowsUsed: ss.RowsUsed, HostsInView: ss.HostsInView, Ready: ss.Ready,
		Out: ss.Out, IPBlocked: ss.IPBlocked, Buckets: map[string]int{}}
	for b, c := range ss.Buckets {
		st.Scheduler.Buckets[scheduler.BucketState(b).String()] = c
	}
	st.Fetchers = n.fetcherStatus()
	if f := n.cfg.DNSStats; f != nil {
		d := f()
		st.DNS = DNSStatus{Hits: d.Hits, Misses: d.Lookups, Queries: d.Queries, Timeouts: d.Timeouts}
		if all := d.Hits + d.Lookups; all > 0 {
			st.DNS.HitRate = float64(d.Hits) / float64(all)
		}
	}
	if c := n.cl; c != nil {
		st.DNS.Prefetched, st.DNS.PrefetchFailed, st.DNS.PrefetchLate = c.pf.resolved.Load(), c.pf.failed.Load(), c.pf.late.Load()
	}
	for code := range n.ss.statuses {
		if c := n.ss.statuses[code].Load(); c > 0 {
			st.HTTPStatuses[strconv.Itoa(code)] = c
		}
	}
	for k := collector.DNS; int(k) < len(n.ss.kinds); k++ {
		st.Errors[k.String()] = n.ss.kinds[k].Load()
	}
	st.Storage = n.disks()
	st.FetchSeconds = n.ss.histogram()
	for _, h := range ss.TopQueued {
		st.TopQueued = append(st.TopQueued, HostQueued{Host: h.Name, Queued: h.Queued})
	}
	st.Slowest = n.slowest(now)
	if f := n.cfg.Peers; f != nil {
		if p := f(); p != nil {
			st.Peers = p
		}
	} else {
		st.Peers = n.clusterPeers()
	}
	n.ss.history(st)
	return st
}

func (n *Node) stateName() string {
	switch {
	case n.ss.stopped.Load():
		return "stopped"
	case n.ss.started.Load() == 0:
		return "open"
	}
	return n.runState()
}

func (n *Node) phaseStatus(ps *PhaseStatus) {
	p := n.cfg.Scheduler.Clock.Phase()
	ps.Active, ps.Phases, ps.Slot = p.Active, max(n.cfg.Scheduler.Phases, 1), p.Slot
	if !p.MayStart {
		ps.Active = -1
	}
	ps.NextSwap, ps.SecondsToSwap = p.End.UTC(), p.Left.Seconds()
	ps.InGuard, ps.MayStart, ps.ClockSafe = p.InGuard, p.MayStart, p.Safe
	ps.ClockSource = "system"
	if f := n.cfg.ClockStatus; f != nil {
		c := f()
		ps.ClockSource, ps.ClockSynced, ps.ClockOffset, ps.ClockReason = "ntp", c.Synced, c.Offset.Seconds(), c.Reason
	}
}

func (s *statusState) histogram() Histogram {
	h := Histogram{Buckets: make([]Bucket, len(fetchBuckets))}
	var cum uint64
	for i, le := range fetchBuckets {
		cum += s.buckets[i].Load()
		h.Buckets[i] = Bucket{LE: le, Count: cum}
	}
	h.Count = cum + s.buckets[len(fetchBuckets)].Load()
	h.Sum = float64(s.fetchNs.Load()) / 1e9
	return h
}

// slowest returns the slowest hosts, slowest first, leaving out stale
// entries (a selection sort of statusTopK entries at most).
func (n *Node) slowest(now time.Time) []HostSlow {
	n.ss.slowMu.Lock()
	es := make([]slowHost, 0, n.ss.nslow)
	for _, e := range n.ss.slow[:n.ss.nslow] {
		if now.Sub(e.at) <= slowStale {
			es = append(es, e)
		}
	}
	n.ss.slowMu.Unlock()
	out := make([]HostSlow, 0, len(es))
	for len(es) > 0 {
		m := 0
		for i := range es {
			if es[i].ns > es[m].ns {
				m = i
			}
		}
		e := es[m]
		es = append(es[:m], es[m+1:]...)
		name := strconv.FormatUint(uint64(e.host), 10)
		if hi, err := n.sched.HostInfo(e.host); err == nil {
			name = hi.Name
		}
		out = append(out, HostSlow{Host: name, Seconds: float64(e.ns) / 1e9, Pages: e.pages, At: e.at.UTC()})
	}
	return out
}

// GroupDigits writes n with thousands separators, as the progress line
// does: 1234567 is "1,234,567".
func GroupDigits(n uint64) string { return count(n) }

// clusterPeers is the peers as the node's communicator sees them (none
// outside a cluster): queue counts URLs waiting for the peer in memory, in
// flight and in its spill file (not the hellos and rounds beside them,
// which a peer that is gone has too); last_heard is its last
// acknowledgement.
func (n *Node) clusterPeers() []PeerStatus {
	out := []PeerStatus{}
	if n.cl == nil {
		return out
	}
	for _, p := range n.ClusterStats().Comm.Peers {
		ps := PeerStatus{Node: int(p.ID), Addr: p.Addr.String(), Up: !p.Down,
			Queue:        uint64(max(p.Queued+p.UnackedItems+int(p.SpillItems)-p.ControlItems, 0)),
			SpilledBytes: uint64(max(p.SpillBytes, 0)), LastHeard: p.LastAck.UTC(), AcksMerged: p.AcksMerged}
		n.cl.peerStatus(&ps, p.Drops)
		out = append(out, ps)
	}
	return out
}
