package testweb

import (
	"bufio"
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"time"
)

// AuditOptions tunes an audit.
type AuditOptions struct {
	MaxList int // how many duplicate / forbidden URLs and overlaps to list (default 20)
}

// Report is what an audit finds in a request log. Every figure is computed
// exactly from the logged times; two intervals that only touch (one ends
// when the other starts) do not count as simultaneous.
type Report struct {
	Requests         int         `json:"requests"`
	Connections      int         `json:"connections"`
	DistinctURLs     int         `json:"distinct_urls"`
	DuplicateFetches int         `json:"duplicate_fetches"` // requests beyond the first of each URL
	Duplicates       []URLCount  `json:"duplicates,omitempty"`
	Forbidden        int         `json:"forbidden"` // requests robots.txt forbids for their User-Agent
	ForbiddenURLs    []string    `json:"forbidden_urls,omitempty"`
	Misdirected      int         `json:"misdirected"` // requests sent to another host's address (421)
	Statuses         map[int]int `json:"statuses"`

	MaxConnsPerHost    int            `json:"max_conns_per_host"` // connections open at once that served one host
	MaxConnsHost       string         `json:"max_conns_host,omitempty"`
	MaxInFlightPerHost int            `json:"max_in_flight_per_host"` // requests in progress at once to one host
	MaxConnsPerIP      int            `json:"max_conns_per_ip"`       // connections open at once to one server address
	MaxConnsIP         string         `json:"max_conns_ip,omitempty"`
	MinRequestGap      time.Duration  `json:"min_request_gap_ns"` // smallest start-to-start gap between requests to one host (-1: no host had two)
	MinRequestGapHost  string         `json:"min_request_gap_host,omitempty"`
	MinConnGap         time.Duration  `json:"min_conn_gap_ns"` // smallest gap between opening connections that served one host (-1: none)
	MinConnGapHost     string         `json:"min_conn_gap_host,omitempty"`
	Hosts              []HostReport   `json:"hosts"`
	IPs                []IPReport     `json:"ips"`
	Clients            []ClientReport `json:"clients"`
	Overlaps           []Overlap      `json:"overlaps,omitempty"`     // two client addresses in flight on one host at once
	SharedHosts        []SharedHost   `json:"shared_hosts,omitempty"` // hosts fetched from more than one client address
}

// URLCount is a URL and how often it was fetched.
type URLCount struct {
	URL   string `json:"url"`
	Count int    `json:"count"`
}

// HostReport is the audit of one host name.
type HostReport struct {
	Host        string        `json:"host"`
	Requests    int           `json:"requests"`
	MaxConns    int           `json:"max_conns"`
	MaxInFlight int           `json:"max_in_flight"`
	MinGap      time.Duration `json:"min_gap_ns"`      // start to start; -1 with fewer than two requests
	MinIdleGap  time.Duration `json:"min_idle_gap_ns"` // end of one to start of the next; negative when they overlapped
	MinConnGap  time.Duration `json:"min_conn_gap_ns"` // between connection opens; -1 with one connection
	Clients     []string      `json:"clients"`         // client IPs
	Forbidden   int           `json:"forbidden"`
}

// IPReport is the audit of one server address.
type IPReport struct {
	IP       string `json:"ip"`
	Requests int    `json:"requests"`
	MaxConns int    `json:"max_conns"`
}

// ClientReport is what one client address did.
type ClientReport struct {
	IP          string `json:"ip"`
	Requests    int    `json:"requests"`
	Connections int    `json:"connections"`
	Hosts       int    `json:"hosts"`
}

// Overlap says two client addresses had requests in flight to one host at
// the same moment.
type Overlap struct {
	Host string `json:"host"`
	A    string `json:"a"`
	B    string `json:"b"`
	At   int64  `json:"at"` // Unix nanoseconds
}

// SharedHost lists the client addresses that fetched one host, each with the
// span from its first request's start to its last request's end.
type SharedHost struct {
	Host    string       `json:"host"`
	Clients []ClientSpan `json:"clients"`
	// Interleaved is true when two clients' spans intersect: both were
	// working on the host in the same period.
	Interleaved bool `json:"interleaved"`
}

