package spider

import "github.com/kspider/kspider/urltree"

// SchedHostOf is the host function a node gives its scheduler
// (scheduler.Config.HostOf) over its URL tree: the host the node gives
// scheduler.Add for the URL of each id, or false where the tree cannot
// tell (an id it lacks, an entry a repair lost). kspider check gives
// scheduler.CheckFor the same, so that a sched/ from before format
// version 3 that the node refuses is not said ok.
func SchedHostOf(tree *urltree.Tree) func(id uint32) (string, bool) {
	return func(id uint32) (string, bool) {
		u, err := tree.Get(id, nil)
		if err != nil {
			return "", false
		}
		return hostKey(string(u)), true
	}
}
