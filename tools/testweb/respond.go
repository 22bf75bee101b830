package testweb

import (
	"net/netip"
	"strconv"
	"time"
)

const htmlType = "text/html; charset=utf-8"

// respond answers x.req; it reports whether the connection may serve more.
func (x *exchange) respond() bool {
	s, req := x.s, &x.req
	if req.chunked || req.contentLength > 1<<20 {
		return x.simple(413, "text/plain", []byte("request bodies are not accepted\n"), true)
	}
	if req.contentLength > 0 {
		if _, err := x.br.Discard(int(req.contentLength)); err != nil {
			return false
		}
	}
	if req.method != "GET" && req.method != "HEAD" {
		return x.simple(405, "text/plain", []byte("only GET and HEAD\n"), false, "Allow", "GET, HEAD")
	}
	name := x.entry.Host
	h, ok := s.web.Host(name)
	if !ok {
		x.entry.Note = "unknown-host"
		return x.simple(404, htmlType, []byte("<html><body><h1>No such site</h1></body></html>\n"), false)
	}
	if !s.cfg.AnyAddr && x.local != s.front && x.local != h.Addr && !(x.local == netip.IPv6Loopback() && h.IPv6) {
		x.entry.Note = "misdirected: " + name + " lives at " + h.Addr.String()
		return x.simple(421, "text/plain", []byte("this host is not served at this address\n"), false)
	}
	x.entry.Disallowed = !h.robotsAllowed(h.agentFor(req.ua), req.target)
	if h.Behaviour == BehaviourSlow && !s.wait(s.cfg.SlowDelay) {
		return false
	}
	close := false
	if h.Behaviour == BehaviourCloseAfter && x.nreq >= CloseAfterRequests {
		close = true
		x.entry.Note = "close-after"
	}
	if h.Behaviour == BehaviourPipelineBreak && x.br.Buffered() > 0 {
		// Answer this one, drop what was pipelined behind it.
		close = true
		x.entry.Note = "pipelined requests dropped"
	}
	rt := routeOf(h, req.target)
	switch rt.kind {
	case routeRobots:
		return x.robots(h, close)
	case routeRobotsMoved:
		return x.simple(200, "text/plain", []byte(robotsRules(h)), close)
	case routePage, routeCalendar, routeSymlink, routeSpam:
		return x.page(h, name, rt, close)
	case routeResource:
		x.body = s.web.appendResource(x.body[:0], h, rt.n)
		return x.simple(200, resourceKinds[rt.n%len(resourceKinds)].mime, x.body, close)
	case routeRedirect:
		loc := origin(h, name, s.ports) + escapeTarget(rt.location)
		body := "<html><body>Moved to <a href=\"" + loc + "\">here</a></body></html>\n"
		return x.simple(rt.status, htmlType, []byte(body), close, "Location", loc)
	case routeStatus:
		body := []byte("<html><body><h1>" + strconv.Itoa(rt.status) + " " + statusText(rt.status) + "</h1></body></html>\n")
		if rt.retryAfter != "" {
			return x.simple(rt.status, htmlType, body, close, "Retry-After", rt.retryAfter)
		}
		return x.simple(rt.status, htmlType, body, close)
	case routeStall:
		return x.stall(h, rt)
	case routeEndless:
		return x.endless()
	case routeBomb:
		return x.gzipBomb(close)
	}
	return x.simple(404, htmlType, []byte("<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>\n"), close)
}

func (x *exchange) robots(h *Host, close bool) bool {
	switch h.Robots {
	case RobotsNone:
		return x.simple(404, htmlType, []byte("<html><body><h1>Not Found</h1></body></html>\n"), close)
	case RobotsServerErr:
		return x.simple(503, htmlType, []byte("<html><body>maintenance</body></html>\n"), close)
	case RobotsForbidden:
		code := 403
		if h.Index%2 == 1 {
			code = 401
		}
		return x.simple(code, htmlType, []byte("<html><body>no</body></html>\n"), close)
	case RobotsRedirect:
		loc := origin(h, h.Name, x.s.ports) + "/robots-moved.txt"
		return x.simple(301, htmlType, nil, close, "Location", loc)
	case RobotsHTML:
		return x.simple(200, htmlType, []byte(robotsHTML), close)
	case RobotsSlow:
		if !x.s.wait(x.s.cfg.SlowDelay) {
			return false
		}
	}
	return x.simple(200, "text/plain", robotsBody(h), close)
}

