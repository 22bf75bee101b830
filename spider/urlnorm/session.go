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
// ";" or "/".
func stripPathSessionIDs(path []byte) int {
	const param = ";jsessionid="
	w := 0
	for r := 0; r < len(path); {
		if path[r] == ';' && len(path)-r >= len(param) && bytes.EqualFold(path[r:r+len(param)], []byte(param)) {
			r += len(param)
			for r < len(path) && path[r] != ';' && path[r] != '/' {
				r++
			}
			continue
		}
		path[w] = path[r]
		w++
		r++
	}
	return w
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
