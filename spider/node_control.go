package spider

import "github.com/kspider/kspider/collector"

// runState is the state of a running node.
func (n *Node) runState() string { return "running" }

// fetcherStatus is how busy the fetchers are.
func (n *Node) fetcherStatus() FetcherStatus {
	f := n.cfg.Collector.Fetchers
	if f <= 0 {
		f = collector.DefaultFetchers
	}
	return FetcherStatus{Busy: int(n.inflight.Load()), Max: f, DelaySecs: n.cfg.Scheduler.MinDelay.Seconds()}
}
