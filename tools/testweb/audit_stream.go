package testweb

import (
	"container/heap"
	"encoding/binary"
	"io"
	"sort"
	"time"
)

// auditor computes a Report from entries taken one at a time. It keeps what
// is per host, per client address, per server address and per connection
// still open in the log; the requests and connections themselves go through
// bounded sorters (by host, then start), and each host is then swept in
// order of start keeping only what is in flight. So its memory follows the
// web and the crawl's concurrency, not the log's length.
type auditor struct {
	opt        AuditOptions
	rep        *Report
	hostID     map[string]uint32
	hosts      []hostTally
	clientID   map[string]uint32
	clients    []*clientTally
	ipID       map[string]uint32
	ipNames    []string
	ipRequests []int
	// open holds the connections with requests in the log but no record
	// yet: a record comes when its connection closes, after its requests.
	open      map[uint64]*openConn
	reqs      *extSorter // host, start, end, client
	connHosts *extSorter // host, start, end: one per host a connection served
	connIPs   *extSorter // server address, start, end
	urls      *extSorter
	forbidden []string
	rec       []byte
	// peakOpen is the most connections open at once, for tests.
	peakOpen int
}

type hostTally struct {
	name      string
	forbidden int
}

type clientTally struct {
	ClientReport
	hosts map[uint32]struct{}
}

type openConn struct {
	reqStart, reqEnd int64
	hosts            []uint32
	server           uint32
}

// auditChunk is what each of the audit's sorters holds before writing a
// sorted run to a temporary file.
const auditChunk = 8 << 20

// newAuditor makes an auditor whose sorters each hold up to chunk bytes
// (0: no bound, nothing written to disk).
func newAuditor(opt AuditOptions, chunk int) *auditor {
	if opt.MaxList <= 0 {
		opt.MaxList = 20
	}
	dir := opt.TempDir
	return &auditor{
		opt:       opt,
		rep:       &Report{Statuses: map[int]int{}, MinRequestGap: -1, MinConnGap: -1},
		hostID:    map[string]uint32{},
		clientID:  map[string]uint32{},
		ipID:      map[string]uint32{},
		open:      map[uint64]*openConn{},
		reqs:      newExtSorter(dir, chunk),
		connHosts: newExtSorter(dir, chunk),
		connIPs:   newExtSorter(dir, chunk),
		urls:      newExtSorter(dir, chunk),
	}
}

func (a *auditor) close() {
	for _, s := range []*extSorter{a.reqs, a.connHosts, a.connIPs, a.urls} {
		s.close()
	}
}

func (a *auditor) host(name string) uint32 {
	id, ok := a.hostID[name]
	if !ok {
		id = uint32(len(a.hosts))
		a.hostID[name] = id
		a.hosts = append(a.hosts, hostTally{name: name})
	}
	return id
}

func (a *auditor) client(ip string) (uint32, *clientTally) {
	id, ok := a.clientID[ip]
	if !ok {
		id = uint32(len(a.clients))
		a.clientID[ip] = id
		a.clients = append(a.clients, &clientTally{ClientReport: ClientReport{IP: ip}, hosts: map[uint32]struct{}{}})
	}
	return id, a.clients[id]
}

func (a *auditor) ip(ip string) uint32 {
	id, ok := a.ipID[ip]
	if !ok {
		id = uint32(len(a.ipNames))
		a.ipID[ip] = id
		a.ipNames = append(a.ipNames, ip)
		a.ipRequests = append(a.ipRequests, 0)
	}
	return id
}

// putTime appends t so that bytewise order is numeric order.
func putTime(b []byte, t int64) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(t)^1<<63)
}

func getTime(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ 1<<63) }

