package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/kspider/kspider/collector"
	"github.com/kspider/kspider/spider/robots"
)

const robotsUsage = "robots check --robots FILE --agent NAME URL...\n       kspider robots check --jsonl < REQUESTS"

const robotsHelp = `Checks URLs against a robots.txt file as kspider's crawler does (RFC 9309).

subcommands:
  check   print "allowed URL" or "disallowed URL" for each URL

Run 'kspider robots check --help' for its flags.`

// runRobots dispatches the robots subcommands (only "check" for now).
func runRobots(ctx context.Context, e env, args []string) error {
	if len(args) == 0 || args[0] != "check" {
		fs := newFlags(e, "robots", robotsUsage, robotsHelp)
		if err := parseFlags(e, fs, args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			return usagef("missing subcommand (check)")
		}
		return usagef("unknown subcommand %q (check)", fs.Arg(0))
	}
	return runRobotsCheck(ctx, e, args[1:])
}

const robotsCheckHelp = `Prints "allowed URL" or "disallowed URL" for each URL, judged by the rules
the robots.txt FILE ("-" for standard input) sets for the user agent NAME
(its product token: "KSpider" of "KSpider/1.0 (+https://...)").
A URL that does not parse, or is not an absolute http(s) URL with a host
(robots.txt rules apply to nothing else), prints "error URL: reason" and the
command exits 1 after checking the others. A URL the rules' wildcard
patterns are too costly to check against (a hostile file's thousands of
'*' patterns and a long path) is disallowed, as the crawler answers, with a
note on standard error.

With --jsonl, reads one JSON object per line from standard input,
  {"robots": "<robots.txt text>", "agent": "NAME", "url": "URL"}
and writes one line per input line, in the same order:
  {"allowed": true} or {"allowed": false} ("over_budget": true beside it
  when too costly to check), or {"error": "reason"} for a
malformed line or a url that is not http(s) (the command goes on with the
next line).`

func runRobotsCheck(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "robots check", "robots check --robots FILE --agent NAME URL...\n       kspider robots check --jsonl < REQUESTS", robotsCheckHelp)
	file := fs.String("robots", "", "robots.txt `FILE` to check against (- for standard input)")
	agent := fs.String("agent", "KSpider", "user agent `NAME` (its product token picks the group)")
	jsonl := fs.Bool("jsonl", false, "read JSON requests from standard input, write JSON answers")
	limit := fs.Int("limit", robots.DefaultMaxSize, "parse at most `BYTES` of a robots.txt (RFC 9309: at least 500 KiB)")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	if *limit < 1 {
		return usagef("--limit %d: want a positive number of bytes", *limit)
	}
	if *jsonl {
		if *file != "" || fs.NArg() > 0 {
			return usagef("--jsonl takes its requests from standard input, not --robots or URL arguments")
		}
		return robotsJSONL(ctx, e, *limit, maxRequestLine)
	}
	if *file == "" {
		return usagef("missing --robots FILE")
	}
	if fs.NArg() == 0 {
		return usagef("missing URL")
	}
	if strings.TrimSpace(*agent) == "" {
		return usagef("--agent is empty")
	}
	body, err := readRobotsFile(e, *file, *limit)
	if err != nil {
		return err
	}
	parsed := robots.ParseLimit(body, *limit)
	if parsed.Truncated {
		fmt.Fprintf(e.stderr, "kspider robots: %s is longer than %d bytes: the rest is ignored, as the crawler ignores it (--limit)\n", *file, *limit)
	}
	rules := parsed.Rules(*agent)
	w := bufio.NewWriter(e.stdout)
	bad := 0
	for _, u := range fs.Args() {
		if err := checkRobotsURL(u); err != nil {
			fmt.Fprintf(w, "error %s: %v\n", u, err)
			bad++
			continue
		}
		verdict := "disallowed"
		before := rules.OverBudget()
		if rules.AllowedURL(u) {
			verdict = "allowed"
		}
		if rules.OverBudget() != before {
			fmt.Fprintf(e.stderr, "kspider robots: %s: the rules' wildcard patterns are too costly to check against it (robots.Rules.OverBudget): disallowed, as the crawler answers\n", u)
		}
		fmt.Fprintf(w, "%s %s\n", verdict, u)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d inputs are not http(s) URLs", bad, fs.NArg())
	}
	return nil
}

