package scheduler

import (
	"fmt"
	"time"
)

// PhaseSource tells the scheduler the time and where its node stands in
// the cluster's phases. NodeClock adapts a Clock; tests inject their own.
type PhaseSource interface {
	Phase() Phase
}

type nodeClock struct {
	c    *Clock
	cl   Cluster
	node int
}

func (n nodeClock) Phase() Phase { return n.c.Phase(n.cl, n.node) }

// NodeClock is the phase source of node in cl, by the NTP-corrected clock c.
func NodeClock(c *Clock, cl Cluster, node int) PhaseSource { return nodeClock{c, cl, node} }

// Config configures a Scheduler. Zero fields take the defaults given;
// durations documented as "0: none" really mean none.
type Config struct {
	Clock  PhaseSource // required
	Phases int         // P, the number of phases hosts are spread over; default 1

	Window      int           // ids in the sliding window; default 250,000
	Columns     int           // bucket columns, a prime; default 1999
	Rows        int           // hosts per column at once; default 8
	ListLen     int           // ids per list; default 20
	PartialWait time.Duration // a partial list goes out after this; default 2 s

	MinDelay      time.Duration // politeness wait after each list; 0: none
	MaxCrawlDelay time.Duration // cap on a host's Crawl-delay; default 60 s
	ErrorDelay    time.Duration // wait after a first error, doubled per further one; default 10 s
	MaxBackoff    time.Duration // cap on the doubled wait; default 1 h
	MaxRetryAfter time.Duration // cap on Retry-After; default 1 h
	MaxRetries    int           // temporary failures before a URL fails for good; default 3 (at most 15)
	MaxHostsPerIP int           // hosts of one IP address fetching at once; 0: no limit

	// MaxWait is the longest Next waits before it asks the clock again
	// when no timer or Add is due sooner; default 100 ms, for clocks that
	// are not the system clock (tests move them). A clock that follows the
	// system clock (an NTP-corrected one) can take seconds: an idle node
	// is then not woken ten times a second for nothing.
	MaxWait time.Duration

	// PhaseKey, when set, is the part of a host's name its phase is taken
	// from: HostHash(PhaseKey(name)) mod Phases. A cluster node names its
	// hosts by origin ("https:a.example:8443") but puts every origin of
	// one host name in one phase, so that one server never sees two nodes
	// in one slot. nil: the whole name.
	PhaseKey func(name string) string

	// URLLimit, when set, is how many URL ids the node's URL tree holds at
	// Open: records past the last commit with an id at or above it are
	// dropped (counted in OpenStats.Dropped), because a crash lost those ids
	// from the tree, which will give them to other URLs. 0: no limit,
	// unless LimitURLs is set.
	URLLimit uint64
	// LimitURLs makes URLLimit apply at 0 too: a crash before the tree's
	// first sync leaves it no id, while the scheduler keeps the records
	// written in place (a kill -9 loses no mapped write); kept, they named
	// ids the tree no longer had and the node could never open again.
	LimitURLs bool

	// TreeID is the ID of the URL tree whose ids the scheduler's records
	// are (urltree.Tree.ID). A new scheduler records it in its files, and
	// so does one without (from before format version 3, or created with
	// none); one with another ID is refused with ErrForeign, as a
	// scheduler of another data directory. Zero takes any and records
	// none (tools, tests).
	TreeID [16]byte
	// HostOf, when set, returns the host name the node gives Add for the
	// tree's URL id (false: the tree cannot tell, as of an id it lacks or
	// an entry a repair lost; the record is not compared). A scheduler
	// without an ID says nothing of its tree, so before Open records
	// TreeID in one it checks a sample of its records against HostOf
	// (adoptCheck): one of another data directory is refused with
	// ErrForeign.
	HostOf func(id uint32) (string, bool)
}

func (c *Config) setDefaults() error {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defd := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Phases, 1)
	def(&c.Window, 250_000)
	def(&c.Columns, 1999)
	def(&c.Rows, 8)
	def(&c.ListLen, 20)
	def(&c.MaxRetries, 3)
	defd(&c.PartialWait, 2*time.Second)
	defd(&c.MaxCrawlDelay, 60*time.Second)
	defd(&c.ErrorDelay, 10*time.Second)
	defd(&c.MaxBackoff, time.Hour)
	defd(&c.MaxRetryAfter, time.Hour)
	defd(&c.MaxWait, 100*time.Millisecond)
	switch {
	case c.Clock == nil:
		return fmt.Errorf("%w: no clock", ErrConfig)
	case c.Phases < 1 || c.Phases > 1<<16:
		return fmt.Errorf("%w: %d phases (want 1..65536)", ErrConfig, c.Phases)
	case c.Window < 1:
		return fmt.Errorf("%w: window of %d ids", ErrConfig, c.Window)
	case c.Columns < 2 || c.Columns > MaxColumns:
		return fmt.Errorf("%w: %d columns (want 2..%d)", ErrConfig, c.Columns, MaxColumns)
	case !isPrime(c.Columns):
		return fmt.Errorf("%w: %d columns is not a prime", ErrConfig, c.Columns)
	case c.Rows < 1 || c.Rows > 255:
		return fmt.Errorf("%w: %d rows (want 1..255)", ErrConfig, c.Rows)
	case c.ListLen < 1:
		return fmt.Errorf("%w: lists of %d ids", ErrConfig, c.ListLen)
	case c.MaxRetries < 0 || c.MaxRetries > maxRetries:
		return fmt.Errorf("%w: %d retries (want 0..%d)", ErrConfig, c.MaxRetries, maxRetries)
	case c.MinDelay < 0 || c.PartialWait < 0 || c.MaxCrawlDelay < 0 || c.ErrorDelay < 0 || c.MaxBackoff < 0 || c.MaxRetryAfter < 0 || c.MaxWait < 0:
		return fmt.Errorf("%w: negative duration", ErrConfig)
	case max(c.MinDelay, c.PartialWait, c.MaxCrawlDelay, c.ErrorDelay, c.MaxBackoff, c.MaxRetryAfter, c.MaxWait) > MaxDelay:
		return fmt.Errorf("%w: a duration over %v (MinDelay %v, PartialWait %v, MaxCrawlDelay %v, ErrorDelay %v, MaxBackoff %v, MaxRetryAfter %v, MaxWait %v)",
			ErrConfig, MaxDelay, c.MinDelay, c.PartialWait, c.MaxCrawlDelay, c.ErrorDelay, c.MaxBackoff, c.MaxRetryAfter, c.MaxWait)
	case c.MaxHostsPerIP < 0:
		return fmt.Errorf("%w: %d hosts per IP", ErrConfig, c.MaxHostsPerIP)
	}
	return nil
}

// MaxDelay bounds every duration of a Config and SetMinDelay: a wait is
// added to the time in Unix nanoseconds, and doubled after errors, and a
// longer one wrapped past 2^63 to a time in the past, so that a host
// waited not at all (MinDelay 2562047h, or ErrorDelay 150 years after two
// lists with errors).
const MaxDelay = 100 * 365 * 24 * time.Hour

// MaxColumns bounds Config.Columns: the scheduler keeps 9 bytes per
// column, and a prime near 2^63 kept isPrime's d*d from ever passing n (it
// wrapped negative first), so Open never returned.
const MaxColumns = 1 << 24

func isPrime(n int) bool {
	if n < 2 {
		return false
	}
	for d := 2; d <= n/d; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}
