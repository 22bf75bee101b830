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