// pageType is the Content-Type of a host's HTML pages.
func pageType(h *Host) string {
	if h.Behaviour != BehaviourNonUTF8 {
		return htmlType
	}
	switch h.Index % 3 {
	case 0:
		return "text/html; charset=windows-874"
	case 1:
		return "text/html; charset=TIS-620"
	}
	return "text/html" // the page's <meta>, or nothing, has to tell
}

func (x *exchange) page(h *Host, name string, rt route, close bool) bool {
	s := x.s
	p := s.web.pageOf(h, name, rt)
	x.body = s.web.render(x.body[:0], p, s.ports, &x.scratch)
	ctype := pageType(h)
	switch h.Behaviour {
	case BehaviourChunked:
		x.head(200, ctype, -1, close)
		if x.req.method != "HEAD" {
			x.entry.Bytes = writeChunked(x, x.body, p.key)
		}
		return !close
	case BehaviourWrongLength:
		if rt.n%2 == 0 {
			// Announces more than it sends, then hangs up.
			x.head(200, ctype, int64(len(x.body)+1000), true)
			if x.req.method != "HEAD" {
				x.bw.Write(x.body)
				x.entry.Bytes = int64(len(x.body))
			}
			x.entry.Note = "content-length too long"
			return false
		}
		// Announces less than it sends: the rest corrupts the next response.
		short := len(x.body) - 100
		x.head(200, ctype, int64(short), close)
		if x.req.method != "HEAD" {
			x.bw.Write(x.body)
			x.entry.Bytes = int64(len(x.body))
		}
		x.entry.Note = "content-length too short"
		return !close
	}
	return x.simple(200, ctype, x.body, close)
}

// writeChunked writes body as chunks of varying sizes and the last chunk.
func writeChunked(x *exchange, body []byte, k uint64) int64 {
	r := newRng(key(k, 60))
	for len(body) > 0 {
		n := 1 + r.intn(8192)
		if n > len(body) {
			n = len(body)
		}
		x.bw.WriteString(strconv.FormatInt(int64(n), 16))
		x.bw.WriteString("\r\n")
		x.bw.Write(body[:n])
		x.bw.WriteString("\r\n")
		body = body[n:]
	}
	x.bw.WriteString("0\r\n\r\n")
	return int64(len(x.body))
}

// stall sends the head (and, for odd k, a quarter of the body), then
// nothing until StallFor passes (or the server closes), then hangs up.
func (x *exchange) stall(h *Host, rt route) bool {
	p := x.s.web.pageOf(h, h.Name, route{kind: routePage, n: rt.n})
	x.body = x.s.web.render(x.body[:0], p, x.s.ports, &x.scratch)
	x.head(200, htmlType, int64(len(x.body)), false)
	if x.req.method != "HEAD" {
		part := x.body[:0]
		if rt.n%2 == 1 {
			part = x.body[:len(x.body)/4]
		}
		x.bw.Write(part)
		x.entry.Bytes = int64(len(part))
		x.bw.Flush()
		x.entry.Note = "stalled"
		x.s.wait(x.s.cfg.StallFor)
		return false
	}
	return true
}

// endless sends a chunked body until EndlessBytes or EndlessFor, then hangs
// up without the last chunk.
func (x *exchange) endless() bool {
	x.head(200, htmlType, -1, false)
	if x.req.method == "HEAD" {
		x.bw.WriteString("0\r\n\r\n")
		return true
	}
	x.bw.WriteString("4000\r\n<html><body>\n")
	chunk := x.s.web.filler.utf8[:0x4000]
	x.bw.Write(chunk[:0x4000-len("<html><body>\n")])
	x.bw.WriteString("\r\n")
	sent := int64(0x4000)
	deadline := time.Now().Add(x.s.cfg.EndlessFor)
	x.c.SetWriteDeadline(deadline)
	defer x.c.SetWriteDeadline(time.Time{})
	for sent < x.s.cfg.EndlessBytes && time.Now().Before(deadline) {
		x.bw.WriteString("4000\r\n")
		x.bw.Write(chunk)
		if _, err := x.bw.WriteString("\r\n"); err != nil {
			break
		}
		sent += 0x4000
		select {
		case <-x.s.closed:
			sent = x.s.cfg.EndlessBytes
		default:
		}
	}
	x.bw.Flush()
	x.entry.Bytes = sent
	x.entry.Note = "endless body cut"
	return false
}

func (x *exchange) gzipBomb(close bool) bool {
	b := x.s.gzipBomb()
	x.entry.Note = "gzip bomb"
	x.head(200, htmlType, int64(len(b)), close, "Content-Encoding", "gzip")
	if x.req.method != "HEAD" {
		x.bw.Write(b)
		x.entry.Bytes = int64(len(b))
	}
	return !close
}