func (a *auditor) add(e *Entry) error {
	cip := ipOf(e.Client)
	cid, c := a.client(cip)
	sip := a.ip(ipOf(e.Server))
	if e.Kind == "conn" {
		a.rep.Connections++
		c.Connections++
		oc := a.open[e.Conn]
		delete(a.open, e.Conn)
		start, end := e.Start, e.End
		if oc != nil {
			start, end = min(start, oc.reqStart), max(end, oc.reqEnd)
		} else {
			oc = &openConn{}
		}
		oc.server = sip
		return a.finishConn(oc, start, end)
	}
	rep := a.rep
	rep.Requests++
	rep.Statuses[e.Status]++
	c.Requests++
	a.ipRequests[sip]++
	if e.Status == 421 {
		rep.Misdirected++
	}
	hid := a.host(e.Host)
	c.hosts[hid] = struct{}{}
	a.rec = append(append(append(a.rec[:0], e.Scheme...), "://"...), e.Host...)
	a.rec = append(a.rec, e.Target...)
	if err := a.urls.add(a.rec); err != nil {
		return err
	}
	if e.Disallowed {
		rep.Forbidden++
		a.hosts[hid].forbidden++
		if len(a.forbidden) < a.opt.MaxList {
			a.forbidden = append(a.forbidden, string(a.rec))
		}
	}
	a.rec = binary.BigEndian.AppendUint32(a.rec[:0], hid)
	a.rec = putTime(putTime(a.rec, e.Start), e.End)
	a.rec = binary.BigEndian.AppendUint32(a.rec, cid)
	if err := a.reqs.add(a.rec); err != nil {
		return err
	}
	oc := a.open[e.Conn]
	if oc == nil {
		oc = &openConn{reqStart: e.Start, reqEnd: e.End}
		a.open[e.Conn] = oc
		a.peakOpen = max(a.peakOpen, len(a.open))
	}
	oc.reqStart, oc.reqEnd = min(oc.reqStart, e.Start), max(oc.reqEnd, e.End)
	oc.server = sip
	for _, h := range oc.hosts {
		if h == hid {
			return nil
		}
	}
	// Mostly one host, a few on the front address; a client sending many
	// Host names on one connection costs time here, not memory.
	oc.hosts = append(oc.hosts, hid)
	return nil
}

// finishConn records a connection's interval for each host it served and
// for its server address.
func (a *auditor) finishConn(oc *openConn, start, end int64) error {
	for _, h := range oc.hosts {
		a.rec = binary.BigEndian.AppendUint32(a.rec[:0], h)
		if err := a.connHosts.add(putTime(putTime(a.rec, start), end)); err != nil {
			return err
		}
	}
	a.rec = binary.BigEndian.AppendUint32(a.rec[:0], oc.server)
	return a.connIPs.add(putTime(putTime(a.rec, start), end))
}

