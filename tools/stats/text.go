package stats

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// WriteText writes r as aligned text tables.
func (r *Report) WriteText(w io.Writer) error {
	tw := &textWriter{w: w}
	s := r.Summary
	tw.table("Summary", []string{"", "value"}, [][]string{
		{"URLs", itoa(s.URLs)},
		{"bytes stored", itoa(s.BytesStored)},
		{"HTML documents", itoa(s.HTMLDocuments)},
		{"HTML bytes", itoa(s.HTMLBytes)},
		{"web servers (host names)", itoa(s.WebServers)},
		{"machines (IP addresses)", itoa(s.Machines)},
		{"domains", itoa(s.Domains)},
		{"outgoing links", itoa(s.Links)},
	})
	tw.counts("HTTP status", "status", "pages", r.Status)
	tw.counts("Server software by web server", "server", "servers", r.ServersBySoftware)
	tw.counts("Server software by page", "server", "pages", r.PagesBySoftware)
	tw.domains("Domain suffixes", "suffix", r.Suffixes)
	tw.domains("Top domains by servers", "domain", r.TopDomainsByServers)
	tw.domains("Top domains by documents", "domain", r.TopDomainsByDocuments)
	tw.counts("Outgoing links per HTML document", "links", "documents", r.LinksPerPage)
	tw.matrix("Links between domain suffixes (row: from, column: to)", r.LinkMatrix)
	tw.counts("File extensions", "extension", "pages", r.Extensions)
	tw.counts("Content types", "type", "pages", r.ContentTypes)
	tw.counts("Charsets of HTML documents", "charset", "documents", r.Charsets)
	tw.counts("Page sizes", "body", "pages", r.PageSizes)
	tw.counts("Fetch times", "time", "pages", r.FetchTimes)
	if c := r.Compression; c != nil {
		tw.table("Compression", []string{"", "value"}, [][]string{
			{"raw bytes", itoa(c.RawBytes)},
			{"stored bytes", itoa(c.StoredBytes)},
			{"ratio", strconv.FormatFloat(c.Ratio, 'f', 2, 64)},
		})
	}
	p := r.Problems
	tw.table("Problems", []string{"", "count"}, [][]string{
		{"damaged regions the store skipped", itoa(p.BadRecords)},
		{"pages known lost to damage", itoa(p.LostPages)},
		{"unparseable header blocks", itoa(p.BadHeaders)},
		{"URLs without a host", itoa(p.BadURLs)},
		{"HTML documents not valid UTF-8", itoa(p.HTMLNotUTF8)},
		{"pages whose links could not be extracted", itoa(p.LinkErrors)},
	})
	return tw.err
}

type textWriter struct {
	w     io.Writer
	err   error
	wrote bool // a table is out: the next one needs a blank line first
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func percent(n, total int64) string {
	if total == 0 {
		return "-"
	}
	return strconv.FormatFloat(100*float64(n)/float64(total), 'f', 1, 64)
}

func (tw *textWriter) counts(title, keyName, countName string, rows []Count) {
	var total int64
	for _, r := range rows {
		total += r.Count
	}
	cells := make([][]string, len(rows))
	for i, r := range rows {
		cells[i] = []string{r.Key, itoa(r.Count), percent(r.Count, total)}
	}
	tw.table(title, []string{keyName, countName, "%"}, cells)
}

func (tw *textWriter) domains(title, keyName string, rows []DomainRow) {
	cells := make([][]string, len(rows))
	for i, r := range rows {
		cells[i] = []string{r.Name, itoa(r.Servers), itoa(r.Machines), itoa(r.Pages), itoa(r.Documents)}
	}
	tw.table(title, []string{keyName, "servers", "machines", "pages", "documents"}, cells)
}

func (tw *textWriter) matrix(title string, m Matrix) {
	head := append([]string{"from \\ to"}, m.Names...)
	cells := make([][]string, len(m.Names))
	for i, name := range m.Names {
		row := []string{name}
		for _, n := range m.Links[i] {
			row = append(row, itoa(n))
		}
		cells[i] = row
	}
	tw.table(title, head, cells)
}

// table writes a titled table; the first column is left-aligned, the others
// (numbers) right-aligned. Cells are sanitised: data from the web must not be
// able to break the layout or write control characters to a terminal.
func (tw *textWriter) table(title string, head []string, rows [][]string) {
	if tw.err != nil {
		return
	}
	var b strings.Builder
	if tw.wrote {
		b.WriteByte('\n')
	}
	tw.wrote = true
	b.WriteString(title)
	b.WriteByte('\n')
	widths := make([]int, len(head))
	all := append([][]string{head}, rows...)
	for _, row := range all {
		for i := range row {
			row[i] = printable(row[i])
			widths[i] = max(widths[i], utf8.RuneCountInString(row[i]))
		}
	}
	if len(rows) == 0 {
		b.WriteString("  (none)\n")
	}
	for n, row := range all {
		if n == 0 && len(rows) == 0 {
			continue
		}
		line := "  "
		for i, cell := range row {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell))
			if i == 0 {
				line += cell + pad
			} else {
				line += "  " + pad + cell
			}
		}
		b.WriteString(strings.TrimRight(line, " "))
		b.WriteByte('\n')
	}
	_, tw.err = io.WriteString(tw.w, b.String())
}

// printable replaces control characters and invalid UTF-8, and clips what is
// too long for a table cell.
func printable(s string) string {
	ok := utf8.RuneCountInString(s) <= 60
	for _, c := range s {
		if c < ' ' || c == 0x7f || c == utf8.RuneError || (c >= 0x80 && c < 0xa0) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	n := 0
	for _, c := range s {
		if n == 59 {
			b.WriteRune('…')
			break
		}
		if c < ' ' || c == 0x7f || c == utf8.RuneError || (c >= 0x80 && c < 0xa0) {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteRune(c)
		}
		n++
	}
	return b.String()
}
