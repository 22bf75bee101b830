package main

import "context"

// benchStorage is a placeholder until its issue lands.
func benchStorage(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "bench storage", "bench storage --html DIR [--disks N] [--json]", "Benchmarks the storage pipeline.")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	return errNotImplemented
}
