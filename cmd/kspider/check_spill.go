package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/kspider/kspider/communicator"
	"github.com/kspider/kspider/spider"
)

// checkSpill is the communicator's checker for kspider check:
// communicator.CheckSpill over the spill files and the receive-state file.
// It repairs nothing: the endpoint's reader skips exactly the damaged
// stretches and keeps a damaged spill tail aside in <file>.bad-<offset>
// when it starts, and a damaged state file is the operator's to remove.
//
// Where the node's IDENTITY says which node the directory is, a spill file
// another node wrote, or one for a node the cluster does not have, is a
// problem too: the endpoint opens only its own files by name, so such a
// file's items would never be delivered, and nothing else would say so.
func checkSpill(dir string, repair bool, w io.Writer) (problems int, err error) {
	rep, err := communicator.CheckSpill(dir)
	if err != nil {
		return 0, err
	}
	for _, f := range rep.Findings {
		fmt.Fprintf(w, "spill: %s\n", f)
		if f.Damage {
			problems++
		}
	}
	problems += foreignSpill(dir, rep, w)
	skipped, regions := rep.Skipped()
	switch {
	case problems == 0:
		fmt.Fprintf(w, "spill: %s: ok: %d spill files, %d items to deliver\n", dir, len(rep.Files), rep.Deliverable())
	case repair:
		fmt.Fprintf(w, "spill: %s: cannot repair, files left in place: %d problems, %d items still deliverable (%d damaged bytes in %d stretches skipped); the endpoint skips the damaged records and moves a damaged spill tail to <file>.bad-<offset> when it starts; remove a damaged state file by hand (peers may then deliver acknowledged batches again); move a spill file of another node to that node's data directory\n",
			dir, problems, rep.Deliverable(), skipped, regions)
	default:
		fmt.Fprintf(w, "spill: %s: %d problems, %d items still deliverable (%d damaged bytes in %d stretches skipped)\n", dir, problems, rep.Deliverable(), skipped, regions)
	}
	return problems, nil
}

// foreignSpill reports the spill files in rep that the node whose IDENTITY
// is beside dir (in dir or, for DIR/comm, in DIR) never opens
// (communicator.ForeignSpill), and returns how many. Without a readable
// IDENTITY it cannot tell and reports none: the identity checker reports a
// damaged one.
func foreignSpill(dir string, rep *communicator.SpillReport, w io.Writer) int {
	node := dir
	if filepath.Base(dir) == "comm" {
		node = filepath.Dir(dir)
	}
	id, err := spider.ReadDirIdentity(node)
	if err != nil {
		return 0
	}
	self := communicator.NodeID(id.Node)
	foreign, err := communicator.ForeignSpill(dir, self, func(p communicator.NodeID) bool { return int(p) < id.Nodes })
	if err != nil {
		fmt.Fprintf(w, "spill: %s: cannot list: %v\n", dir, err)
		return 1
	}
	for _, f := range foreign {
		items := 0
		for _, r := range rep.Files {
			if r.Path == f.Path {
				items = r.Deliverable
			}
		}
		fmt.Fprintf(w, "spill: %s: not this node's to send: %s (this directory is %s); its %d items are never delivered from here (move it to the data directory of the node that wrote it)\n", f.Path, f.Why(self), id, items)
	}
	return len(foreign)
}
