package main

import (
	"errors"
	"io"
)

func runAudit(args []string, stdout, stderr io.Writer) error {
	fs := newFlags(stderr, "audit", "audit --log FILE [--json]", "Reports on a request log.")
	fs.String("log", "", "request log")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return errors.New("not implemented yet")
}
