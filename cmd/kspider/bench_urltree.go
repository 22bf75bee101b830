package main

import "context"

// benchURLTree is a placeholder until its issue lands.
func benchURLTree(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "bench urltree", "bench urltree --urls FILE [--limit N] [--dir DIR] [--json]", "Benchmarks the URL tree against a Go map.")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	return errNotImplemented
}