// finish sweeps the sorted records into the report.
func (a *auditor) finish() (*Report, error) {
	rep := a.rep
	// A connection the log has no record of (log cut short) spans its requests.
	for id, oc := range a.open {
		delete(a.open, id)
		if err := a.finishConn(oc, oc.reqStart, oc.reqEnd); err != nil {
			return nil, err
		}
	}
	if err := a.sweepURLs(); err != nil {
		return nil, err
	}
	rep.ForbiddenURLs = a.forbidden
	if err := a.sweepHosts(); err != nil {
		return nil, err
	}
	it, err := a.connIPs.iter()
	if err != nil {
		return nil, err
	}
	err = sweepGroups(it, func(ip uint32, peak *peakSweep) {
		name := a.ipNames[ip]
		r := IPReport{IP: name, Requests: a.ipRequests[ip], MaxConns: peak.max}
		if r.MaxConns > rep.MaxConnsPerIP || r.MaxConns == rep.MaxConnsPerIP && (rep.MaxConnsIP == "" || name < rep.MaxConnsIP) {
			rep.MaxConnsPerIP, rep.MaxConnsIP = r.MaxConns, name
		}
		rep.IPs = append(rep.IPs, r)
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(rep.IPs, func(i, j int) bool { return rep.IPs[i].IP < rep.IPs[j].IP })
	for _, c := range a.clients {
		c.ClientReport.Hosts = len(c.hosts)
		rep.Clients = append(rep.Clients, c.ClientReport)
	}
	sort.Slice(rep.Clients, func(i, j int) bool { return rep.Clients[i].IP < rep.Clients[j].IP })
	return rep, nil
}

// sweepURLs counts the distinct URLs and keeps the most fetched.
func (a *auditor) sweepURLs() error {
	it, err := a.urls.iter()
	if err != nil {
		return err
	}
	rep := a.rep
	var cur []byte
	n := 0
	byCount := func(i, j int) bool {
		x, y := rep.Duplicates[i], rep.Duplicates[j]
		return x.Count > y.Count || x.Count == y.Count && x.URL < y.URL
	}
	flush := func() {
		if n > 1 {
			rep.Duplicates = append(rep.Duplicates, URLCount{string(cur), n})
			if len(rep.Duplicates) >= 2*a.opt.MaxList {
				sort.Slice(rep.Duplicates, byCount)
				rep.Duplicates = rep.Duplicates[:a.opt.MaxList]
			}
		}
	}
	for {
		u, err := it.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if n > 0 && string(u) == string(cur) {
			n++
			continue
		}
		flush()
		rep.DistinctURLs++
		cur, n = append(cur[:0], u...), 1
	}
	flush()
	rep.DuplicateFetches = rep.Requests - rep.DistinctURLs
	sort.Slice(rep.Duplicates, byCount)
	if len(rep.Duplicates) > a.opt.MaxList {
		rep.Duplicates = rep.Duplicates[:a.opt.MaxList]
	}
	return nil
}

// sweepHosts takes each host's requests, and then its connections, in
// order of start.
func (a *auditor) sweepHosts() error {
	reqs, err := a.reqs.iter()
	if err != nil {
		return err
	}
	conns, err := a.connHosts.iter()
	if err != nil {
		return err
	}
	rep := a.rep
	pending, perr := conns.next()
	var sw *hostSweep
	endHost := func() error {
		if sw == nil {
			return nil
		}
		var cp peakSweep
		prev := int64(0)
		for ; perr == nil && binary.BigEndian.Uint32(pending) <= sw.id; pending, perr = conns.next() {
			if binary.BigEndian.Uint32(pending) < sw.id {
				continue // cannot be: every connection's host has requests
			}
			start, end := getTime(pending[4:]), getTime(pending[12:])
			if cp.n > 0 {
				g := time.Duration(start - prev)
				if sw.hr.MinConnGap < 0 || g < sw.hr.MinConnGap {
					sw.hr.MinConnGap = g
				}
			}
			prev = start
			cp.add(start, end)
		}
		if perr != nil && perr != io.EOF {
			return perr
		}
		sw.hr.MaxConns = cp.max
		a.addHost(sw)
		return nil
	}
	for {
		r, err := reqs.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		hid := binary.BigEndian.Uint32(r)
		if sw == nil || hid != sw.id {
			if err := endHost(); err != nil {
				return err
			}
			h := a.hosts[hid]
			sw = &hostSweep{id: hid, hr: HostReport{Host: h.name, MinGap: -1, MinConnGap: -1, Forbidden: h.forbidden},
				clients: newOverlapFinder(h.name)}
		}
		sw.add(interval{getTime(r[4:]), getTime(r[12:]), a.clients[binary.BigEndian.Uint32(r[20:])].IP})
	}
	if err := endHost(); err != nil {
		return err
	}
	sort.Slice(rep.Hosts, func(i, j int) bool { return rep.Hosts[i].Host < rep.Hosts[j].Host })
	sort.Slice(rep.SharedHosts, func(i, j int) bool { return rep.SharedHosts[i].Host < rep.SharedHosts[j].Host })
	a.trimOverlaps()
	return nil
}

func (a *auditor) addHost(sw *hostSweep) {
	rep, hr, h := a.rep, &sw.hr, sw.hr.Host
	hr.MaxInFlight = sw.peak.max
	hr.Clients = append([]string(nil), sw.clients.order...)
	sort.Strings(hr.Clients)
	if hr.MaxConns > rep.MaxConnsPerHost || hr.MaxConns == rep.MaxConnsPerHost && (rep.MaxConnsHost == "" || h < rep.MaxConnsHost) {
		rep.MaxConnsPerHost, rep.MaxConnsHost = hr.MaxConns, h
	}
	rep.MaxInFlightPerHost = max(rep.MaxInFlightPerHost, hr.MaxInFlight)
	if hr.MinGap >= 0 && (rep.MinRequestGap < 0 || hr.MinGap < rep.MinRequestGap || hr.MinGap == rep.MinRequestGap && h < rep.MinRequestGapHost) {
		rep.MinRequestGap, rep.MinRequestGapHost = hr.MinGap, h
	}
	if hr.MinConnGap >= 0 && (rep.MinConnGap < 0 || hr.MinConnGap < rep.MinConnGap || hr.MinConnGap == rep.MinConnGap && h < rep.MinConnGapHost) {
		rep.MinConnGap, rep.MinConnGapHost = hr.MinConnGap, h
	}
	rep.Hosts = append(rep.Hosts, *hr)
	overlaps, shared := sw.clients.result()
	rep.Overlaps = append(rep.Overlaps, overlaps...)
	if len(rep.Overlaps) >= 2*a.opt.MaxList {
		a.trimOverlaps()
	}
	if shared != nil {
		rep.SharedHosts = append(rep.SharedHosts, *shared)
	}
}

// trimOverlaps keeps the earliest overlaps, MaxList at most.
func (a *auditor) trimOverlaps() {
	o := a.rep.Overlaps
	sort.Slice(o, func(i, j int) bool {
		x, y := o[i], o[j]
		if x.At != y.At {
			return x.At < y.At
		}
		if x.Host != y.Host {
			return x.Host < y.Host
		}
		return x.A < y.A || x.A == y.A && x.B < y.B
	})
	if len(o) > a.opt.MaxList {
		a.rep.Overlaps = o[:a.opt.MaxList]
	}
}

// sweepGroups takes records of (id, start, end) sorted, and calls done once
// per id with the peak of its intervals.
func sweepGroups(it *merge, done func(id uint32, peak *peakSweep)) error {
	var peak *peakSweep
	var cur uint32
	for {
		r, err := it.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		id := binary.BigEndian.Uint32(r)
		if peak != nil && id != cur {
			done(cur, peak)
			peak = nil
		}
		if peak == nil {
			peak, cur = &peakSweep{}, id
		}
		peak.add(getTime(r[4:]), getTime(r[12:]))
	}
	if peak != nil {
		done(cur, peak)
	}
	return nil
}

// hostSweep audits one host's requests taken in order of start.
type hostSweep struct {
	id        uint32
	hr        HostReport
	peak      peakSweep
	prevStart int64
	latestEnd int64
	clients   *overlapFinder
}

func (sw *hostSweep) add(iv interval) {
	hr := &sw.hr
	if hr.Requests > 0 {
		g := time.Duration(iv.start - sw.prevStart)
		if hr.MinGap < 0 || g < hr.MinGap {
			hr.MinGap = g
		}
		idle := time.Duration(iv.start - sw.latestEnd)
		if hr.Requests == 1 || idle < hr.MinIdleGap {
			hr.MinIdleGap = idle
		}
	}
	if hr.Requests == 0 || iv.end > sw.latestEnd {
		sw.latestEnd = iv.end
	}
	sw.prevStart = iv.start
	hr.Requests++
	sw.peak.add(iv.start, iv.end)
	sw.clients.add(iv)
}

// peakSweep finds the most intervals containing one moment, for intervals
// taken in order of start, keeping only the ends of those still open; an
// interval ending at t does not overlap one starting at t.
type peakSweep struct {
	ends int64Heap
	n    int
	max  int
}

func (p *peakSweep) add(start, end int64) {
	p.n++
	for len(p.ends) > 0 && p.ends[0] <= start {
		heap.Pop(&p.ends)
	}
	if end > start {
		heap.Push(&p.ends, end)
	}
	p.max = max(p.max, len(p.ends))
}

type int64Heap []int64

func (h int64Heap) Len() int           { return len(h) }
func (h int64Heap) Less(i, j int) bool { return h[i] < h[j] }
func (h int64Heap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *int64Heap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *int64Heap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
