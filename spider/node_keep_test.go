package spider

import (
	"testing"
	"time"

	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/spider/cluster"
)

// TestKeepIdle: connections are kept between a host's lists unless a long
// politeness delay says otherwise; with turns (by url) as well, the
// collector then keeping each no longer than its list's context, which
// ends at the slot's guard (listContext; collector's
// TestKeepIdleUntilDeadline).
func TestKeepIdle(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  NodeConfig
		want time.Duration
	}{
		{"alone", NodeConfig{}, nodeKeepIdle},
		{"short delay", NodeConfig{Scheduler: scheduler.Config{MinDelay: time.Second}}, nodeKeepIdle},
		{"long delay", NodeConfig{Scheduler: scheduler.Config{MinDelay: nodeKeepIdle}}, 0},
		{"per-IP limit", NodeConfig{Scheduler: scheduler.Config{MaxHostsPerIP: 1}}, nodeKeepIdle},
		{"cluster by url", NodeConfig{Cluster: &NodeCluster{Config: cluster.Config{Partition: cluster.ByURL}}}, nodeKeepIdle},
		{"cluster by host", NodeConfig{Cluster: &NodeCluster{Config: cluster.Config{Partition: cluster.ByHost}}}, nodeKeepIdle},
		{"cluster by domain", NodeConfig{Cluster: &NodeCluster{Config: cluster.Config{Partition: cluster.ByDomain}}}, nodeKeepIdle},
	} {
		if got := keepIdle(c.cfg); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
