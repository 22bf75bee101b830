package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/kspider/kspider/spider"
)

// checkCluster verifies a cluster node's DIR/CLUSTER, its record of the
// crawl's end and of the peers' shares it saw lost. A damaged one makes
// the node refuse to start, and cannot be rebuilt: what it recorded was
// seen once. The operator deletes it, forgetting the losses (the run then
// ends 0 though data was lost) or, knowing them, keeps the exit status
// in mind.
func checkCluster(dir string, repair bool, w io.Writer) (problems int, err error) {
	says, err := spider.CheckClusterFile(dir)
	path := filepath.Join(dir, spider.ClusterFile)
	switch {
	case err == nil:
		fmt.Fprintf(w, "cluster: %s: ok: %s\n", path, says)
		return 0, nil
	case errors.Is(err, fs.ErrNotExist):
		return 0, err
	}
	fmt.Fprintf(w, "cluster: %v\n", err)
	fmt.Fprintf(w, "cluster: %s: cannot repair: the node refuses to start with it; deleting it forgets the losses it records\n", path)
	return 1, nil
}
