package cluster

import (
	"time"

	"github.com/kspider/kspider/scheduler"
)

// SystemClock is the phase source of node in sch by the system clock as
// it is, taken as safe: for a cluster without ntp_servers, whose operator
// keeps the clocks in step otherwise (chrony on every machine), and for
// tests of several nodes on one machine, which share one clock. now is
// the time source (nil: time.Now).
func SystemClock(sch scheduler.Cluster, node int, guard time.Duration, now func() time.Time) scheduler.PhaseSource {
	if now == nil {
		now = time.Now
	}
	return systemClock{sch, node, guard, now}
}

type systemClock struct {
	sch   scheduler.Cluster
	node  int
	guard time.Duration
	now   func() time.Time
}

func (c systemClock) Phase() scheduler.Phase { return c.sch.At(c.now(), c.node, c.guard) }
