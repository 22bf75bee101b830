package spider

import (
	"time"

	"github.com/kspider/kspider/collector"
)

// The node status's JSON format: Status and the types it is made of.
// Field names are versioned (StatusVersion); node_status.go's doc lists
// them and says how they are counted.

// StatusVersion is the version of Status's JSON field names.
const StatusVersion = 1

// Status is a snapshot of a node; see the package doc of node_status.go
// for the JSON fields.
type Status struct {
	Version      int               `json:"version"`
	Time         time.Time         `json:"time"`
	Started      time.Time         `json:"started"`
	Uptime       float64           `json:"uptime_seconds"`
	State        string            `json:"state"`
	Totals       StatusTotals      `json:"totals"`
	Rates        StatusRates       `json:"rates"`
	History      StatusHistory     `json:"history"`
	Phase        PhaseStatus       `json:"phase"`
	Scheduler    SchedulerStatus   `json:"scheduler"`
	Fetchers     FetcherStatus     `json:"fetchers"`
	DNS          DNSStatus         `json:"dns"`
	Storage      []DiskStatus      `json:"storage"`
	HTTPStatuses map[string]uint64 `json:"http_statuses"`
	Errors       map[string]uint64 `json:"errors"`
	FetchSeconds Histogram         `json:"fetch_seconds"`
	TopQueued    []HostQueued      `json:"top_queued_hosts"`
	Slowest      []HostSlow        `json:"slowest_hosts"`
	Peers        []PeerStatus      `json:"peers"`
}

// StatusTotals are the node's counts.
type StatusTotals struct {
	Pages        uint64            `json:"pages"`   // pages the store made durable
	Fetched      uint64            `json:"fetched"` // responses received
	Bytes        uint64            `json:"bytes"`   // their body bytes
	URLs         uint64            `json:"urls_known"`
	Queue        uint64            `json:"queue"` // URLs not finished
	InList       uint64            `json:"in_list"`
	InProgress   uint64            `json:"in_progress"`
	Stalled      uint64            `json:"stalled"` // waiting to be retried
	Completed    uint64            `json:"completed"`
	Redirected   uint64            `json:"redirected"`
	Failed       uint64            `json:"failed"`       // URLs given up
	FetchErrors  uint64            `json:"fetch_errors"` // failed attempts
	RobotsDenied uint64            `json:"robots_denied"`
	Links        uint64            `json:"links"`
	Admitted     uint64            `json:"admitted"`
	Rejected     uint64            `json:"rejected"`
	Filtered     map[string]uint64 `json:"filtered"`
	// RobotsOverBudget: URLs denied this run because their check ran out
	// of its budget (robots.Rules.CheckURL): "robots.txt too costly to
	// check", not "robots.txt said no".
	RobotsOverBudget   uint64 `json:"robots_over_budget"`
	RobotsCacheBytes   uint64 `json:"robots_cache_bytes"`   // rule sets held (robots.Cache.Bytes)
	RobotsCacheEvicted uint64 `json:"robots_cache_evicted"` // origins evicted to bound them
	// RobotsAbandoned: robots.txt fetches sent and cut short because their
	// list's context ended (a slot's cutoff, the crawl stopping), nothing
	// cached (robots.Source.Abandoned); one never sent is not counted.
	RobotsAbandoned uint64 `json:"robots_abandoned"`
}

// StatusRates are the current and average rates.
type StatusRates struct {
	PagesPerSecond    float64 `json:"pages_per_second"`
	MBPerSecond       float64 `json:"mb_per_second"`
	AvgPagesPerSecond float64 `json:"avg_pages_per_second"`
	AvgMBPerSecond    float64 `json:"avg_mb_per_second"`
}

// StatusHistory is the rate over the last hour, oldest first.
type StatusHistory struct {
	StepSeconds    int       `json:"step_seconds"`
	PagesPerSecond []float64 `json:"pages_per_second"`
	MBPerSecond    []float64 `json:"mb_per_second"`
}

// PhaseStatus is where the node stands in the cluster's phases.
type PhaseStatus struct {
	Active        int       `json:"active"`
	Phases        int       `json:"phases"`
	Slot          int64     `json:"slot"`
	NextSwap      time.Time `json:"next_swap"`
	SecondsToSwap float64   `json:"seconds_to_swap"`
	InGuard       bool      `json:"in_guard"`
	MayStart      bool      `json:"may_start"`
	ClockSafe     bool      `json:"clock_safe"`
	ClockSynced   bool      `json:"clock_synced"`
	ClockOffset   float64   `json:"clock_offset_seconds"`
	ClockReason   string    `json:"clock_reason"`
	ClockSource   string    `json:"clock_source"` // "system" or "ntp"
}

