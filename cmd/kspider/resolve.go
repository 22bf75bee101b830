package main

import "context"

// runResolve is a placeholder until its issue lands.
func runResolve(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "resolve", "resolve [--server ADDR]... NAME...", "Resolves host names with kspider's own resolver and prints their addresses.")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	return errNotImplemented
}
