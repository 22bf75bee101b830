package scope

import "strings"

// isCGI reports whether a path looks like a CGI script: it ends in .cgi
// (any case) or lies under a /cgi-bin/ directory.
func isCGI(path string) bool {
	if hasSuffixFold(path, ".cgi") {
		return true
	}
	const dir = "/cgi-bin/"
	for i := 0; i+len(dir) <= len(path); i++ {
		j := strings.IndexByte(path[i:], '/')
		if j < 0 || i+j+len(dir) > len(path) {
			return false
		}
		i += j
		if strings.EqualFold(path[i:i+len(dir)], dir) {
			return true
		}
	}
	return false
}

func hasSuffixFold(s, suffix string) bool {
	return len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix)
}

// maxRepeatScan bounds the segments the repeat check looks at, so a path of
// a million segments with every limit off costs linear time, not quadratic.
const maxRepeatScan = 256

// pathTraps checks path depth and repeated segments. A segment is what lies
// between slashes; empty segments ("//") count for depth but not as repeats.
// The repeat check compares each segment with the ones before it: paths are
// short (MaxPathDepth bounds them first), so the quadratic loop is cheaper
// than any set.
func pathTraps(path string, maxDepth, maxRepeat int) Reason {
	depth := strings.Count(path, "/")
	if strings.HasSuffix(path, "/") && depth > 0 {
		depth-- // "/a/b/" is as deep as "/a/b"
	}
	if maxDepth > 0 && depth > maxDepth {
		return TooDeepPath
	}
	if maxRepeat < 2 {
		return OK
	}
	rest := path
	for seen := 0; len(rest) > 0 && seen < maxRepeatScan; seen++ {
		rest = rest[1:] // the '/'
		seg := rest
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			seg = rest[:i]
		}
		rest = rest[len(seg):]
		if seg == "" {
			continue
		}
		// Count seg in what follows; each segment is counted from its first
		// occurrence, so the loop visits every pair at most once.
		n := 1
		for after, k := rest, 0; len(after) > 0 && k < maxRepeatScan; k++ {
			after = after[1:]
			s := after
			if i := strings.IndexByte(after, '/'); i >= 0 {
				s = after[:i]
			}
			after = after[len(s):]
			if s == seg {
				if n++; n >= maxRepeat {
					return RepeatedSegment
				}
			}
		}
	}
	return OK
}