// ClientSpan is one client's activity on a host.
type ClientSpan struct {
	IP       string `json:"ip"`
	First    int64  `json:"first"`
	Last     int64  `json:"last"`
	Requests int    `json:"requests"`
}

// ReadLog parses a request log.
func ReadLog(r io.Reader) ([]Entry, error) {
	var out []Entry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLogLine)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var e Entry
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("testweb: request log line %d: %w", n, err)
		}
		if e.Kind != "req" && e.Kind != "conn" {
			return nil, fmt.Errorf("testweb: request log line %d: unknown kind %q", n, e.Kind)
		}
		if e.End < e.Start {
			return nil, fmt.Errorf("testweb: request log line %d: ends before it starts", n)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("testweb: request log line %d: longer than %d bytes", n+1, maxLogLine)
		}
		return nil, fmt.Errorf("testweb: reading the request log: %w", err)
	}
	return out, nil
}

// maxLogLine bounds one line of a request log; the server's lines are far
// shorter (a request's target is at most its 64 KiB head).
const maxLogLine = 1 << 20

// Audit reads a request log and reports on it.
func Audit(r io.Reader, opt AuditOptions) (*Report, error) {
	entries, err := ReadLog(r)
	if err != nil {
		return nil, err
	}
	return AuditEntries(entries, opt), nil
}

type interval struct {
	start, end int64
	who        string
}

func ipOf(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return h
}

