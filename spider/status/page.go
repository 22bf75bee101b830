package status

import (
	"fmt"
	"html/template"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kspider/kspider/spider"
)

// The dashboard is rendered on the server, numbers and chart included, so
// it works with JavaScript off; it reloads itself (meta refresh) and loads
// nothing from anywhere (its Content-Security-Policy forbids it).

const chartW, chartH = 720.0, 160.0

type pageData struct {
	S       *spider.Status
	Refresh int
	Chart   chart
	Filter  []kv
	Codes   []kv
	Errors  []kv
	Buckets []kv
}

type kv struct {
	K string
	V uint64
}

type chart struct {
	Pages, MB       string // polyline points
	MaxPages, MaxMB float64
	Points          int
	Span            string // how far back the chart goes
}

func sortedKV[V int | uint64](m map[string]V, numeric bool) []kv {
	out := make([]kv, 0, len(m))
	for k, v := range m {
		out = append(out, kv{k, uint64(v)})
	}
	sort.Slice(out, func(i, j int) bool {
		if numeric {
			a, _ := strconv.Atoi(out[i].K)
			b, _ := strconv.Atoi(out[j].K)
			return a < b
		}
		return out[i].K < out[j].K
	})
	return out
}

// line scales vs into the chart: oldest at the left, the last point at the
// right edge, 0 at the bottom, top = the largest value (at least min).
func line(vs []float64, top float64) string {
	var b strings.Builder
	n := len(vs)
	for i, v := range vs {
		x := chartW
		if n > 1 {
			x = chartW * float64(i) / float64(n-1)
		}
		y := chartH - chartH*v/top
		fmt.Fprintf(&b, "%.1f,%.1f ", x, y)
	}
	return strings.TrimSpace(b.String())
}

func maxOf(vs []float64, floor float64) float64 {
	m := floor
	for _, v := range vs {
		if !math.IsNaN(v) && v > m {
			m = v
		}
	}
	return m
}

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	st := s.Node.Status()
	d := pageData{S: st, Refresh: s.Refresh}
	if d.Refresh <= 0 {
		d.Refresh = 5
	}
	h := st.History
	d.Chart = chart{MaxPages: maxOf(h.PagesPerSecond, 1), MaxMB: maxOf(h.MBPerSecond, 0.01), Points: len(h.PagesPerSecond)}
	if secs := len(h.PagesPerSecond) * h.StepSeconds; secs < 120 {
		d.Chart.Span = fmt.Sprintf("%d s", secs)
	} else {
		d.Chart.Span = fmt.Sprintf("%d min", secs/60)
	}
	d.Chart.Pages = line(h.PagesPerSecond, d.Chart.MaxPages)
	d.Chart.MB = line(h.MBPerSecond, d.Chart.MaxMB)
	d.Filter = sortedKV(st.Totals.Filtered, false)
	d.Codes = sortedKV(st.HTTPStatuses, true)
	d.Errors = sortedKV(st.Errors, false)
	d.Buckets = sortedKV(st.Scheduler.Buckets, false)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	if err := pageTmpl().Execute(w, d); err != nil {
		fmt.Fprintf(w, "<p>error: %s</p>", template.HTMLEscapeString(err.Error()))
	}
}

// pageTmpl is parsed on the first request, not at start: parsed in the
// package's initialisation it cost every kspider command (a crawl that
// serves no page included) 1,900 allocations and the template parser's
// code in its resident set.
var pageTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Funcs(pageFuncs).Parse(pageHTML))
})

