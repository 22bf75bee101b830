package main

import "context"

// runGet is a placeholder until its issue lands.
func runGet(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "get", "get --data DIR [-i] URL|ID", "Prints one stored page.")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	return errNotImplemented
}