// AuditEntries reports on parsed log entries.
func AuditEntries(entries []Entry, opt AuditOptions) *Report {
	if opt.MaxList <= 0 {
		opt.MaxList = 20
	}
	rep := &Report{Statuses: map[int]int{}, MinRequestGap: -1, MinConnGap: -1}
	conns := map[uint64]interval{}
	connHosts := map[uint64]map[string]bool{}
	connClient := map[uint64]string{}
	connServer := map[uint64]string{}
	reqByHost := map[string][]interval{}
	urls := map[string]int{}
	var forbidden []string
	clients := map[string]*ClientReport{}
	clientHosts := map[string]map[string]bool{}
	client := func(ip string) *ClientReport {
		c := clients[ip]
		if c == nil {
			c = &ClientReport{IP: ip}
			clients[ip] = c
			clientHosts[ip] = map[string]bool{}
		}
		return c
	}
	hostForbidden := map[string]int{}
	ipRequests := map[string]int{}
	for _, e := range entries {
		cip := ipOf(e.Client)
		switch e.Kind {
		case "conn":
			conns[e.Conn] = interval{e.Start, e.End, cip}
			connClient[e.Conn] = cip
			connServer[e.Conn] = ipOf(e.Server)
			rep.Connections++
			client(cip).Connections++
			continue
		}
		rep.Requests++
		rep.Statuses[e.Status]++
		client(cip).Requests++
		ipRequests[ipOf(e.Server)]++
		if e.Status == 421 {
			rep.Misdirected++
		}
		u := e.Scheme + "://" + e.Host + e.Target
		urls[u]++
		if e.Disallowed {
			rep.Forbidden++
			hostForbidden[e.Host]++
			if len(forbidden) < opt.MaxList {
				forbidden = append(forbidden, u)
			}
		}
		if connHosts[e.Conn] == nil {
			connHosts[e.Conn] = map[string]bool{}
		}
		connHosts[e.Conn][e.Host] = true
		connClient[e.Conn] = cip
		connServer[e.Conn] = ipOf(e.Server)
		clientHosts[cip][e.Host] = true
		reqByHost[e.Host] = append(reqByHost[e.Host], interval{e.Start, e.End, cip})
		// A connection the log has no record of (log cut short) spans its requests.
		if _, ok := conns[e.Conn]; !ok {
			conns[e.Conn] = interval{e.Start, e.End, cip}
		}
	}
	// Connection records come after their requests; widen fallbacks only.
	for _, e := range entries {
		if e.Kind == "req" {
			c := conns[e.Conn]
			if e.Start < c.start {
				c.start = e.Start
			}
			if e.End > c.end {
				c.end = e.End
			}
			conns[e.Conn] = c
		}
	}
	rep.DistinctURLs = len(urls)
	rep.DuplicateFetches = rep.Requests - len(urls)
	rep.ForbiddenURLs = forbidden
	for u, n := range urls {
		if n > 1 {
			rep.Duplicates = append(rep.Duplicates, URLCount{u, n})
		}
	}
	sort.Slice(rep.Duplicates, func(i, j int) bool {
		a, b := rep.Duplicates[i], rep.Duplicates[j]
		return a.Count > b.Count || a.Count == b.Count && a.URL < b.URL
	})
	if len(rep.Duplicates) > opt.MaxList {
		rep.Duplicates = rep.Duplicates[:opt.MaxList]
	}

	// Connections per host and per server IP.
	connsByHost := map[string][]interval{}
	connsByIP := map[string][]interval{}
	for id, iv := range conns {
		for h := range connHosts[id] {
			connsByHost[h] = append(connsByHost[h], iv)
		}
		connsByIP[connServer[id]] = append(connsByIP[connServer[id]], iv)
	}
	for h, reqs := range reqByHost {
		hr := HostReport{Host: h, Requests: len(reqs), MinGap: -1, MinConnGap: -1, MinIdleGap: 0, Forbidden: hostForbidden[h]}
		hr.MaxConns = maxSimultaneous(connsByHost[h])
		hr.MaxInFlight = maxSimultaneous(reqs)
		sort.Slice(reqs, func(i, j int) bool { return reqs[i].start < reqs[j].start })
		seenClients := map[string]bool{}
		var latestEnd int64
		for i, iv := range reqs {
			if !seenClients[iv.who] {
				seenClients[iv.who] = true
				hr.Clients = append(hr.Clients, iv.who)
			}
			if i > 0 {
				g := time.Duration(iv.start - reqs[i-1].start)
				if hr.MinGap < 0 || g < hr.MinGap {
					hr.MinGap = g
				}
				idle := time.Duration(iv.start - latestEnd)
				if i == 1 || idle < hr.MinIdleGap {
					hr.MinIdleGap = idle
				}
			}
			if i == 0 || iv.end > latestEnd {
				latestEnd = iv.end
			}
		}
		sort.Strings(hr.Clients)
		cs := connsByHost[h]
		sort.Slice(cs, func(i, j int) bool { return cs[i].start < cs[j].start })
		for i := 1; i < len(cs); i++ {
			g := time.Duration(cs[i].start - cs[i-1].start)
			if hr.MinConnGap < 0 || g < hr.MinConnGap {
				hr.MinConnGap = g
			}
		}
		if hr.MaxConns > rep.MaxConnsPerHost || hr.MaxConns == rep.MaxConnsPerHost && h < rep.MaxConnsHost {
			rep.MaxConnsPerHost, rep.MaxConnsHost = hr.MaxConns, h
		}
		rep.MaxInFlightPerHost = max(rep.MaxInFlightPerHost, hr.MaxInFlight)
		if hr.MinGap >= 0 && (rep.MinRequestGap < 0 || hr.MinGap < rep.MinRequestGap) {
			rep.MinRequestGap, rep.MinRequestGapHost = hr.MinGap, h
		}
		if hr.MinConnGap >= 0 && (rep.MinConnGap < 0 || hr.MinConnGap < rep.MinConnGap) {
			rep.MinConnGap, rep.MinConnGapHost = hr.MinConnGap, h
		}
		rep.Hosts = append(rep.Hosts, hr)
		overlaps, shared := clientOverlaps(h, reqs)
		for _, o := range overlaps {
			if len(rep.Overlaps) < opt.MaxList {
				rep.Overlaps = append(rep.Overlaps, o)
			}
		}
		if shared != nil {
			rep.SharedHosts = append(rep.SharedHosts, *shared)
		}
	}
	sort.Slice(rep.Hosts, func(i, j int) bool { return rep.Hosts[i].Host < rep.Hosts[j].Host })
	sort.Slice(rep.SharedHosts, func(i, j int) bool { return rep.SharedHosts[i].Host < rep.SharedHosts[j].Host })
	sort.Slice(rep.Overlaps, func(i, j int) bool { return rep.Overlaps[i].At < rep.Overlaps[j].At })
	for ip, cs := range connsByIP {
		r := IPReport{IP: ip, Requests: ipRequests[ip], MaxConns: maxSimultaneous(cs)}
		if r.MaxConns > rep.MaxConnsPerIP || r.MaxConns == rep.MaxConnsPerIP && ip < rep.MaxConnsIP {
			rep.MaxConnsPerIP, rep.MaxConnsIP = r.MaxConns, ip
		}
		rep.IPs = append(rep.IPs, r)
	}
	sort.Slice(rep.IPs, func(i, j int) bool { return rep.IPs[i].IP < rep.IPs[j].IP })
	for ip, c := range clients {
		c.Hosts = len(clientHosts[ip])
		rep.Clients = append(rep.Clients, *c)
	}
	sort.Slice(rep.Clients, func(i, j int) bool { return rep.Clients[i].IP < rep.Clients[j].IP })
	return rep
}

