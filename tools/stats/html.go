package stats

import (
	_ "embed"
	"html/template"
	"io"
	"strconv"
)

//go:embed report.html.tmpl
var reportTemplate string

// WriteHTML writes r as one self-contained HTML page: tables and inline SVG
// bar charts, no scripts, style sheets or images from elsewhere. Every string
// from the data is escaped by html/template.
func (r *Report) WriteHTML(w io.Writer, title string) error {
	t, err := template.New("report").Parse(reportTemplate)
	if err != nil {
		return err // the embedded template is tested
	}
	s := r.Summary
	page := htmlPage{
		Title: title,
		Summary: []htmlRow{
			{"URLs", s.URLs}, {"bytes stored", s.BytesStored},
			{"HTML documents", s.HTMLDocuments}, {"HTML bytes", s.HTMLBytes},
			{"web servers (host names)", s.WebServers}, {"machines (IP addresses)", s.Machines},
			{"domains", s.Domains}, {"outgoing links", s.Links},
		},
		Charts: []chart{
			newChart("HTTP status", "status", "pages", r.Status),
			newChart("Server software by web server", "server", "servers", r.ServersBySoftware),
			newChart("Server software by page", "server", "pages", r.PagesBySoftware),
			newChart("Outgoing links per HTML document", "links", "documents", r.LinksPerPage),
			newChart("File extensions", "extension", "pages", r.Extensions),
			newChart("Content types", "type", "pages", r.ContentTypes),
			newChart("Charsets of HTML documents", "charset", "documents", r.Charsets),
			newChart("Page sizes", "body", "pages", r.PageSizes),
			newChart("Fetch times", "time", "pages", r.FetchTimes),
		},
		Domains: []domainTable{
			{"Domain suffixes", "suffix", r.Suffixes},
			{"Top domains by servers", "domain", r.TopDomainsByServers},
			{"Top domains by documents", "domain", r.TopDomainsByDocuments},
		},
		Matrix:      newHeatmap(r.LinkMatrix),
		Compression: r.Compression,
		Problems: []htmlRow{
			{"damaged regions the store skipped", r.Problems.BadRecords},
			{"pages known lost to damage", r.Problems.LostPages},
			{"unparseable header blocks", r.Problems.BadHeaders},
			{"URLs without a host", r.Problems.BadURLs},
			{"HTML documents not valid UTF-8", r.Problems.HTMLNotUTF8},
			{"pages whose links could not be extracted", r.Problems.LinkErrors},
		},
	}
	if r.Compression != nil {
		page.Ratio = strconv.FormatFloat(r.Compression.Ratio, 'f', 2, 64)
	}
	return t.Execute(w, page)
}

type htmlPage struct {
	Title       string
	Summary     []htmlRow
	Charts      []chart
	Domains     []domainTable
	Matrix      heatmap
	Compression *Compression
	Ratio       string
	Problems    []htmlRow
}

type htmlRow struct {
	Name  string
	Value int64
}

type domainTable struct {
	Title, KeyName string
	Rows           []DomainRow
}

// chart is a horizontal bar chart laid out for the template.
type chart struct {
	Title, KeyName, CountName string
	Height                    int
	Bars                      []bar
}

type bar struct {
	Label   string // clipped to fit beside the bar
	Full    string // the whole label, as the bar's tooltip
	Count   int64
	Percent string
	Y       int     // top of the bar
	TextY   int     // baseline of its labels
	Width   float64 // bar length in pixels
	CountX  float64 // where the count is written
}

// Chart geometry in pixels.
const (
	chartLabelWidth = 220
	chartBarWidth   = 360
	chartRow        = 20
	chartLabelRunes = 32 // what fits in chartLabelWidth at 12px
)

func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func newChart(title, keyName, countName string, rows []Count) chart {
	var total, most int64
	for _, r := range rows {
		total += r.Count
		most = max(most, r.Count)
	}
	c := chart{Title: title, KeyName: keyName, CountName: countName, Height: chartRow*len(rows) + 4}
	for i, r := range rows {
		w := 0.0
		if most > 0 {
			w = float64(chartBarWidth) * float64(r.Count) / float64(most)
		}
		c.Bars = append(c.Bars, bar{
			Label:   clipRunes(printable(r.Key), chartLabelRunes),
			Full:    printable(r.Key),
			Count:   r.Count,
			Percent: percent(r.Count, total),
			Y:       i*chartRow + 2,
			TextY:   i*chartRow + 16,
			Width:   w,
			CountX:  chartLabelWidth + w + 6,
		})
	}
	return c
}

// heatmap is the link matrix as a table whose cells are shaded by count.
type heatmap struct {
	Names []string
	Rows  []heatRow
}

type heatRow struct {
	Name  string
	Cells []heatCell
}

type heatCell struct {
	Count int64
	Alpha string // background opacity, 0 to 1
}

func newHeatmap(m Matrix) heatmap {
	var most int64
	for _, row := range m.Links {
		for _, n := range row {
			most = max(most, n)
		}
	}
	h := heatmap{Names: m.Names}
	for i, name := range m.Names {
		row := heatRow{Name: name}
		for _, n := range m.Links[i] {
			a := 0.0
			if most > 0 && n > 0 {
				a = 0.1 + 0.9*float64(n)/float64(most)
			}
			row.Cells = append(row.Cells, heatCell{n, strconv.FormatFloat(a, 'f', 2, 64)})
		}
		h.Rows = append(h.Rows, row)
	}
	return h
}
