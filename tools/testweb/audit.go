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
	MaxList int    // how many duplicate / forbidden URLs and overlaps to list (default 20)
	TempDir string // where Audit sorts a large log (default os.TempDir())
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
	err := scanLog(r, func(e *Entry) error {
		out = append(out, *e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scanLog parses a request log line by line, passing each entry to fn; the
// entry is reused for the next line.
func scanLog(r io.Reader, fn func(*Entry) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLogLine)
	n := 0
	var e Entry
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		e = Entry{}
		if err := json.Unmarshal(line, &e); err != nil {
			return fmt.Errorf("testweb: request log line %d: %w", n, err)
		}
		if e.Kind != "req" && e.Kind != "conn" {
			return fmt.Errorf("testweb: request log line %d: unknown kind %q", n, e.Kind)
		}
		if e.End < e.Start {
			return fmt.Errorf("testweb: request log line %d: ends before it starts", n)
		}
		if err := fn(&e); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("testweb: request log line %d: longer than %d bytes", n+1, maxLogLine)
		}
		return fmt.Errorf("testweb: reading the request log: %w", err)
	}
	return nil
}

// maxLogLine bounds one line of a request log; the server's lines are far
// shorter (a request's target is at most its 64 KiB head).
const maxLogLine = 1 << 20

// Audit reads a request log and reports on it, one line at a time: what it
// holds in memory is bounded by the web (hosts, addresses), the connections
// open at once and the requests in flight at once to a host, not by the
// log's length. Past a few tens of megabytes it sorts through temporary
// files in AuditOptions.TempDir, removed before it returns.
func Audit(r io.Reader, opt AuditOptions) (*Report, error) {
	a := newAuditor(opt, auditChunk)
	defer a.close()
	if err := scanLog(r, a.add); err != nil {
		return nil, err
	}
	return a.finish()
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

// AuditEntries reports on parsed log entries, in the order of the log: a
// connection's record after its requests (a connection id seen again
// after its record is another connection, as when logs of several servers
// are joined). It sorts in memory, the entries being there already.
func AuditEntries(entries []Entry, opt AuditOptions) *Report {
	a := newAuditor(opt, 0)
	defer a.close()
	for i := range entries {
		// Without a bound on memory the sorters never write, so never fail.
		a.add(&entries[i])
	}
	rep, _ := a.finish()
	return rep
}

// overlapFinder finds, for one host's requests taken in order of start,
// moments when two client addresses were in flight together, and the
// clients' spans.
type overlapFinder struct {
	host  string
	spans map[string]*ClientSpan
	order []string
	seen  map[[2]string]bool
	fl    inFlight
	out   []Overlap
}

func newOverlapFinder(host string) *overlapFinder {
	return &overlapFinder{host: host, spans: map[string]*ClientSpan{}, seen: map[[2]string]bool{}}
}

func (o *overlapFinder) add(iv interval) {
	s := o.spans[iv.who]
	if s == nil {
		s = &ClientSpan{IP: iv.who, First: iv.start, Last: iv.end}
		o.spans[iv.who] = s
		o.order = append(o.order, iv.who)
	}
	s.Requests++
	s.Last = max(s.Last, iv.end)
	// Only the clients still in flight at a request's start are compared
	// with it, not every client seen so far: a log of thousands of client
	// addresses on one host took time in requests × clients.
	o.fl.expire(iv.start)
	for _, c := range o.fl.clients {
		if c.who != iv.who {
			pair := [2]string{min(c.who, iv.who), max(c.who, iv.who)}
			if !o.seen[pair] {
				o.seen[pair] = true
				o.out = append(o.out, Overlap{Host: o.host, A: pair[0], B: pair[1], At: iv.start})
			}
		}
	}
	o.fl.add(iv.who, iv.end)
}

func (o *overlapFinder) result() ([]Overlap, *SharedHost) {
	if len(o.order) < 2 {
		return nil, nil
	}
	sh := &SharedHost{Host: o.host}
	order := append([]string(nil), o.order...)
	sort.Strings(order)
	for _, who := range order {
		sh.Clients = append(sh.Clients, *o.spans[who])
	}
	for i := range sh.Clients {
		for j := i + 1; j < len(sh.Clients); j++ {
			a, b := sh.Clients[i], sh.Clients[j]
			if a.First < b.Last && b.First < a.Last {
				sh.Interleaved = true
			}
		}
	}
	return o.out, sh
}

// clientOverlaps runs an overlapFinder over reqs, sorted by start.
func clientOverlaps(host string, reqs []interval) ([]Overlap, *SharedHost) {
	o := newOverlapFinder(host)
	for _, iv := range reqs {
		o.add(iv)
	}
	return o.result()
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
