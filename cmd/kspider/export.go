package main

import "context"

// runExport is a placeholder until its issue lands.
func runExport(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "export", "export warc --data DIR --out FILE.warc.gz", "Exports stored pages.")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	return errNotImplemented
}
