package spider

import (
	"github.com/kspider/kspider/spider/cluster"
)

// ClusterConfig is the config's cluster block for node self (from
// cluster.Identify), checked.
func (c *RunConfig) ClusterConfig(self int) (cluster.Config, error) {
	cl := c.Cluster
	p, err := cluster.ParsePartition(cl.Partition)
	if err != nil {
		return cluster.Config{}, err
	}
	cc := cluster.Config{Self: self, Phases: cl.Phases, PhaseLength: cl.PhaseLength.Duration, Epoch: cl.Epoch, Partition: p}
	for _, m := range cl.Nodes {
		cc.Members = append(cc.Members, cluster.Member{ID: m.ID, UDP: m.UDP, Status: m.Status})
	}
	return cc, cc.Check()
}

// IsCluster reports whether `kspider run` sets the node up as one of a
// cluster (more than one node or phase: a communicator, the secret file,
// a phase clock); else it is a node alone.
func (c *RunConfig) IsCluster() bool {
	return len(c.Cluster.Nodes) > 1 || c.Cluster.Phases > 1
}

// clusterTurns reports whether the config makes a node take turns on hosts
// phase by phase: a cluster (IsCluster) whose partition takes turns
// (cluster.Config.Turns).
func (c *RunConfig) clusterTurns() bool {
	p, err := cluster.ParsePartition(c.Cluster.Partition)
	cc := cluster.Config{Partition: p}
	return err == nil && cc.Turns() && c.IsCluster()
}
