package stats

import (
	"cmp"
	"net/netip"
	"slices"
	"strconv"
)

// Report merges what was added so far into a Report. Call it after the scan;
// it must not run concurrently with Add.
func (c *Collector) Report() *Report {
	all := newPartial()
	c.mu.Lock()
	for _, p := range c.all {
		all.merge(p)
	}
	c.mu.Unlock()
	r := &Report{}
	r.Summary = Summary{
		URLs:          all.pages,
		BytesStored:   all.bytes,
		HTMLDocuments: all.htmlDocs,
		HTMLBytes:     all.htmlBytes,
		Links:         all.links,
	}
	r.Problems = all.problems
	r.Problems.BadRecords = c.bad.Load()
	r.Problems.LostPages = c.lost.Load()

	statuses := make([]Count, 0, len(all.status))
	for code, n := range all.status {
		statuses = append(statuses, Count{strconv.Itoa(code), n})
	}
	slices.SortFunc(statuses, func(a, b Count) int {
		return cmp.Or(cmp.Compare(len(a.Key), len(b.Key)), cmp.Compare(a.Key, b.Key))
	})
	r.Status = limitRows(statuses, c.opts.Limit)

	r.PagesBySoftware = topCounts(all.serverPages, c.opts.Limit)
	r.ContentTypes = topCounts(all.contentTypes, c.opts.Limit)
	r.Charsets = topCounts(all.charsets, c.opts.Limit)
	r.Extensions = topCounts(all.extensions, c.opts.Limit)
	r.LinksPerPage = histogram(all.linkHist, &linkBuckets)
	r.PageSizes = histogram(all.sizeHist, &sizeBuckets)
	r.FetchTimes = histogram(all.timeHist, &timeBuckets)

	// Servers, machines and documents by host, then by suffix and domain.
	software := map[string]int64{}
	machines := map[netip.Addr]struct{}{}
	suffixes := map[string]*domainAgg{}
	domains := map[string]*domainAgg{}
	for host, h := range all.hosts {
		software[h.mainSoftware()]++
		for _, ip := range h.ips {
			machines[ip] = struct{}{}
		}
		class := all.class(host)
		addDomain(suffixes, class.suffix, h)
		addDomain(domains, class.domain, h)
	}
	r.Summary.WebServers = int64(len(all.hosts))
	r.Summary.Machines = int64(len(machines))
	r.Summary.Domains = int64(len(domains))
	r.ServersBySoftware = topCounts(software, c.opts.Limit)

	suffixRows := domainRows(suffixes)
	slices.SortFunc(suffixRows, func(a, b DomainRow) int {
		return cmp.Or(cmp.Compare(b.Pages, a.Pages), cmp.Compare(a.Name, b.Name))
	})
	r.Suffixes = limitDomainRows(suffixRows, c.opts.Limit)

	domainList := domainRows(domains)
	slices.SortFunc(domainList, func(a, b DomainRow) int {
		return cmp.Or(cmp.Compare(b.Servers, a.Servers), cmp.Compare(b.Documents, a.Documents), cmp.Compare(a.Name, b.Name))
	})
	r.TopDomainsByServers = topDomainRows(domainList, c.opts.Limit)
	slices.SortFunc(domainList, func(a, b DomainRow) int {
		return cmp.Or(cmp.Compare(b.Documents, a.Documents), cmp.Compare(b.Servers, a.Servers), cmp.Compare(a.Name, b.Name))
	})
	r.TopDomainsByDocuments = topDomainRows(domainList, c.opts.Limit)

	r.LinkMatrix = linkMatrix(all.matrix, suffixRows, c.opts.MatrixSize)

	if c.opts.StoredBytes > 0 {
		r.Compression = &Compression{
			RawBytes:    all.bytes,
			StoredBytes: c.opts.StoredBytes,
			Ratio:       float64(all.bytes) / float64(c.opts.StoredBytes),
		}
	}
	return r
}

// domainAgg sums hosts into a domain or suffix.
type domainAgg struct {
	servers, pages, docs int64
	ips                  map[netip.Addr]struct{}
}

func addDomain(m map[string]*domainAgg, name string, h *hostAgg) {
	d := m[name]
	if d == nil {
		d = &domainAgg{ips: map[netip.Addr]struct{}{}}
		m[name] = d
	}
	d.servers++
	d.pages += h.pages
	d.docs += h.docs
	for _, ip := range h.ips {
		d.ips[ip] = struct{}{}
	}
}

func domainRows(m map[string]*domainAgg) []DomainRow {
	rows := make([]DomainRow, 0, len(m))
	for name, d := range m {
		rows = append(rows, DomainRow{Name: name, Servers: d.servers, Machines: int64(len(d.ips)), Pages: d.pages, Documents: d.docs})
	}
	return rows
}

// limitDomainRows keeps limit rows and sums the rest into "(other)"; the
// machines of the other row are a sum, since a machine may serve several.
func limitDomainRows(rows []DomainRow, limit int) []DomainRow {
	if limit < 0 || len(rows) <= limit {
		return rows
	}
	other := DomainRow{Name: keyOther}
	for _, r := range rows[limit:] {
		other.Servers += r.Servers
		other.Machines += r.Machines
		other.Pages += r.Pages
		other.Documents += r.Documents
	}
	return append(slices.Clip(rows[:limit]), other)
}

// topDomainRows keeps the first limit rows, copied: a top list has no
// "(other)" row.
func topDomainRows(rows []DomainRow, limit int) []DomainRow {
	if limit >= 0 && len(rows) > limit {
		rows = rows[:limit]
	}
	return slices.Clone(rows)
}

// topCounts sorts m by count (then key) and keeps limit rows plus "(other)".
func topCounts(m map[string]int64, limit int) []Count {
	rows := make([]Count, 0, len(m))
	for k, n := range m {
		rows = append(rows, Count{k, n})
	}
	slices.SortFunc(rows, func(a, b Count) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Key, b.Key))
	})
	return limitRows(rows, limit)
}

func limitRows(rows []Count, limit int) []Count {
	if limit < 0 || len(rows) <= limit {
		return rows
	}
	other := Count{Key: keyOther}
	for _, r := range rows[limit:] {
		other.Count += r.Count
	}
	return append(slices.Clip(rows[:limit]), other)
}

func histogram(counts []int64, b *bucketing) []Count {
	rows := make([]Count, len(counts))
	for i, n := range counts {
		rows[i] = Count{b.labels[i], n}
	}
	return rows
}

// linkMatrix builds the matrix over the size suffixes with the most pages
// (rows is sorted so) and "(other)" for every other suffix, links to hosts
// without pages included.
func linkMatrix(m map[[2]string]int64, rows []DomainRow, size int) Matrix {
	if len(m) == 0 {
		return Matrix{Names: []string{}, Links: [][]int64{}}
	}
	index := map[string]int{}
	var names []string
	for _, r := range rows {
		if len(names) == size {
			break
		}
		index[r.Name] = len(names)
		names = append(names, r.Name)
	}
	other := -1
	pos := func(s string) int {
		if i, ok := index[s]; ok {
			return i
		}
		if other < 0 {
			other = len(names)
			names = append(names, keyOther)
		}
		return other
	}
	type cell struct {
		i, j int
		n    int64
	}
	var cells []cell
	for k, n := range m {
		cells = append(cells, cell{pos(k[0]), pos(k[1]), n})
	}
	links := make([][]int64, len(names))
	for i := range links {
		links[i] = make([]int64, len(names))
	}
	for _, c := range cells {
		links[c.i][c.j] += c.n
	}
	return Matrix{Names: names, Links: links}
}
