package main

import "context"

// runRobots is a placeholder until its issue lands.
func runRobots(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "robots", "robots check --robots FILE --agent NAME URL...", "Checks URLs against a robots.txt file.")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	return errNotImplemented
}
