package scheduler

import (
	"fmt"
	"sync"
)

// Scheduler owns what a node knows about every URL id and every host, and
// hands out per-host lists of ids to fetch. All methods are safe for
// concurrent use; one mutex guards everything (a list of 20 ids costs one
// lock round for the take and one per report).
type Scheduler struct {
	mu     sync.Mutex
	syncMu sync.Mutex // one Sync or Close at a time; taken before mu
	synced struct {   // the commit the last Sync wrote (under syncMu)
		c  commit
		ok bool
	}
	cfg    Config
	dir    string
	id     [16]byte // the URL tree's, in every file's header
	closed bool
	broken error // a failed remap left the files unusable

	meta    *metaFile
	statesF *mappedFile
	hostsF  *mappedFile
	namesF  *mappedFile

	recs  []record // the state file's records (a view of statesF)
	count uint64   // highest id added + 1

	hosts    []hostRec // copy of the host table, written through
	names    []string
	index    hostIndex
	namesLen uint64
	phase    []uint16 // per host: HostHash mod Phases
	runIdx   []int32  // per host: index+1 into runs, 0 = no runtime state

	rt      windowState
	opened  OpenStats
	notify  chan struct{}
	counter Counters
	states  [numStates]uint64 // URLs per state, for Stats (stats.go)
}

func (s *Scheduler) usable() error {
	if s.closed {
		return ErrClosed
	}
	return s.broken
}

// usableHost is usable, and h a host in the table.
func (s *Scheduler) usableHost(h uint32) error {
	if err := s.usable(); err != nil {
		return err
	}
	if h >= uint32(len(s.hosts)) {
		return fmt.Errorf("%w: %d", ErrUnknownHost, h)
	}
	return nil
}
