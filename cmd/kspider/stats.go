package main

import "context"

// runStats is a placeholder until its issue lands.
func runStats(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "stats", "stats --data DIR [--json|--html FILE]", "Reports statistics over the pages of a store, offline.")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	return errNotImplemented
}
