package main

import (
	"fmt"
	"io"

	"github.com/kspider/kspider/communicator"
)

// checkSpill is the communicator's checker for kspider check:
// communicator.CheckSpill over the spill files and the receive-state file.
// It repairs nothing: the endpoint's reader skips exactly the damaged
// stretches and keeps a damaged spill tail aside in <file>.bad-<offset>
// when it starts, and a damaged state file is the operator's to remove.
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
	skipped, regions := rep.Skipped()
	switch {
	case problems == 0:
		fmt.Fprintf(w, "spill: %s: ok: %d spill files, %d items to deliver\n", dir, len(rep.Files), rep.Deliverable())
	case repair:
		fmt.Fprintf(w, "spill: %s: cannot repair, files left in place: %d problems, %d items still deliverable (%d damaged bytes in %d stretches skipped); the endpoint skips the damaged records and moves a damaged spill tail to <file>.bad-<offset> when it starts; remove a damaged state file by hand (peers may then deliver acknowledged batches again)\n",
			dir, problems, rep.Deliverable(), skipped, regions)
	default:
		fmt.Fprintf(w, "spill: %s: %d problems, %d items still deliverable (%d damaged bytes in %d stretches skipped)\n", dir, problems, rep.Deliverable(), skipped, regions)
	}
	return problems, nil
}