// maxSimultaneous is the largest number of intervals containing one moment;
// an interval ending at t does not overlap one starting at t.
func maxSimultaneous(ivs []interval) int {
	type ev struct {
		t     int64
		delta int
	}
	evs := make([]ev, 0, 2*len(ivs))
	for _, iv := range ivs {
		evs = append(evs, ev{iv.start, +1}, ev{iv.end, -1})
	}
	sort.Slice(evs, func(i, j int) bool {
		return evs[i].t < evs[j].t || evs[i].t == evs[j].t && evs[i].delta < evs[j].delta
	})
	cur, best := 0, 0
	for _, e := range evs {
		cur += e.delta
		best = max(best, cur)
	}
	return best
}

// clientOverlaps finds, for one host's requests sorted by start, moments
// when two client addresses were in flight together, and the clients' spans.
func clientOverlaps(host string, reqs []interval) ([]Overlap, *SharedHost) {
	spans := map[string]*ClientSpan{}
	var order []string
	for _, iv := range reqs {
		s := spans[iv.who]
		if s == nil {
			s = &ClientSpan{IP: iv.who, First: iv.start, Last: iv.end}
			spans[iv.who] = s
			order = append(order, iv.who)
		}
		s.Requests++
		s.Last = max(s.Last, iv.end)
	}
	if len(order) < 2 {
		return nil, nil
	}
	var out []Overlap
	seen := map[[2]string]bool{}
	// Only the clients still in flight at a request's start are compared
	// with it, not every client seen so far: a log of thousands of client
	// addresses on one host took time in requests × clients.
	var fl inFlight
	for _, iv := range reqs {
		fl.expire(iv.start)
		for _, c := range fl.clients {
			if c.who != iv.who {
				pair := [2]string{min(c.who, iv.who), max(c.who, iv.who)}
				if !seen[pair] {
					seen[pair] = true
					out = append(out, Overlap{Host: host, A: pair[0], B: pair[1], At: iv.start})
				}
			}
		}
		fl.add(iv.who, iv.end)
	}
	sh := &SharedHost{Host: host}
	sort.Strings(order)
	for _, who := range order {
		sh.Clients = append(sh.Clients, *spans[who])
	}
	for i := range sh.Clients {
		for j := i + 1; j < len(sh.Clients); j++ {
			a, b := sh.Clients[i], sh.Clients[j]
			if a.First < b.Last && b.First < a.Last {
				sh.Interleaved = true
			}
		}
	}
	return out, sh
}

// inFlight is the set of clients with a request in flight, each with the
// latest end of its requests so far, for requests taken in order of start.
type inFlight struct {
	clients []flightClient
	index   map[string]int // client -> position in clients
	ends    endHeap        // (end, client) of every add, earliest first
}