// SchedulerStatus is the window and the buckets.
type SchedulerStatus struct {
	WindowSize  int            `json:"window_size"`
	WindowLo    uint64         `json:"window_lo"`
	WindowScan  uint64         `json:"window_scan"`
	WindowEnd   uint64         `json:"window_end"`
	Rows        int            `json:"rows"`
	RowsUsed    int            `json:"rows_used"`
	HostsInView int            `json:"hosts_in_view"`
	Ready       int            `json:"ready"`
	Out         int            `json:"out"`
	IPBlocked   int            `json:"ip_blocked"`
	Buckets     map[string]int `json:"buckets"`
}

// FetcherStatus is how busy the fetchers are.
type FetcherStatus struct {
	Busy       int     `json:"busy"`
	Max        int     `json:"max"`
	DelaySecs  float64 `json:"politeness_delay_seconds"`
	PausedSecs float64 `json:"paused_seconds"`
}

// DNSStatus is the resolver's cache.
type DNSStatus struct {
	Hits     int64   `json:"hits"`
	Misses   int64   `json:"misses"`
	HitRate  float64 `json:"hit_rate"`
	Queries  int64   `json:"queries"`
	Timeouts int64   `json:"timeouts"`

	Prefetched     uint64 `json:"prefetched"`
	PrefetchFailed uint64 `json:"prefetch_failed"`
	PrefetchLate   uint64 `json:"prefetch_late"`
}

// DiskStatus is one page store directory.
type DiskStatus struct {
	Dir       string  `json:"dir"`
	Bytes     uint64  `json:"bytes"`
	Records   uint64  `json:"records"`
	Free      uint64  `json:"free_bytes"`
	Size      uint64  `json:"size_bytes"`
	WriteRate float64 `json:"write_bytes_per_second"`
	Failed    bool    `json:"failed"`
}

// Histogram is a cumulative histogram in Prometheus's shape.
type Histogram struct {
	Buckets []Bucket `json:"buckets"`
	Count   uint64   `json:"count"`
	Sum     float64  `json:"sum"`
}

// Bucket counts the observations ≤ LE.
type Bucket struct {
	LE    float64 `json:"le"`
	Count uint64  `json:"count"`
}

// HostQueued is a host with ids queued in the window.
type HostQueued struct {
	Host   string `json:"host"`
	Queued int    `json:"queued"`
}

// HostSlow is a host and its time per page in its last list.
type HostSlow struct {
	Host    string    `json:"host"`
	Seconds float64   `json:"seconds_per_page"`
	Pages   int       `json:"pages"`
	At      time.Time `json:"at"`
}

// PeerStatus is another node of the cluster as this one sees it; a
// NodeConfig.Peers hook fills it in.
type PeerStatus struct {
	Node         int       `json:"node"`
	Addr         string    `json:"addr"`
	Up           bool      `json:"up"`
	Queue        uint64    `json:"queue"`
	SpilledBytes uint64    `json:"spilled_bytes"`
	LastHeard    time.Time `json:"last_heard"`

	DroppedForged   uint64   `json:"dropped_forged"`
	DroppedReplayed uint64   `json:"dropped_replayed"`
	DroppedBad      uint64   `json:"dropped_bad"`
	ConfigMismatch  []string `json:"config_mismatch"`
	ProbeRounds     uint64   `json:"probe_rounds"`
	// AcksMerged: datagrams in its name that wanted an answer (replayed,
	// or our acknowledgement lost) when one was due already, and went
	// without one of their own (communicator.PeerStats.AcksMerged).
	AcksMerged uint64 `json:"acks_merged"`
	// LostDir: the peer came back with a new data directory in this
	// crawl (in this run or one before: DIR/CLUSTER keeps it), and the
	// URLs it held were lost with its old one.
	LostDir bool `json:"lost_dir"`
	// StaleControl: control messages from the peer of a run before a
	// restart (its, or this node's), sent again from a spill file, and
	// ignored or, a state of its run before, taken as busy
	// (ClusterStats.StaleFinished, StaleBye, StaleState).
	StaleControl uint64 `json:"stale_control"`
}

// Counters returns the part of s the progress line shows.
func (s *Status) Counters() Counters {
	return Counters{Pages: s.Totals.Pages, Bytes: s.Totals.Bytes, URLs: s.Totals.URLs, Queue: s.Totals.Queue,
		Errors: s.Totals.FetchErrors, Phase: s.Phase.Active, Phases: s.Phase.Phases}
}

const (
	statusTopK      = 10
	historySeconds  = 3600
	historyStep     = 10
	historyFine     = 600 // seconds of history shown one point a second
	slowStale       = 10 * time.Minute
	numCollectKinds = int(collector.NotTried) + 1
)