// pageFuncs are the page's template functions (read only).
var pageFuncs = template.FuncMap{
	"n": func(v any) string {
		switch x := v.(type) {
		case uint64:
			return spider.GroupDigits(x)
		case int:
			if x >= 0 {
				return spider.GroupDigits(uint64(x))
			}
		case int64:
			if x >= 0 {
				return spider.GroupDigits(uint64(x))
			}
		}
		return fmt.Sprint(v)
	},
	"f": func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) },
	"bytes": func(v uint64) string {
		switch {
		case v >= 1e12:
			return fmt.Sprintf("%.2f TB", float64(v)/1e12)
		case v >= 1e9:
			return fmt.Sprintf("%.2f GB", float64(v)/1e9)
		case v >= 1e6:
			return fmt.Sprintf("%.1f MB", float64(v)/1e6)
		}
		return fmt.Sprintf("%.1f kB", float64(v)/1e3)
	},
	"pct": func(v float64) string { return strconv.FormatFloat(100*v, 'f', 1, 64) + " %" },
	"ts": func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"mb": func(v float64) float64 { return v / 1e6 },
}

const pageHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="refresh" content="{{.Refresh}}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>kspider: {{.S.State}}, {{n .S.Totals.Pages}} pages</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1em 2em;color:#222;background:#fafafa}
h1{font-size:20px;margin:0 0 .3em} h2{font-size:15px;margin:1em 0 .3em;color:#345}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(330px,1fr));gap:0 2em}
table{border-collapse:collapse;width:100%} td,th{padding:1px 6px;text-align:left;border-bottom:1px solid #e4e4e4}
td.v{text-align:right;font-variant-numeric:tabular-nums}
.state{display:inline-block;padding:1px 8px;border-radius:4px;background:#cde;font-weight:600}
.state.paused,.state.draining{background:#fd8} .state.stopped{background:#ddd}
svg{background:#fff;border:1px solid #ccc} .pages{stroke:#1565c0} .mb{stroke:#c62828}
.legend span{margin-right:1.5em} .muted{color:#777} td.dir{word-break:break-all}
</style></head>
<body>
<h1>kspider node <span class="state {{.S.State}}" id="state">{{.S.State}}</span></h1>
<p class="muted">snapshot {{ts .S.Time}} · up {{f .S.Uptime 0}} s · status format v{{.S.Version}} · <a href="/status">/status</a> (JSON) · <a href="/metrics">/metrics</a> (Prometheus) · reloads every {{.Refresh}} s</p>

<h2>Rate, last {{.Chart.Span}}</h2>
<p class="legend"><span class="pages">&#9632; pages/s <b id="rate-pages" data-value="{{.S.Rates.PagesPerSecond}}">{{f .S.Rates.PagesPerSecond 1}}</b> (peak {{f .Chart.MaxPages 1}})</span>
<span class="mb">&#9632; MB/s <b id="rate-mb" data-value="{{.S.Rates.MBPerSecond}}">{{f .S.Rates.MBPerSecond 2}}</b> (peak {{f .Chart.MaxMB 2}})</span>
<span class="muted">average {{f .S.Rates.AvgPagesPerSecond 1}} pages/s, {{f .S.Rates.AvgMBPerSecond 2}} MB/s</span></p>
<svg id="chart" data-points="{{.Chart.Points}}" width="720" height="160" viewBox="0 0 720 160" role="img" aria-label="pages per second and MB per second over the last hour">
<line x1="0" y1="159" x2="720" y2="159" stroke="#999"/>
<text x="4" y="13" font-size="11" fill="#1565c0">{{f .Chart.MaxPages 1}} pages/s</text>
<text x="716" y="13" font-size="11" fill="#c62828" text-anchor="end">{{f .Chart.MaxMB 2}} MB/s</text>
<text x="4" y="153" font-size="11" fill="#777">{{.Chart.Span}} ago</text>
<text x="716" y="153" font-size="11" fill="#777" text-anchor="end">now</text>
<polyline id="line-pages" class="pages" fill="none" stroke-width="2" points="{{.Chart.Pages}}"/>
<polyline id="line-mb" class="mb" fill="none" stroke-width="1.5" stroke-dasharray="4 2" points="{{.Chart.MB}}"/>
</svg>

<div class="grid">
<div><h2>Totals</h2><table id="totals">
<tr><td>pages stored</td><td class="v" id="t-pages" data-value="{{.S.Totals.Pages}}">{{n .S.Totals.Pages}}</td></tr>
<tr><td>responses</td><td class="v" id="t-fetched" data-value="{{.S.Totals.Fetched}}">{{n .S.Totals.Fetched}}</td></tr>
<tr><td>bytes stored</td><td class="v" id="t-bytes" data-value="{{.S.Totals.Bytes}}">{{bytes .S.Totals.Bytes}}</td></tr>
<tr><td>URLs known</td><td class="v" id="t-urls" data-value="{{.S.Totals.URLs}}">{{n .S.Totals.URLs}}</td></tr>
<tr><td>in list</td><td class="v" id="t-inlist" data-value="{{.S.Totals.InList}}">{{n .S.Totals.InList}}</td></tr>
<tr><td>in progress</td><td class="v" id="t-inprogress" data-value="{{.S.Totals.InProgress}}">{{n .S.Totals.InProgress}}</td></tr>
<tr><td>waiting retry</td><td class="v" id="t-stalled" data-value="{{.S.Totals.Stalled}}">{{n .S.Totals.Stalled}}</td></tr>
<tr><td>completed / redirected</td><td class="v">{{n .S.Totals.Completed}} / {{n .S.Totals.Redirected}}</td></tr>
<tr><td>failed URLs / failed fetches</td><td class="v" id="t-failed" data-value="{{.S.Totals.Failed}}">{{n .S.Totals.Failed}} / {{n .S.Totals.FetchErrors}}</td></tr>
<tr><td>robots.txt denied</td><td class="v" id="t-denied" data-value="{{.S.Totals.RobotsDenied}}">{{n .S.Totals.RobotsDenied}}</td></tr>
<tr><td>robots.txt too costly to check</td><td class="v" id="t-overbudget" data-value="{{.S.Totals.RobotsOverBudget}}">{{n .S.Totals.RobotsOverBudget}}</td></tr>
<tr><td>robots.txt fetches abandoned (sent, their list ended before the answer)</td><td class="v" id="t-robotsabandoned" data-value="{{.S.Totals.RobotsAbandoned}}">{{n .S.Totals.RobotsAbandoned}}</td></tr>
<tr><td>robots.txt cache</td><td class="v" id="t-robotscache">{{bytes .S.Totals.RobotsCacheBytes}}, {{n .S.Totals.RobotsCacheEvicted}} evicted</td></tr>
{{range .Filter}}{{if .V}}<tr><td>filtered: {{.K}}</td><td class="v">{{n .V}}</td></tr>{{end}}{{end}}
</table></div>

<div><h2>Phase and clock</h2><table id="phase">
<tr><td>active phase</td><td class="v" id="p-active">{{if ge .S.Phase.Active 0}}{{.S.Phase.Active}} of {{.S.Phase.Phases}}{{else}}none{{end}}</td></tr>
<tr><td>next swap in</td><td class="v">{{f .S.Phase.SecondsToSwap 0}} s</td></tr>
<tr><td>clock</td><td class="v">{{.S.Phase.ClockSource}}, {{if .S.Phase.ClockSafe}}safe{{else}}UNSAFE {{.S.Phase.ClockReason}}{{end}}, offset {{f .S.Phase.ClockOffset 4}} s</td></tr>
<tr><td>guard interval</td><td class="v">{{if .S.Phase.InGuard}}yes{{else}}no{{end}}</td></tr>
</table>
<h2>Fetchers and DNS</h2><table>
<tr><td>fetchers busy</td><td class="v" id="f-busy" data-value="{{.S.Fetchers.Busy}}">{{.S.Fetchers.Busy}} of {{.S.Fetchers.Max}}</td></tr>
<tr><td>politeness delay</td><td class="v">{{f .S.Fetchers.DelaySecs 3}} s</td></tr>
<tr><td>DNS cache hit rate</td><td class="v" id="dns-rate">{{pct .S.DNS.HitRate}} ({{n .S.DNS.Hits}} hits, {{n .S.DNS.Misses}} misses)</td></tr>
</table></div>

<div><h2>Scheduler</h2><table id="sched">
<tr><td>window</td><td class="v">{{n .S.Scheduler.WindowLo}} – {{n .S.Scheduler.WindowEnd}} (size {{n .S.Scheduler.WindowSize}})</td></tr>
<tr><td>bucket rows used</td><td class="v" id="s-rows">{{n .S.Scheduler.RowsUsed}} of {{n .S.Scheduler.Rows}}</td></tr>
{{range .Buckets}}<tr><td>hosts {{.K}}</td><td class="v">{{n .V}}</td></tr>{{end}}
<tr><td>ready / ids out</td><td class="v">{{n .S.Scheduler.Ready}} / {{n .S.Scheduler.Out}}</td></tr>
</table></div>

<div><h2>Storage</h2><table id="storage"><tr><th>dir</th><th>written</th><th>free</th><th>MB/s</th></tr>
{{range .S.Storage}}<tr><td class="dir">{{.Dir}}{{if .Failed}} <b>FAILED</b>{{end}}</td><td class="v">{{bytes .Bytes}}</td><td class="v">{{bytes .Free}}</td><td class="v">{{f (mb .WriteRate) 2}}</td></tr>{{end}}
</table></div>

<div><h2>HTTP statuses</h2><table id="codes">
{{range .Codes}}<tr><td>{{.K}}</td><td class="v">{{n .V}}</td></tr>{{else}}<tr><td class="muted">none yet</td></tr>{{end}}
</table>
<h2>Errors</h2><table id="errors">
{{range .Errors}}{{if .V}}<tr><td>{{.K}}</td><td class="v">{{n .V}}</td></tr>{{end}}{{end}}
</table></div>

<div><h2>Most queued hosts</h2><table id="queued">
{{range .S.TopQueued}}<tr><td>{{.Host}}</td><td class="v">{{n .Queued}}</td></tr>{{else}}<tr><td class="muted">none</td></tr>{{end}}
</table>
<h2>Slowest hosts (s per page, last list)</h2><table id="slowest">
{{range .S.Slowest}}<tr><td>{{.Host}}</td><td class="v">{{f .Seconds 3}}</td></tr>{{else}}<tr><td class="muted">none</td></tr>{{end}}
</table></div>

{{if .S.Peers}}<div><h2>Peers</h2><table id="peers"><tr><th>node</th><th>state</th><th>queue</th><th>spilled</th><th>last heard</th><th title="datagrams in its name dropped: wrong address or MAC / old or already delivered / misdirected, malformed, beyond the window">dropped forged / replayed / bad</th><th>config</th><th title="termination probe rounds answered by it (node 0) or received from node 0">probe rounds</th><th title="its control messages of a run before a restart (its or ours), sent again from a spill file: ignored, or a state of its run before taken as busy">stale control</th></tr>
{{range .S.Peers}}<tr><td>{{.Node}} {{.Addr}}</td><td>{{if .Up}}up{{else}}<b>down</b>{{end}}{{if .LostDir}}, <b title="it came back with a new data directory: the URLs it held are lost">lost its data directory</b>{{end}}</td><td class="v">{{n .Queue}}</td><td class="v">{{bytes .SpilledBytes}}</td><td>{{ts .LastHeard}}</td><td class="v">{{n .DroppedForged}} / {{n .DroppedReplayed}} / {{n .DroppedBad}}</td><td>{{if .ConfigMismatch}}<b>differs:</b> {{range $i, $m := .ConfigMismatch}}{{if $i}}; {{end}}{{$m}}{{end}}{{else}}same{{end}}</td><td class="v">{{n .ProbeRounds}}</td><td class="v">{{n .StaleControl}}</td></tr>{{end}}
</table></div>{{end}}
</div>
</body></html>
`
