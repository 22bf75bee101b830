package status

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The Prometheus text exposition format (version 0.0.4), written here
// rather than with github.com/prometheus/client_golang: the client and the
// protobuf runtime it pulls in were 3.5 MB of the kspider binary, whose
// text and tables a crawl's process maps whole (about 3 MB of a one-host
// crawl's 31 MB peak RSS), and their package initialisation ran in every
// command. What a scrape gets is the same: families sorted by name, each
// with its HELP and TYPE, samples sorted by their labels (label names
// sorted), values as Go's shortest float ('g'), histograms as cumulative
// _bucket{le}, _sum and _count.

// valueType is a family's TYPE.
type valueType string

const (
	counterValue   valueType = "counter"
	gaugeValue     valueType = "gauge"
	histogramValue valueType = "histogram"
)

// family is one metric family of a scrape.
type family struct {
	name, help string
	typ        valueType
	samples    []sample
}

// sample is one line: the name's suffix (histograms), the rendered labels
// ({a="1",b="2"} or empty) and the value.
type sample struct {
	suffix, labels string
	value          float64
}

// scrape collects the families of one scrape.
type scrape struct {
	fams  map[string]*family
	order []string
}

func newScrape() *scrape { return &scrape{fams: map[string]*family{}} }

// family returns the family name, made on first use.
func (s *scrape) family(name, help string, typ valueType) *family {
	f := s.fams[name]
	if f == nil {
		f = &family{name: name, help: help, typ: typ}
		s.fams[name] = f
		s.order = append(s.order, name)
	}
	return f
}

// add adds a sample with labels given as name, value pairs.
func (f *family) add(v float64, labels ...string) {
	f.samples = append(f.samples, sample{labels: renderLabels(labels), value: v})
}

// histogram adds a histogram's samples: buckets maps each upper bound to
// the cumulative count of observations at or below it.
func (f *family) histogram(count uint64, sum float64, buckets map[float64]uint64) {
	les := make([]float64, 0, len(buckets))
	for le := range buckets {
		les = append(les, le)
	}
	sort.Float64s(les)
	for _, le := range les {
		if math.IsInf(le, +1) {
			continue // the +Inf bucket is the count
		}
		f.samples = append(f.samples, sample{suffix: "_bucket", labels: renderLabels([]string{"le", formatFloat(le)}), value: float64(buckets[le])})
	}
	f.samples = append(f.samples,
		sample{suffix: "_bucket", labels: `{le="+Inf"}`, value: float64(count)},
		sample{suffix: "_sum", value: sum},
		sample{suffix: "_count", value: float64(count)})
}

// write renders the scrape.
func (s *scrape) write(b *bytes.Buffer) {
	names := append([]string(nil), s.order...)
	sort.Strings(names)
	for _, name := range names {
		f := s.fams[name]
		if len(f.samples) == 0 {
			continue
		}
		b.WriteString("# HELP " + name + " " + escapeHelp(f.help) + "\n")
		b.WriteString("# TYPE " + name + " " + string(f.typ) + "\n")
		if f.typ != histogramValue { // a histogram's order is its buckets'
			sort.SliceStable(f.samples, func(i, j int) bool { return f.samples[i].labels < f.samples[j].labels })
		}
		for _, sm := range f.samples {
			b.WriteString(name + sm.suffix + sm.labels + " " + formatFloat(sm.value) + "\n")
		}
	}
}

// renderLabels renders name, value pairs sorted by name.
func renderLabels(kv []string) string {
	if len(kv) == 0 {
		return ""
	}
	type pair struct{ k, v string }
	ps := make([]pair, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		ps = append(ps, pair{kv[i], kv[i+1]})
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].k < ps[j].k })
	var b strings.Builder
	b.WriteByte('{')
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p.k + `="` + escapeLabel(p.v) + `"`)
	}
	b.WriteByte('}')
	return b.String()
}

// escapeLabel escapes a label value: backslash, double quote, line feed.
func escapeLabel(s string) string { return escape(s, true) }

// escapeHelp escapes HELP text: backslash and line feed.
func escapeHelp(s string) string { return escape(s, false) }

// escape escapes s for a label value (quote) or HELP text. A byte that is
// not UTF-8 (a data directory's name may hold any) is written as the text
// \xff: the format wants UTF-8, and Prometheus refuses a whole scrape over
// one such label; two names that differ in such bytes stay two series.
func escape(s string, quote bool) string {
	if !strings.ContainsAny(s, "\\\n\"") && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch c := s[i]; {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\\x%02x`, c)
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '"' && quote:
			b.WriteString(`\"`)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// formatFloat is the format's number: Go's shortest 'g', and +Inf, -Inf,
// NaN spelt so.
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, +1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
