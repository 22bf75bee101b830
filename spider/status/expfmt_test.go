package status

import (
	"bytes"
	"math"
	"testing"
)

// The text format as Prometheus's Go client writes it: families by name,
// samples by labels (names sorted), escapes, special floats, histograms
// with their +Inf bucket, empty families left out.
func TestExpfmt(t *testing.T) {
	s := newScrape()
	z := s.family("z_total", "Last.", counterValue)
	z.add(2, "node", "2", "kind", "b")
	z.add(1, "node", "1", "kind", "a\"q\\\n")
	z.add(3, "node", "3", "kind", "d\xff\xfe/é")
	s.family("empty", "None.", gaugeValue)
	a := s.family("a", "Help with \\ and\nnewline.", gaugeValue)
	a.add(math.Inf(+1))
	h := s.family("h_seconds", "Histogram.", histogramValue)
	h.histogram(10, 4.5, map[float64]uint64{1: 9, 0.1: 5, math.Inf(+1): 10})
	var b bytes.Buffer
	s.write(&b)
	want := `# HELP a Help with \\ and\nnewline.
# TYPE a gauge
a +Inf
# HELP h_seconds Histogram.
# TYPE h_seconds histogram
h_seconds_bucket{le="0.1"} 5
h_seconds_bucket{le="1"} 9
h_seconds_bucket{le="+Inf"} 10
h_seconds_sum 4.5
h_seconds_count 10
# HELP z_total Last.
# TYPE z_total counter
z_total{kind="a\"q\\\n",node="1"} 1
z_total{kind="b",node="2"} 2
z_total{kind="d\\xff\\xfe/é",node="3"} 3
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	for v, want := range map[float64]string{9e8: "9e+08", 0: "0", math.NaN(): "NaN", math.Inf(-1): "-Inf", 2.25e6: "2.25e+06", 0.5: "0.5"} {
		if got := formatFloat(v); got != want {
			t.Errorf("formatFloat(%v) = %q, want %q", v, got, want)
		}
	}
}
