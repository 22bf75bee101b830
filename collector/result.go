package collector

import (
	"net/http"
	"net/netip"
	"time"
)

// Request is one URL of a list.
type Request struct {
	ID   uint64 // the caller's id, copied to the result
	URL  string // absolute http or https URL; every URL of a list has one origin
	Head bool   // HEAD instead of GET
}

// List is one host's URLs, fetched in order over one connection at a time.
type List struct {
	Requests []Request
	// Robots asks for /robots.txt of the list's origin first, on the same
	// connection; its result is Batch.Robots. No request of the list is
	// sent before the robots.txt response is read (or has failed).
	Robots bool
	// AfterRobots, when set with Robots, is called once with the
	// robots.txt result as soon as it is final, whatever it is (an answer,
	// a failure, or NotTried when the list ended first), in the fetcher's
	// goroutine, before Each sees it and before any request of the list is
	// sent. skip[i] true: Requests[i] is never sent and comes back
	// Skipped; a short or nil skip skips nothing beyond its length. So a
	// host's first list costs one connection: robots.txt, then the URLs
	// it allows. The result's buffers are valid only during the call. It
	// is not called when no URL of the list parses (nothing is fetched).
	AfterRobots func(robots *Result) (skip []bool)
	// RobotsMaxBody, when > 0 and below Config.MaxBody, caps robots.txt's
	// body (on the wire and decoded): past it the result is TooLarge and
	// Truncated, the connection is closed, and the list goes on over a new
	// one after the reconnect gap.
	RobotsMaxBody int64
	// Each, when set, is called with every result as soon as it is final
	// (in the fetcher's goroutine, in completion order), so that the caller
	// can store a page and release its buffers (Collector.ReleaseResult)
	// while the rest of a long list is fetched. The robots.txt result goes
	// through Each too. Time spent in Each is not counted against the next
	// response's timeouts or in its Timings (its turn starts after Each).
	Each func(*Result)
	// Linger closes the list's last connection as one given up on is
	// closed: write side first, then up to Config.Linger for the server's
	// close. The server has then seen it closed before the caller's next
	// list to the origin connects, so that it never sees two at once.
	Linger bool
	// Stop, when closed, ends the list gently: no further request is sent,
	// and the responses to those already sent are read (within the usual
	// timeouts); the rest come back NotTried (also those sent once on a
	// connection that died and not yet sent again), whatever failed
	// earlier in the list. Cancelling Fetch's context
	// instead cuts the response being read. A node stops this way so that
	// a stop costs no page fetched twice.
	Stop <-chan struct{}
}

// Batch is what a list gave.
type Batch struct {
	Results     []Result // one per request, in list order
	Robots      *Result  // when List.Robots was set
	Connections int      // connections opened
	Pipelined   bool     // some requests went pipelined
	NoPipeline  bool     // the host is (now) on the no-pipelining list
	Reads       int      // read calls on the connections (system calls, for plain HTTP)
	Writes      int      // write calls
}

// Kind classifies what went wrong with a URL; OK is the empty kind. The
// URLs a list never sent come back NotTried when its context ended or
// List.Stop stopped it; a failure that ended the list (dns, connect, tls,
// a response that timed out, two connections in a row that answered
// nothing) gives them its own Kind and Err instead, with Attempts 0
// saying they were not sent.
type Kind uint8

const (
	OK          Kind = iota
	DNS              // the host did not resolve
	Connect          // no TCP connection (refused, unreachable, connect timeout)
	TLS              // handshake or certificate failure
	Timeout          // first byte, idle read or whole response took too long
	Reset            // the connection ended before the response did
	TooLarge         // header block or body over its cap (body kept truncated)
	BadResponse      // bytes that are not an HTTP/1.x response
	BadEncoding      // Content-Encoding unknown or corrupt (WireBody kept)
	BadURL           // not an http(s) URL of the list's origin
	Canceled         // the list was cancelled while this response was read
	NotTried         // the list was cut short (cancelled, its deadline, List.Stop) before this URL was sent (or sent again)
	Skipped          // List.AfterRobots asked for it not to be sent
)

var kindNames = [...]string{"", "dns", "connect", "tls", "timeout", "reset", "too-large", "bad-response", "bad-encoding", "bad-url", "canceled", "not-tried", "skipped"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Timings of one URL. DNS, Connect and TLS are those of the connection and
// are set only on the first request sent on it.
type Timings struct {
	DNS, Connect, TLS time.Duration
	FirstByte         time.Duration // from the request's turn to the first byte of its response
	Total             time.Duration // from the request's turn (or the dial) to the end of its response
}

// Result is what one URL gave. Head, WireBody and Body live in pooled
// buffers: hand the batch back with Collector.Release when done (which
// clears them and Header).
type Result struct {
	ID  uint64
	URL string

	Kind Kind
	Err  error // the detail behind Kind; nil when Kind is OK

	Status     int // 0 when no response arrived
	ProtoMinor int // 0 for HTTP/1.0, 1 for HTTP/1.1
	Header     http.Header

	// Headers the node needs ("" when absent).
	ContentType, ContentEncoding, Location, RetryAfter string
	LastModified, ETag, XRobotsTag                     string
	ContentLength                                      int64 // -1 when not given

	Head      []byte // status line and header block as received, through the blank line
	WireBody  []byte // body as received, transfer coding removed, content coding kept
	Body      []byte // decoded body (WireBody itself when not content-coded)
	Truncated bool   // cut at MaxBody (on the wire or decoded)
	Short     bool   // the body ended early; Kind says why

	Interim   int  // 1xx responses skipped
	Attempts  int  // times the request was sent
	Pipelined bool // sent while another request was outstanding
	Conn      int  // which of the list's connections served it (1-based; 0: none)

	Addr      netip.AddrPort // the server
	Timings   Timings
	WireBytes int64 // HTTP bytes of the request and its response

	bufs [3]*[]byte // pooled buffers behind Head, WireBody, Body
}

// release returns r's buffers and clears its slices, and its Header: a
// head of MaxHeader bytes of short lines parses into a map 14 times as
// large, which a batch kept for each of its results until it went.
func (r *Result) release(p *bufPool) {
	for i, b := range r.bufs {
		p.put(b)
		r.bufs[i] = nil
	}
	r.Head, r.WireBody, r.Body, r.Header = nil, nil, nil, nil
}
