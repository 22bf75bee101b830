package status

import (
	"bytes"
	"net/http"
	"sort"
	"strconv"
	"time"
)

// Metric names, Prometheus style: counters end in _total, units are base
// units (seconds, bytes) in the name. Counts are since the node opened: a
// restart is a counter reset, which rate() handles.
const ns = "kspider"

type metric struct {
	name, help string
	typ        valueType
	labels     []string // label names, in the order Collect gives their values
}

func newMetric(name, help string, typ valueType, labels ...string) metric {
	return metric{ns + "_" + name, help, typ, labels}
}

// nodeCollector turns one Status per scrape into metrics.
type nodeCollector struct {
	src Source

	pagesFetched, pagesStored, bytes, fetchErrors, responses, urlsKnown, urls, filtered, links, admitted           metric
	rateP, rateB, fetchers, fetchersBusy, delay, paused, phaseActive, phases, toSwap, mayStart, clockSafe          metric
	clockOffset, windowSize, windowIDs, rows, rowsUsed, hosts, ready, out, dnsHits, dnsMisses, dnsQueries          metric
	diskBytes, diskFree, diskSize, diskFailed, peerUp, peerQueue, peerSpilled, peerHeard, uptime, queue            metric
	peerDropped, peerMismatch, peerProbes, peerLost, peerMerged, robotsOverBudget, robotsCacheBytes, robotsEvicted metric
	fetchDur, peerStale                                                                                            metric
	robotsAbandoned                                                                                                metric
}

func newMetrics(src Source) *nodeCollector {
	c := &nodeCollector{src: src,
		pagesFetched:     newMetric("pages_fetched_total", "Responses received.", counterValue),
		pagesStored:      newMetric("pages_stored_total", "Pages the page store made durable.", counterValue),
		bytes:            newMetric("bytes_total", "Body bytes of the pages made durable.", counterValue),
		fetchErrors:      newMetric("fetch_errors_total", "Fetches that got no response, by collector kind (dns, connect, timeout, ...; not-tried: URLs of a list never sent, canceled: a fetch cut by the crawl stopping or a slot ending).", counterValue, "kind"),
		responses:        newMetric("http_responses_total", "Responses by HTTP status code.", counterValue, "code"),
		urlsKnown:        newMetric("urls_known", "URLs in the URL tree.", gaugeValue),
		queue:            newMetric("urls_unfinished", "URLs waiting to be fetched.", gaugeValue),
		urls:             newMetric("urls", "URLs per scheduler state.", gaugeValue, "state"),
		filtered:         newMetric("urls_filtered_total", "Link sightings refused, by reason.", counterValue, "reason"),
		links:            newMetric("links_total", "Links extracted.", counterValue),
		admitted:         newMetric("urls_admitted_total", "New URLs added.", counterValue),
		rateP:            newMetric("pages_per_second", "Pages stored per second over the last 10 s.", gaugeValue),
		rateB:            newMetric("bytes_per_second", "Body bytes stored per second over the last 10 s.", gaugeValue),
		fetchers:         newMetric("fetchers", "Lists fetched at once at most.", gaugeValue),
		fetchersBusy:     newMetric("fetchers_busy", "Lists out now.", gaugeValue),
		delay:            newMetric("politeness_delay_seconds", "Wait after each list of a host.", gaugeValue),
		paused:           newMetric("paused", "1 while paused or draining.", gaugeValue),
		phaseActive:      newMetric("phase_active", "The active phase, -1 when none may start.", gaugeValue),
		phases:           newMetric("phases", "Phases of the cluster.", gaugeValue),
		toSwap:           newMetric("phase_swap_seconds", "Seconds to the next phase swap.", gaugeValue),
		mayStart:         newMetric("phase_may_start", "1 when new fetches may start.", gaugeValue),
		clockSafe:        newMetric("clock_safe", "1 when the phase clock is safe.", gaugeValue),
		clockOffset:      newMetric("clock_offset_seconds", "Offset applied to the system clock.", gaugeValue),
		windowSize:       newMetric("scheduler_window_size", "Ids the sliding window may cover.", gaugeValue),
		windowIDs:        newMetric("scheduler_window_ids", "Ids the sliding window covers now.", gaugeValue),
		rows:             newMetric("scheduler_rows", "Bucket rows in all.", gaugeValue),
		rowsUsed:         newMetric("scheduler_rows_used", "Bucket rows held by hosts.", gaugeValue),
		hosts:            newMetric("scheduler_hosts", "Hosts with runtime state, by bucket state.", gaugeValue, "bucket"),
		ready:            newMetric("scheduler_ready_hosts", "Hosts whose list may go out now.", gaugeValue),
		out:              newMetric("scheduler_ids_out", "Ids handed out and not reported.", gaugeValue),
		dnsHits:          newMetric("dns_cache_hits_total", "Lookups answered from the DNS cache.", counterValue),
		dnsMisses:        newMetric("dns_cache_misses_total", "Lookups resolved over the network.", counterValue),
		dnsQueries:       newMetric("dns_queries_total", "DNS queries sent.", counterValue),
		diskBytes:        newMetric("storage_written_bytes_total", "Record bytes made durable, by store directory.", counterValue, "dir"),
		diskFree:         newMetric("storage_free_bytes", "Free bytes on the store directory's file system.", gaugeValue, "dir"),
		diskSize:         newMetric("storage_size_bytes", "Size of the store directory's file system.", gaugeValue, "dir"),
		diskFailed:       newMetric("storage_failed", "1 when the directory's saver stopped after an I/O error.", gaugeValue, "dir"),
		peerUp:           newMetric("peer_up", "1 when the peer is up.", gaugeValue, "node"),
		peerQueue:        newMetric("peer_queue_urls", "URLs queued for the peer.", gaugeValue, "node"),
		peerSpilled:      newMetric("peer_spilled_bytes", "Bytes spilled to disk for the peer.", gaugeValue, "node"),
		peerHeard:        newMetric("peer_last_heard_timestamp_seconds", "When the peer was last heard from.", gaugeValue, "node"),
		peerDropped:      newMetric("peer_dropped_datagrams_total", "Datagrams in the peer's name dropped, by kind (forged, replayed, bad).", counterValue, "node", "kind"),
		peerMismatch:     newMetric("peer_config_mismatch", "1 when the peer's cluster block differs from ours.", gaugeValue, "node"),
		peerProbes:       newMetric("peer_probe_rounds_total", "Termination probe rounds with the peer.", counterValue, "node"),
		peerLost:         newMetric("peer_lost_dir", "1 when the peer came back with a new data directory in this run: the URLs it held are lost.", gaugeValue, "node"),
		peerMerged:       newMetric("peer_acks_merged_total", "Datagrams in the peer's name that wanted an answer (replayed, or an acknowledgement lost) when one was due already: answered by it, not by one of their own.", counterValue, "node"),
		peerStale:        newMetric("peer_stale_control_total", "Control messages from the peer of a run before a restart (its or ours), sent again from a spill file: ignored, or a state of its run before taken as busy.", counterValue, "node"),
		robotsOverBudget: newMetric("robots_over_budget_total", "URLs denied because robots.txt was too costly to check against them, by no rule.", counterValue),
		robotsCacheBytes: newMetric("robots_cache_bytes", "Bytes of the robots.txt rule sets cached.", gaugeValue),
		robotsEvicted:    newMetric("robots_cache_evicted_total", "Origins evicted from the robots.txt cache to bound its bytes.", counterValue),
		robotsAbandoned:  newMetric("robots_abandoned_total", "robots.txt fetches sent and cut short because their list ended (a slot's cutoff, the crawl stopping) before the answer came whole: nothing cached, fetched again. One never sent is not counted.", counterValue),
		uptime:           newMetric("uptime_seconds", "Seconds since the crawl started.", gaugeValue),
		fetchDur:         newMetric("fetch_duration_seconds", "Time to fetch one response.", histogramValue),
	}
	return c
}

