package main

import "context"

// runLinks is a placeholder until its issue lands.
func runLinks(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "links", "links --base URL [FILE|-]", "Prints every link of an HTML page, resolved against --base and normalised, one per line in document order.")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	return errNotImplemented
}
