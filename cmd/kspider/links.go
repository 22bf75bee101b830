package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/textproto"
	"os"
	"slices"
	"strings"

	"github.com/kspider/kspider/spider/links"
	"github.com/kspider/kspider/spider/urlnorm"
)

// maxPageBytes bounds the page kspider links reads, as the collector bounds
// what it downloads.
const maxPageBytes = 64 << 20

// headerFlags collects repeated --header "Name: value" flags.
type headerFlags struct{ h http.Header }

func (f *headerFlags) String() string { return "" }

func (f *headerFlags) Set(v string) error {
	name, value, ok := strings.Cut(v, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return fmt.Errorf("header %q is not \"Name: value\"", v)
	}
	if f.h == nil {
		f.h = http.Header{}
	}
	f.h.Add(textproto.CanonicalMIMEHeaderKey(name), strings.TrimSpace(value))
	return nil
}

func runLinks(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "links", "links --base URL [--jsonl] [--header 'Name: value']... [FILE|-]",
		`Prints every link of an HTML page (FILE, or stdin for - or none), resolved
against --base (the URL the page was fetched from) and in the crawler's
canonical form, one per line in document order; links of response headers
given with --header (Location, Link, Refresh) come first. Links without a
canonical form (mailto:, javascript:, invalid) are left out and counted on
stderr, as are links over --max-links and the page's robots directives.
--jsonl prints one JSON object per link with its element, attribute and rel.`)
	base := fs.String("base", "", "URL of the page (required): links are resolved against it")
	jsonl := fs.Bool("jsonl", false, "print {\"url\",\"element\",\"attribute\",\"rel\",\"nofollow\"} JSON lines")
	maxLinks := fs.Int("max-links", links.DefaultMaxLinks, "cap on distinct URLs per page, fragments removed (0 or negative: no cap)")
	agent := fs.String("agent", "", "robots name whose <meta name=...> and X-Robots-Tag lines apply too")
	strip := fs.Bool("strip-session-ids", false, "remove session ids from the links")
	sortQ := fs.Bool("sort-query", false, "sort the query parameters of the links")
	var headers headerFlags
	fs.Var(&headers, "header", "a response header `Name: value` (repeatable)")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	if *base == "" {
		return usagef("--base is required")
	}
	if fs.NArg() > 1 {
		return usagef("at most one FILE")
	}
	// Checked before the page is read: a bad --base should not wait for
	// (or read all of) a page on stdin first.
	if _, err := urlnorm.Parse(*base); err != nil {
		return usagef("--base: %v", err)
	}
	var in io.Reader = e.stdin
	name := "stdin"
	if fs.NArg() == 1 && fs.Arg(0) != "-" {
		name = fs.Arg(0)
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	body, err := io.ReadAll(io.LimitReader(in, maxPageBytes+1))
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	if len(body) > maxPageBytes {
		return fmt.Errorf("%s: page larger than %d bytes", name, maxPageBytes)
	}
	if *maxLinks == 0 {
		*maxLinks = -1 // 0 would mean the default to Extract
	}
	opts := links.Options{MaxLinks: *maxLinks, Agent: *agent}
	opts.Canonical.StripSessionIDs, opts.Canonical.SortQuery = *strip, *sortQ
	res, err := links.Extract(body, *base, headers.h, opts)
	if err != nil {
		return usagef("--base: %v", err)
	}
	w := bufio.NewWriter(e.stdout)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, l := range res.Links {
		if *jsonl {
			enc.Encode(jsonLink{URL: l.URL, Element: l.Element, Attr: l.Attr, Rel: l.Rel, NoFollow: l.NoFollow})
		} else {
			w.WriteString(l.URL)
			w.WriteByte('\n')
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if res.DroppedTotal > 0 {
		fmt.Fprintf(e.stderr, "kspider links: %d links left out:", res.DroppedTotal)
		for _, r := range slices.Sorted(maps.Keys(res.Dropped)) {
			fmt.Fprintf(e.stderr, " %s=%d", r, res.Dropped[r])
		}
		fmt.Fprintln(e.stderr)
	}
	if res.Truncated > 0 {
		fmt.Fprintf(e.stderr, "kspider links: cap of %d distinct URLs reached, %d more links left out\n", *maxLinks, res.Truncated)
	}
	if res.NoFollow || res.NoIndex {
		fmt.Fprintf(e.stderr, "kspider links: page robots directives: nofollow=%v noindex=%v\n", res.NoFollow, res.NoIndex)
	}
	return nil
}

type jsonLink struct {
	URL      string `json:"url"`
	Element  string `json:"element"`
	Attr     string `json:"attribute"`
	Rel      string `json:"rel,omitempty"`
	NoFollow bool   `json:"nofollow,omitempty"`
}
