// Package finding is what a read-only verifier (scheduler.Check,
// communicator.CheckSpill) reports: one problem or note, with its file and
// offset, printed the same way by every part of kspider check.
package finding

import "fmt"

// Finding is one thing a check found, in which file and at which offset.
type Finding struct {
	File   string
	Offset int64
	What   string
	// Damage is false for what a crash leaves behind and the part's own
	// open handles without losing anything committed.
	Damage bool
}

func (f Finding) String() string {
	kind := "note"
	if f.Damage {
		kind = "damage"
	}
	return fmt.Sprintf("%s: %s: offset %d: %s", kind, f.File, f.Offset, f.What)
}

// Damaged reports whether any of fs is damage.
func Damaged(fs []Finding) bool {
	for _, f := range fs {
		if f.Damage {
			return true
		}
	}
	return false
}
