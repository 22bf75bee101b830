// Package collector is kspider's Data Collector (thesis §2.2): a pool of
// fetchers, each taking one host's list of URLs and fetching it over one
// persistent, optionally pipelined HTTP/1.1 connection. It knows nothing of
// scheduling or storage: it takes a list and gives back one Result per URL.
//
//	c, err := collector.New(collector.Config{UserAgent: "kspider/1.0 (+https://example.org/bot)", Lookup: res.Lookup})
//	b := c.Fetch(ctx, &collector.List{Requests: reqs, Robots: true})
//	for i := range b.Results { ... }
//	c.Release(b)
//
// # HTTP
//
// The client is our own, on a net.Conn, because net/http's Transport cannot
// pipeline and hides the connection. Requests are written with
// (*http.Request).Write, the request-target being the URL's path and query
// as written (net/url rebuilds a path holding '|' or '^' from its decoded
// form: %2F would go out as '/'; a '%' that starts no escape, "/home%",
// which net/url refuses, goes out as written too, as browsers send it), and
// responses read with
// http.ReadResponse on one
// bufio.Reader per connection; there is no hand-written HTTP parser. Before
// ReadResponse sees a response, the fetcher finds the end of its header
// block in the bufio.Reader's buffer (whose size is Config.MaxHeader): a
// longer header block is refused unread, and the block is copied as received
// into Result.Head (status line, header lines in their order, case and
// duplicates, and the blank line).
//
// # One connection per list
//
// A list's URLs share one origin (scheme, host, port). The fetcher resolves
// the host with the configured lookup (kspider's caching resolver), dials
// (TLS with SNI, ALPN "http/1.1" only, certificate checks), and sends the
// list's requests with keep-alive, one connection at a time. When a server
// closes (Connection: close, a keepalive_requests limit, an error), the rest
// of the list goes on a new connection opened only after the old one is
// closed and Config.ReconnectGap has passed. A connection the fetcher gives
// up on (a cut body, a timeout, a framing error) is half-closed and drained
// for up to Config.Linger, so the server has closed its end before the next
// connection opens: a server never sees two connections of one list at once.
//
// # Pipelining
//
// With Config.Pipeline > 1, requests (all GET or HEAD) are pipelined to that
// depth, but only once the connection's first response showed HTTP/1.1, a
// known length (Content-Length or chunked) and keep-alive, and only for hosts
// not on the no-pipelining list. Any anomaly while requests are pipelined —
// EOF or reset with requests unanswered, a timeout, a response that does not
// parse, bytes nobody asked for, a server closing as soon as it saw a second
// request — puts the host on that list (bounded, oldest forgotten first) and
// the unanswered requests are sent again, one at a time, on a new
// connection. Responses are matched to requests by order, as HTTP/1.1
// requires; the fetcher checks that nothing follows a response it was not
// waiting for, so a server that answers twice cannot shift bodies onto the
// wrong URLs wherever framing lets it tell.
//
// A request that got no response at all (the connection died first) is sent
// again, up to Config.MaxAttempts times in all; two connections in a row
// that answer nothing (closed, bytes that are not a response) end the list,
// and so does a response that times out (silent past the first byte,
// stalled, trickled), whichever of its connection's it was: the rest get
// the error, unsent (those pipelined behind it, sent and unanswered, say
// so), so that a host stalling a response costs its list one timeout, not
// one per connection.
// A request whose response started is never sent again: its result holds
// what arrived.
//
// # Limits
//
// Connect, TLS handshake, first byte (from a request's turn), whole response
// and idle read (between reads of one response) each have a timeout (a
// timeout's Result.Err names the one that passed: a response trickled a
// byte at a time within the idle read ends at the whole response's); the
// header block is capped (Config.MaxHeader, default 64 KiB); the body is
// capped (Config.MaxBody, default 10 MiB): past it the page is kept
// truncated (Result.Truncated) and the connection is closed. gzip, x-gzip,
// deflate (zlib or raw) and zstd (windows up to 8 MiB) bodies are decoded
// with the same cap on the output, so a compression bomb costs bounded
// memory and time. Bytes read for one
// response are capped at 4×MaxBody + MaxHeader whatever the framing (a
// trailer or chunk headers without end). Redirects are results (Status and
// Location), never followed.
//
// # Records
//
// Result.Head is the status line and header block exactly as received;
// Result.WireBody the body with the transfer coding (chunked) removed but
// the content coding kept, as the server sent it; Result.Body the decoded
// body (the same slice when there is no content coding). WireBytes counts
// the HTTP bytes of the exchange (request and response, with chunk framing
// and 1xx responses; TLS record overhead is not counted).
//
// Head, WireBody and Body live in buffers of a pool in power-of-two size
// classes (512 bytes to 1 MiB, at most Config.PoolBytes kept, and no more
// than the most that were out at once) that garbage collections do not
// empty. Collector.Release hands a batch's buffers
// back; List.Each sees every result as soon as it is final, so that a
// caller can store a page and release it (Collector.ReleaseResult) while
// the rest of a long list is fetched, instead of holding all its bodies.
//
// # Errors
//
// Every failure becomes a small Kind on the result: dns, connect, tls,
// timeout, reset, too-large, bad-response, bad-encoding, bad-url, canceled,
// not-tried. Nothing a server sends causes a panic, a hang or unbounded
// memory. A dns, connect or tls failure ends the list: every URL not yet
// answered gets it.
//
// # Cancellation
//
// Fetch's context is the list's: cancelling it closes the connection under
// any read or write, the response being read ends Canceled (with what
// arrived) and every URL not answered comes back NotTried, Attempts telling
// whether it was sent. No request byte is written at or past the
// context's deadline (a cluster slot's guard), whether or not its timer
// has cancelled the context yet: the time is looked at just before each
// write to the connection, and a round refused there counts as not sent.
package collector
