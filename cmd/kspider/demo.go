package main

import "context"

// runDemo is a placeholder until its issue lands.
func runDemo(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "demo", "demo", "Starts a test web on loopback, crawls it to the end and prints a summary.")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	return errNotImplemented
}