type flightClient struct {
	who string
	end int64
}

// expire drops the clients whose latest end is at or before t.
func (f *inFlight) expire(t int64) {
	for len(f.ends) > 0 && f.ends[0].end <= t {
		e := heap.Pop(&f.ends).(flightClient)
		i, ok := f.index[e.who]
		if !ok || f.clients[i].end != e.end {
			continue // a later add moved this client's end on
		}
		last := len(f.clients) - 1
		f.clients[i] = f.clients[last]
		f.index[f.clients[i].who] = i
		f.clients = f.clients[:last]
		delete(f.index, e.who)
	}
}

// add records a request of who ending at end.
func (f *inFlight) add(who string, end int64) {
	if f.index == nil {
		f.index = map[string]int{}
	}
	i, ok := f.index[who]
	switch {
	case !ok:
		f.index[who] = len(f.clients)
		f.clients = append(f.clients, flightClient{who, end})
	case end > f.clients[i].end:
		f.clients[i].end = end
	default:
		return
	}
	heap.Push(&f.ends, flightClient{who, end})
}

type endHeap []flightClient

func (h endHeap) Len() int           { return len(h) }
func (h endHeap) Less(i, j int) bool { return h[i].end < h[j].end }
func (h endHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)        { *h = append(*h, x.(flightClient)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// WriteText writes a human-readable summary of the report.
func (rep *Report) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "requests            %d (%d connections)\n", rep.Requests, rep.Connections)
	fmt.Fprintf(bw, "distinct URLs       %d\n", rep.DistinctURLs)
	fmt.Fprintf(bw, "duplicate fetches   %d\n", rep.DuplicateFetches)
	fmt.Fprintf(bw, "robots-forbidden    %d\n", rep.Forbidden)
	fmt.Fprintf(bw, "misdirected (421)   %d\n", rep.Misdirected)
	fmt.Fprintf(bw, "max conns per host  %d (%s)\n", rep.MaxConnsPerHost, rep.MaxConnsHost)
	fmt.Fprintf(bw, "max in flight/host  %d\n", rep.MaxInFlightPerHost)
	fmt.Fprintf(bw, "max conns per IP    %d (%s)\n", rep.MaxConnsPerIP, rep.MaxConnsIP)
	fmt.Fprintf(bw, "min request gap     %s (%s)\n", fmtGap(rep.MinRequestGap), rep.MinRequestGapHost)
	fmt.Fprintf(bw, "min conn gap        %s (%s)\n", fmtGap(rep.MinConnGap), rep.MinConnGapHost)
	fmt.Fprintf(bw, "hosts               %d\n", len(rep.Hosts))
	fmt.Fprintf(bw, "clients:\n")
	for _, c := range rep.Clients {
		fmt.Fprintf(bw, "  %-15s %d requests, %d connections, %d hosts\n", c.IP, c.Requests, c.Connections, c.Hosts)
	}
	interleaved := 0
	for _, s := range rep.SharedHosts {
		if s.Interleaved {
			interleaved++
		}
	}
	fmt.Fprintf(bw, "hosts shared by clients %d (%d interleaved), in-flight overlaps %d\n", len(rep.SharedHosts), interleaved, len(rep.Overlaps))
	for _, o := range rep.Overlaps {
		fmt.Fprintf(bw, "  overlap on %s: %s and %s at %s\n", o.Host, o.A, o.B, time.Unix(0, o.At).UTC().Format(time.RFC3339Nano))
	}
	for _, d := range rep.Duplicates {
		fmt.Fprintf(bw, "  duplicate x%d %s\n", d.Count, d.URL)
	}
	for _, u := range rep.ForbiddenURLs {
		fmt.Fprintf(bw, "  forbidden %s\n", u)
	}
	return bw.Flush()
}

func fmtGap(d time.Duration) string {
	if d < 0 {
		return "-"
	}
	return d.String()
}
