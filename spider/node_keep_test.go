package spider

import (
	"testing"
	"time"

	"github.com/kspider/kspider/scheduler"
)

// TestKeepIdle: connections are kept between a host's lists unless a
// cluster or a long politeness delay says otherwise.
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
		{"cluster", NodeConfig{Cluster: &NodeCluster{}}, 0},
	} {
		if got := keepIdle(c.cfg); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
