package main

import "context"

// benchResolver is a placeholder until its issue lands.
func benchResolver(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "bench resolver", "bench resolver [--server ADDR] --names FILE [--json]", "Benchmarks the caching resolver.")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	return errNotImplemented
}
