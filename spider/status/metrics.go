package status

import (
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metric names, Prometheus style: counters end in _total, units are base
// units (seconds, bytes) in the name. Counts are since the node opened: a
// restart is a counter reset, which rate() handles.
const ns = "kspider"

type metric struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
}

func newMetric(name, help string, typ prometheus.ValueType, labels ...string) metric {
	return metric{prometheus.NewDesc(ns+"_"+name, help, labels, nil), typ}
}

// nodeCollector turns one Status per scrape into metrics.
type nodeCollector struct {
	src Source

	pagesFetched, pagesStored, bytes, fetchErrors, responses, urlsKnown, urls, filtered, links, admitted  metric
	rateP, rateB, fetchers, fetchersBusy, delay, paused, phaseActive, phases, toSwap, mayStart, clockSafe metric
	clockOffset, windowSize, windowIDs, rows, rowsUsed, hosts, ready, out, dnsHits, dnsMisses, dnsQueries metric
	diskBytes, diskFree, diskSize, diskFailed, peerUp, peerQueue, peerSpilled, peerHeard, uptime, queue   metric
	peerDropped, peerMismatch, peerProbes                                                                 metric
	fetchDur                                                                                              *prometheus.Desc
}

func newMetrics(src Source) http.Handler {
	c := &nodeCollector{src: src,
		pagesFetched: newMetric("pages_fetched_total", "Responses received.", prometheus.CounterValue),
		pagesStored:  newMetric("pages_stored_total", "Pages handed to the page store.", prometheus.CounterValue),
		bytes:        newMetric("bytes_total", "Body bytes stored.", prometheus.CounterValue),
		fetchErrors:  newMetric("fetch_errors_total", "Failed fetches by kind.", prometheus.CounterValue, "kind"),
		responses:    newMetric("http_responses_total", "Responses by HTTP status code.", prometheus.CounterValue, "code"),
		urlsKnown:    newMetric("urls_known", "URLs in the URL tree.", prometheus.GaugeValue),
		queue:        newMetric("urls_unfinished", "URLs waiting to be fetched.", prometheus.GaugeValue),
		urls:         newMetric("urls", "URLs per scheduler state.", prometheus.GaugeValue, "state"),
		filtered:     newMetric("urls_filtered_total", "Link sightings refused, by reason.", prometheus.CounterValue, "reason"),
		links:        newMetric("links_total", "Links extracted.", prometheus.CounterValue),
		admitted:     newMetric("urls_admitted_total", "New URLs added.", prometheus.CounterValue),
		rateP:        newMetric("pages_per_second", "Pages stored per second over the last 10 s.", prometheus.GaugeValue),
		rateB:        newMetric("bytes_per_second", "Body bytes stored per second over the last 10 s.", prometheus.GaugeValue),
		fetchers:     newMetric("fetchers", "Lists fetched at once at most.", prometheus.GaugeValue),
		fetchersBusy: newMetric("fetchers_busy", "Lists out now.", prometheus.GaugeValue),
		delay:        newMetric("politeness_delay_seconds", "Wait after each list of a host.", prometheus.GaugeValue),
		paused:       newMetric("paused", "1 while paused or draining.", prometheus.GaugeValue),
		phaseActive:  newMetric("phase_active", "The active phase, -1 when none may start.", prometheus.GaugeValue),
		phases:       newMetric("phases", "Phases of the cluster.", prometheus.GaugeValue),
		toSwap:       newMetric("phase_swap_seconds", "Seconds to the next phase swap.", prometheus.GaugeValue),
		mayStart:     newMetric("phase_may_start", "1 when new fetches may start.", prometheus.GaugeValue),
		clockSafe:    newMetric("clock_safe", "1 when the phase clock is safe.", prometheus.GaugeValue),
		clockOffset:  newMetric("clock_offset_seconds", "Offset applied to the system clock.", prometheus.GaugeValue),
		windowSize:   newMetric("scheduler_window_size", "Ids the sliding window may cover.", prometheus.GaugeValue),
		windowIDs:    newMetric("scheduler_window_ids", "Ids the sliding window covers now.", prometheus.GaugeValue),
		rows:         newMetric("scheduler_rows", "Bucket rows in all.", prometheus.GaugeValue),
		rowsUsed:     newMetric("scheduler_rows_used", "Bucket rows held by hosts.", prometheus.GaugeValue),
		hosts:        newMetric("scheduler_hosts", "Hosts with runtime state, by bucket state.", prometheus.GaugeValue, "bucket"),
		ready:        newMetric("scheduler_ready_hosts", "Hosts whose list may go out now.", prometheus.GaugeValue),
		out:          newMetric("scheduler_ids_out", "Ids handed out and not reported.", prometheus.GaugeValue),
		dnsHits:      newMetric("dns_cache_hits_total", "Lookups answered from the DNS cache.", prometheus.CounterValue),
		dnsMisses:    newMetric("dns_cache_misses_total", "Lookups resolved over the network.", prometheus.CounterValue),
		dnsQueries:   newMetric("dns_queries_total", "DNS queries sent.", prometheus.CounterValue),
		diskBytes:    newMetric("storage_written_bytes_total", "Record bytes made durable, by store directory.", prometheus.CounterValue, "dir"),
		diskFree:     newMetric("storage_free_bytes", "Free bytes on the store directory's file system.", prometheus.GaugeValue, "dir"),
		diskSize:     newMetric("storage_size_bytes", "Size of the store directory's file system.", prometheus.GaugeValue, "dir"),
		diskFailed:   newMetric("storage_failed", "1 when the directory's saver stopped after an I/O error.", prometheus.GaugeValue, "dir"),
		peerUp:       newMetric("peer_up", "1 when the peer is up.", prometheus.GaugeValue, "node"),
		peerQueue:    newMetric("peer_queue_urls", "URLs queued for the peer.", prometheus.GaugeValue, "node"),
		peerSpilled:  newMetric("peer_spilled_bytes", "Bytes spilled to disk for the peer.", prometheus.GaugeValue, "node"),
		peerHeard:    newMetric("peer_last_heard_timestamp_seconds", "When the peer was last heard from.", prometheus.GaugeValue, "node"),
		peerDropped:  newMetric("peer_dropped_datagrams_total", "Datagrams in the peer's name dropped, by kind (forged, replayed, bad).", prometheus.CounterValue, "node", "kind"),
		peerMismatch: newMetric("peer_config_mismatch", "1 when the peer's cluster block differs from ours.", prometheus.GaugeValue, "node"),
		peerProbes:   newMetric("peer_probe_rounds_total", "Termination probe rounds with the peer.", prometheus.CounterValue, "node"),
		uptime:       newMetric("uptime_seconds", "Seconds since the crawl started.", prometheus.GaugeValue),
		fetchDur:     prometheus.NewDesc(ns+"_fetch_duration_seconds", "Time to fetch one response.", nil, nil),
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Describe sends every descriptor.
func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.all() {
		ch <- m.desc
	}
	ch <- c.fetchDur
}

func (c *nodeCollector) all() []metric {
	return []metric{c.pagesFetched, c.pagesStored, c.bytes, c.fetchErrors, c.responses, c.urlsKnown, c.urls, c.filtered,
		c.links, c.admitted, c.rateP, c.rateB, c.fetchers, c.fetchersBusy, c.delay, c.paused, c.phaseActive, c.phases,
		c.toSwap, c.mayStart, c.clockSafe, c.clockOffset, c.windowSize, c.windowIDs, c.rows, c.rowsUsed, c.hosts,
		c.ready, c.out, c.dnsHits, c.dnsMisses, c.dnsQueries, c.diskBytes, c.diskFree, c.diskSize, c.diskFailed,
		c.peerUp, c.peerQueue, c.peerSpilled, c.peerHeard, c.peerDropped, c.peerMismatch, c.peerProbes, c.uptime, c.queue}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Collect reads one Status and sends it as metrics.
func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.src.Status()
	put := func(m metric, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(m.desc, m.typ, v, labels...)
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
	s := &st.Scheduler
	put(c.windowSize, float64(s.WindowSize))
	put(c.windowIDs, float64(s.WindowEnd-min(s.WindowLo, s.WindowEnd)))
	put(c.rows, float64(s.Rows))
	put(c.rowsUsed, float64(s.RowsUsed))
	for _, k := range sortedKeys(s.Buckets) {
		put(c.hosts, float64(s.Buckets[k]), k)
	}
	put(c.ready, float64(s.Ready))
	put(c.out, float64(s.Out))
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
	}
	put(c.uptime, st.Uptime)
	h := st.FetchSeconds
	buckets := make(map[float64]uint64, len(h.Buckets))
	for _, b := range h.Buckets {
		buckets[b.LE] = b.Count
	}
	ch <- prometheus.MustNewConstHistogram(c.fetchDur, h.Count, h.Sum, buckets)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