// ServeHTTP answers a scrape: the node's metrics, the Go runtime's and the
// process's (metrics_proc.go).
func (c *nodeCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := newScrape()
	c.collect(s)
	goMetrics(s)
	processMetrics(s)
	var b bytes.Buffer
	s.write(&b)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.Write(b.Bytes())
}

func (c *nodeCollector) all() []metric {
	return []metric{c.pagesFetched, c.pagesStored, c.bytes, c.fetchErrors, c.responses, c.urlsKnown, c.urls, c.filtered,
		c.links, c.admitted, c.rateP, c.rateB, c.fetchers, c.fetchersBusy, c.delay, c.paused, c.phaseActive, c.phases,
		c.toSwap, c.mayStart, c.clockSafe, c.clockOffset, c.windowSize, c.windowIDs, c.rows, c.rowsUsed, c.hosts,
		c.ready, c.out, c.dnsHits, c.dnsMisses, c.dnsQueries, c.diskBytes, c.diskFree, c.diskSize, c.diskFailed,
		c.peerUp, c.peerQueue, c.peerSpilled, c.peerHeard, c.peerDropped, c.peerMismatch, c.peerProbes, c.peerLost, c.peerMerged, c.peerStale, c.uptime, c.queue,
		c.robotsOverBudget, c.robotsCacheBytes, c.robotsEvicted,
		c.robotsAbandoned}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// collect reads one Status into s (a family with no sample, peers of a
// lone node say, is left out of the scrape).
func (c *nodeCollector) collect(s *scrape) {
	st := c.src.Status()
	put := func(m metric, v float64, values ...string) {
		kv := make([]string, 0, 2*len(values))
		for i, l := range m.labels {
			kv = append(kv, l, values[i])
		}
		s.family(m.name, m.help, m.typ).add(v, kv...)
	}
	t := &st.Totals
	put(c.pagesFetched, float64(t.Fetched))
	put(c.pagesStored, float64(t.Pages))
	put(c.bytes, float64(t.Bytes))
	put(c.urlsKnown, float64(t.URLs))
	put(c.queue, float64(t.Queue))
	for _, s := range []struct {
		name string
		v    uint64
	}{{"in-list", t.InList}, {"in-progress", t.InProgress}, {"stalled", t.Stalled}, {"completed", t.Completed},
		{"redirected", t.Redirected}, {"failed", t.Failed}, {"robots-denied", t.RobotsDenied}} {
		put(c.urls, float64(s.v), s.name)
	}
	put(c.robotsOverBudget, float64(t.RobotsOverBudget))
	put(c.robotsCacheBytes, float64(t.RobotsCacheBytes))
	put(c.robotsEvicted, float64(t.RobotsCacheEvicted))
	put(c.robotsAbandoned, float64(t.RobotsAbandoned))
	for _, k := range sortedKeys(st.Totals.Filtered) {
		put(c.filtered, float64(st.Totals.Filtered[k]), k)
	}
	for _, k := range sortedKeys(st.Errors) {
		put(c.fetchErrors, float64(st.Errors[k]), k)
	}
	for _, k := range sortedKeys(st.HTTPStatuses) {
		put(c.responses, float64(st.HTTPStatuses[k]), k)
	}
	put(c.links, float64(t.Links))
	put(c.admitted, float64(t.Admitted))
	put(c.rateP, st.Rates.PagesPerSecond)
	put(c.rateB, st.Rates.MBPerSecond*1e6)
	put(c.fetchers, float64(st.Fetchers.Max))
	put(c.fetchersBusy, float64(st.Fetchers.Busy))
	put(c.delay, st.Fetchers.DelaySecs)
	put(c.paused, b2f(st.State == "paused" || st.State == "draining"))
	p := &st.Phase
	put(c.phaseActive, float64(p.Active))
	put(c.phases, float64(p.Phases))
	put(c.toSwap, p.SecondsToSwap)
	put(c.mayStart, b2f(p.MayStart))
	put(c.clockSafe, b2f(p.ClockSafe))
	put(c.clockOffset, p.ClockOffset)
	sc := &st.Scheduler
	put(c.windowSize, float64(sc.WindowSize))
	put(c.windowIDs, float64(sc.WindowEnd-min(sc.WindowLo, sc.WindowEnd)))
	put(c.rows, float64(sc.Rows))
	put(c.rowsUsed, float64(sc.RowsUsed))
	for _, k := range sortedKeys(sc.Buckets) {
		put(c.hosts, float64(sc.Buckets[k]), k)
	}
	put(c.ready, float64(sc.Ready))
	put(c.out, float64(sc.Out))
	put(c.dnsHits, float64(st.DNS.Hits))
	put(c.dnsMisses, float64(st.DNS.Misses))
	put(c.dnsQueries, float64(st.DNS.Queries))
	for _, d := range st.Storage {
		put(c.diskBytes, float64(d.Bytes), d.Dir)
		put(c.diskFree, float64(d.Free), d.Dir)
		put(c.diskSize, float64(d.Size), d.Dir)
		put(c.diskFailed, b2f(d.Failed), d.Dir)
	}
	for _, pe := range st.Peers {
		id := strconv.Itoa(pe.Node)
		put(c.peerUp, b2f(pe.Up), id)
		put(c.peerQueue, float64(pe.Queue), id)
		put(c.peerSpilled, float64(pe.SpilledBytes), id)
		heard := 0.0
		if !pe.LastHeard.IsZero() {
			heard = float64(pe.LastHeard.UnixNano()) / float64(time.Second)
		}
		put(c.peerHeard, heard, id)
		put(c.peerDropped, float64(pe.DroppedForged), id, "forged")
		put(c.peerDropped, float64(pe.DroppedReplayed), id, "replayed")
		put(c.peerDropped, float64(pe.DroppedBad), id, "bad")
		put(c.peerMismatch, b2f(len(pe.ConfigMismatch) > 0), id)
		put(c.peerProbes, float64(pe.ProbeRounds), id)
		put(c.peerLost, b2f(pe.LostDir), id)
		put(c.peerMerged, float64(pe.AcksMerged), id)
		put(c.peerStale, float64(pe.StaleControl), id)
	}
	put(c.uptime, st.Uptime)
	h := st.FetchSeconds
	buckets := make(map[float64]uint64, len(h.Buckets))
	for _, b := range h.Buckets {
		buckets[b.LE] = b.Count
	}
	s.family(c.fetchDur.name, c.fetchDur.help, c.fetchDur.typ).histogram(h.Count, h.Sum, buckets)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
