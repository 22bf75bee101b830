package urlnorm

import (
	"bytes"
	"slices"
)

// isSessionParam reports whether a query parameter name is a session id
// of a common server framework: Java (jsessionid), PHP (PHPSESSID), ASP
// (ASPSESSIONIDxxxxxxxx), ColdFusion (CFID, CFTOKEN) and the generic sid,
// sessionid, session_id.
func isSessionParam(name []byte) bool {
	for _, s := range [...]string{"jsessionid", "phpsessid", "sid", "sessionid", "session_id", "cfid", "cftoken"} {
		if bytes.EqualFold(name, []byte(s)) {
			return true
		}
	}
	return len(name) > len("aspsessionid") && bytes.EqualFold(name[:len("aspsessionid")], []byte("aspsessionid"))
}

// stripPathSessionIDs removes ";jsessionid=..." parameters from the path
// in place and returns its new length. The parameter runs to the next
// ";" or "/". A segment the removal would leave "." or ".." keeps its
// parameters: a dot segment, it would be removed on the next parse, and the
// canonical form would not be its own.
func stripPathSessionIDs(path []byte) int {
	w := 0
	for r := 0; r < len(path); {
		end := len(path)
		if i := bytes.IndexByte(path[r+1:], '/'); i >= 0 {
			end = r + 1 + i
		}
		seg := path[r:end]
		if dotsLeft(seg) {
			w += copy(path[w:], seg)
		} else {
			w += stripSegment(path[w:], seg)
		}
		r = end
	}
	return w
}

const sessionParam = ";jsessionid="

// isSessionAt reports whether a session-id parameter starts at seg[i].
func isSessionAt(seg []byte, i int) bool {
	return seg[i] == ';' && len(seg)-i >= len(sessionParam) && bytes.EqualFold(seg[i:i+len(sessionParam)], []byte(sessionParam))
}

// stripSegment writes seg, one segment with its leading '/', without its
// session-id parameters to dst, which may be seg itself or start before
// it, and returns the length written.
func stripSegment(dst, seg []byte) int {
	w := 0
	for r := 0; r < len(seg); {
		if r > 0 && isSessionAt(seg, r) {
			r += len(sessionParam)
			for r < len(seg) && seg[r] != ';' {
				r++
			}
			continue
		}
		dst[w] = seg[r]
		w++
		r++
	}
	return w
}

// dotsLeft reports whether seg has session-id parameters and without them
// is "/." or "/..".
func dotsLeft(seg []byte) bool {
	kept, stripped := 0, false
	for r := 1; r < len(seg); {
		if isSessionAt(seg, r) {
			stripped = true
			r += len(sessionParam)
			for r < len(seg) && seg[r] != ';' {
				r++
			}
			continue
		}
		if seg[r] != '.' || kept == 2 {
			return false
		}
		kept++
		r++
	}
	return stripped && kept > 0
}

// stripQuerySessionIDs removes session-id parameters from the query (no
// "?") in place and returns its new length.
func stripQuerySessionIDs(q []byte) int {
	w := 0
	for r := 0; r <= len(q); {
		end := r + bytes.IndexByte(q[r:], '&')
		if end < r {
			end = len(q)
		}
		param := q[r:end]
		name := param
		if i := bytes.IndexByte(param, '='); i >= 0 {
			name = param[:i]
		}
		if !isSessionParam(name) && len(param) > 0 {
			if w > 0 {
				q[w] = '&'
				w++
			}
			w += copy(q[w:], param)
		}
		r = end + 1
	}
	return w
}

// sortQuery sorts the parameters of buf[start:end] by name, stably,
// dropping empty ones. It returns buf, which it may have grown to use as
// scratch space, and the new end of the query.
func sortQuery(buf []byte, start, end int) ([]byte, int) {
	type param struct{ start, end, nameEnd int }
	var stack [32]param
	params := stack[:0]
	for r := start; r <= end; {
		e := r + bytes.IndexByte(buf[r:end], '&')
		if e < r {
			e = end
		}
		if e > r {
			n := r + bytes.IndexByte(buf[r:e], '=')
			if n < r {
				n = e
			}
			params = append(params, param{r, e, n})
		}
		r = e + 1
	}
	byName := func(a, b param) int {
		return bytes.Compare(buf[a.start:a.nameEnd], buf[b.start:b.nameEnd])
	}
	length := len(params) - 1 // the "&"s
	for _, p := range params {
		length += p.end - p.start
	}
	if length == end-start && slices.IsSortedFunc(params, byName) {
		return buf, end // sorted, and no empty parameter to drop
	}
	slices.SortStableFunc(params, byName)
	scratch := len(buf)
	for i, p := range params {
		if i > 0 {
			buf = append(buf, '&')
		}
		buf = append(buf, buf[p.start:p.end]...)
	}
	n := copy(buf[start:end], buf[scratch:])
	return buf[:scratch], start + n
}
