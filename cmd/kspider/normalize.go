package main

import "context"

// runNormalize is a placeholder until its issue lands.
func runNormalize(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "normalize", "normalize --base URL REF...", "Prints the canonical form of each REF resolved against --base, or 'error: reason'.")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	return errNotImplemented
}
