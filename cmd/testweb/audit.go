package main

import (
	"encoding/json"
	"io"
	"os"

	"github.com/kspider/kspider/tools/testweb"
)

const auditDescription = `Reports on a request log written by "testweb serve --log": requests,
distinct URLs, duplicate fetches, robots-forbidden requests, the most
connections open at once per host and per server address, the smallest gap
between requests (and between connections) to one host, requests per client
address, and hosts two client addresses worked on at the same time.

The log is read one line at a time; its requests are sorted through
temporary files in $TMPDIR (unlinked at once), so memory stays bounded
(tens of megabytes) however long the log.`

func runAudit(args []string, stdout, stderr io.Writer) error {
	fs := newFlags(stderr, "audit", "audit --log FILE [--json] [--list N]", auditDescription)
	logPath := fs.String("log", "", "request log (JSON lines); - for standard input")
	asJSON := fs.Bool("json", false, "print the full report as JSON")
	list := fs.Int("list", 20, "how many duplicate URLs, forbidden URLs and overlaps to list")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *logPath == "" {
		return usagef("--log is required")
	}
	if *list < 1 {
		return usagef("--list %d: want at least 1", *list)
	}
	var in io.Reader = os.Stdin
	if *logPath != "-" {
		f, err := os.Open(*logPath)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	rep, err := testweb.Audit(in, testweb.AuditOptions{MaxList: *list})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.WriteText(stdout)
}
