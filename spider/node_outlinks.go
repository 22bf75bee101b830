package spider

import "github.com/kspider/kspider/scheduler"

// pruneOutlinks drops from the writer's outlinks the links of pages that
// are durable now (their URLs completed or redirected in the scheduler):
// reexpand reads those back from the store (storedLinks), as it does for
// pages of an earlier run. Only a page between its links' arrival at the
// writer and its durability needs them in memory; kept for every page of
// the run, they grew with the crawl without bound (javadoc: 38 MB of a
// 79 MB live heap). The writer calls it after each sync.
func (n *Node) pruneOutlinks(outlinks map[uint32]pageLinks) {
	for id := range outlinks {
		if st := n.sched.URL(id).State; st == scheduler.Completed || st == scheduler.Redirected {
			delete(outlinks, id)
		}
	}
	n.prunes.Add(1)
}
