package main

import "context"

// runClock is a placeholder until its issue lands.
func runClock(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "clock", "clock --ntp SERVER... [--phases P --phase-length D --node I]", "Prints the NTP offset, the current slot, the active phase and the time to the next swap.")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	return errNotImplemented
}
