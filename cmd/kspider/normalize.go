package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/kspider/kspider/spider/urlnorm"
)

// maxJSONLine bounds one input line of normalize --jsonl; a longer line is
// answered with an error and skipped.
const maxJSONLine = 1 << 20

func runNormalize(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "normalize", "normalize [--base URL] [--whatwg] [--strip-session-ids] [--sort-query] REF...\n       kspider normalize --jsonl [--whatwg] < {\"base\":...,\"input\":...} lines",
		`Prints the canonical form of each REF resolved against --base, one line per
REF in order, or "error: reason" when it has none (invalid, or not http/https).
--whatwg prints the browser's href instead (WHATWG URL Standard: fragment,
credentials and all, any scheme). With --jsonl, reads {"base":...,"input":...}
lines from stdin and writes {"url":...} or {"error":...} lines in the same order.
A REF without canonical form is a result, not a failure: the exit status is
0 unless the arguments or stdin are unusable.`)
	base := fs.String("base", "", "base URL the references are resolved against (absolute references need none)")
	whatwg := fs.Bool("whatwg", false, "print the WHATWG href (layer 1) instead of the canonical form")
	jsonl := fs.Bool("jsonl", false, "read JSON lines {\"base\":...,\"input\":...} from stdin, write {\"url\":...} or {\"error\":...}")
	strip := fs.Bool("strip-session-ids", false, "remove session ids (jsessionid, PHPSESSID, sid, ...) from the canonical form")
	sortQ := fs.Bool("sort-query", false, "sort query parameters by name in the canonical form")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	n := normalizer{whatwg: *whatwg, opts: urlnorm.Options{StripSessionIDs: *strip, SortQuery: *sortQ}}
	if *jsonl {
		if fs.NArg() > 0 || *base != "" {
			return usagef("--jsonl takes the bases and references from stdin, not from arguments")
		}
		return n.jsonLines(ctx, e.stdin, e.stdout)
	}
	if fs.NArg() == 0 {
		return usagef("no REF given")
	}
	var b *urlnorm.URL
	if *base != "" {
		var err error
		if b, err = urlnorm.Parse(*base); err != nil {
			return usagef("--base: %v", err)
		}
	}
	w := bufio.NewWriter(e.stdout)
	var buf []byte
	for _, ref := range fs.Args() {
		out, err := n.appendOne(buf[:0], b, ref)
		if err != nil {
			fmt.Fprintf(w, "error: %s\n", reason(err))
			continue
		}
		buf = append(out, '\n')
		w.Write(buf)
	}
	return w.Flush()
}

// normalizer is one configuration of the normalize command.
type normalizer struct {
	whatwg bool
	opts   urlnorm.Options
}

func (n *normalizer) appendOne(dst []byte, base *urlnorm.URL, ref string) ([]byte, error) {
	if n.whatwg {
		return urlnorm.AppendHref(dst, base, ref)
	}
	return urlnorm.AppendCanonical(dst, base, ref, &n.opts)
}

// reason is the part of an error a result line shows: what was wrong, the
// input being on the line already.
func reason(err error) string {
	var ue *urlnorm.Error
	if errors.As(err, &ue) {
		return ue.Detail
	}
	return err.Error()
}

type normalizeRequest struct {
	Base  *string `json:"base"`
	Input *string `json:"input"`
}

type normalizeResult struct {
	URL   string `json:"url,omitempty"`
	Error string `json:"error,omitempty"`
}

// jsonLines answers one JSON line per input line. A bad line gets an
// error line, so the output stays aligned with the input.
func (n *normalizer) jsonLines(ctx context.Context, in io.Reader, out io.Writer) error {
	r := bufio.NewReaderSize(in, 64<<10)
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	var lastBase string
	var base *urlnorm.URL
	var baseErr error
	var buf []byte
	for lineNo := 1; ; lineNo++ {
		if lineNo%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		line, tooLong, err := readJSONLine(r, maxJSONLine)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading stdin: %w", err)
		}
		var res normalizeResult
		var req normalizeRequest
		switch {
		case tooLong:
			res.Error = fmt.Sprintf("line %d: longer than %d bytes", lineNo, maxJSONLine)
		case json.Unmarshal(line, &req) != nil:
			res.Error = fmt.Sprintf("line %d: not a JSON object {\"base\":...,\"input\":...}", lineNo)
		case req.Input == nil:
			res.Error = fmt.Sprintf("line %d: no \"input\"", lineNo)
		default:
			b := ""
			if req.Base != nil {
				b = *req.Base
			}
			if b != lastBase || base == nil && baseErr == nil {
				lastBase, base, baseErr = b, nil, nil
				if b != "" {
					base, baseErr = urlnorm.Parse(b)
				}
			}
			if baseErr != nil {
				res.Error = "base: " + reason(baseErr)
				break
			}
			o, err := n.appendOne(buf[:0], base, *req.Input)
			if err != nil {
				res.Error = reason(err)
			} else {
				buf = o
				res.URL = string(o)
			}
		}
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
	return w.Flush()
}

// readJSONLine returns the next line without its end of line. A line longer
// than max is consumed and reported with tooLong set. At the end of input
// it returns io.EOF (after a last line without newline).
func readJSONLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	var acc []byte
	for {
		chunk, isPrefix, err := r.ReadLine()
		if err != nil {
			if err == io.EOF && (acc != nil || tooLong) {
				return acc, tooLong, nil
			}
			return nil, false, err
		}
		if !tooLong {
			if len(acc)+len(chunk) > max {
				tooLong, acc = true, nil
			} else if isPrefix || acc != nil {
				acc = append(acc, chunk...)
			} else {
				acc = chunk
			}
		}
		if !isPrefix {
			if acc == nil {
				acc = []byte{}
			}
			return acc, tooLong, nil
		}
	}
}