// readRobotsFile reads at most limit+1 bytes of path ("-": stdin): one
// byte past the limit is enough for the parser to know it cuts the file,
// and reading on would never end on an endless input (a pipe, /dev/zero).
func readRobotsFile(e env, path string, limit int) ([]byte, error) {
	in := e.stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		in = f
	}
	body, err := io.ReadAll(io.LimitReader(in, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return body, nil
}

// maxRequestLine bounds one --jsonl request: a robots.txt past the parse
// limit is ignored anyway, escaped JSON at most doubles it.
const maxRequestLine = 16 << 20

type robotsRequest struct {
	Robots *string `json:"robots"`
	Agent  string  `json:"agent"`
	URL    *string `json:"url"`
}

func robotsJSONL(ctx context.Context, e env, limit, maxLine int) error {
	r := bufio.NewReaderSize(e.stdin, 64<<10)
	w := bufio.NewWriter(e.stdout)
	enc := json.NewEncoder(w)
	var lastBody string
	var lastFile *robots.File
	for lineNo := 1; ; lineNo++ {
		if err := ctx.Err(); err != nil {
			w.Flush()
			return err
		}
		line, tooLong, err := readLine(r, maxLine)
		if err == io.EOF && len(line) == 0 && !tooLong {
			break
		}
		if err != nil && err != io.EOF {
			w.Flush()
			return fmt.Errorf("reading requests: %w", err)
		}
		var answer any
		switch req, rerr := parseRobotsRequest(line, tooLong, maxLine); {
		case rerr != nil:
			answer = struct {
				Error string `json:"error"`
			}{fmt.Sprintf("line %d: %v", lineNo, rerr)}
		default:
			if lastFile == nil || *req.Robots != lastBody {
				lastBody, lastFile = *req.Robots, robots.ParseLimit([]byte(*req.Robots), limit)
			}
			rules := lastFile.Rules(req.Agent)
			answer = struct {
				Allowed bool `json:"allowed"`
				// OverBudget: disallowed because the check ran out of
				// its budget (robots.Rules.OverBudget), not by a rule.
				OverBudget bool `json:"over_budget,omitempty"`
			}{rules.AllowedURL(*req.URL), rules.OverBudget() > 0}
		}
		if err := enc.Encode(answer); err != nil {
			return err
		}
		if err == io.EOF {
			break
		}
	}
	return w.Flush()
}

func parseRobotsRequest(line []byte, tooLong bool, maxLine int) (robotsRequest, error) {
	var req robotsRequest
	if tooLong {
		return req, fmt.Errorf("request longer than %d bytes", maxLine)
	}
	if len(bytes.TrimSpace(line)) == 0 {
		return req, errors.New("empty line")
	}
	if err := json.Unmarshal(line, &req); err != nil {
		return req, fmt.Errorf("not a JSON object: %v", err)
	}
	switch {
	case req.Robots == nil:
		return req, errors.New(`missing "robots"`)
	case req.URL == nil:
		return req, errors.New(`missing "url"`)
	case strings.TrimSpace(req.Agent) == "":
		return req, errors.New(`missing "agent"`)
	}
	if err := checkRobotsURL(*req.URL); err != nil {
		return req, fmt.Errorf("bad url %q: %v", *req.URL, err)
	}
	return req, nil
}

// checkRobotsURL says why u cannot be checked against a robots.txt: the
// rules apply to the paths of http(s) URLs, and answering "disallowed" for
// "example.com/x" or "ftp://h/" would be a verdict on nothing.
func checkRobotsURL(u string) error {
	// The collector's parse: it takes a path whose '%' starts no escape
	// ("/home%"), which net/url refuses and a crawl fetches.
	p, err := collector.ParseURL(u)
	switch {
	case err != nil:
		return errors.Unwrap(err)
	case p.Scheme != "http" && p.Scheme != "https":
		if p.Scheme == "" {
			return errors.New("not an absolute URL (http:// or https:// missing)")
		}
		return fmt.Errorf("scheme %q is not http or https", p.Scheme)
	case p.Host == "":
		return errors.New("no host")
	}
	return nil
}

// readLine reads one line without its line ending (LF or CRLF). A line
// longer than max is skipped to its end and reported as tooLong.
func readLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > max+2 {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		buf = bytes.TrimSuffix(buf, []byte("\n"))
		buf = bytes.TrimSuffix(buf, []byte("\r"))
		return buf, tooLong, err
	}
}
