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

// pairwiseMax is the most segments the repeat check compares pairwise
// (at most 2016 comparisons, no allocation); a longer path, possible only
// with MaxPathDepth raised or off, has its segments counted in a map, so a
// path of a million segments costs linear time and a loop is found
// wherever in it it lies.
const pairwiseMax = 64

// pathTraps checks path depth and repeated segments. A segment is what lies
// between slashes; empty segments ("//") count for depth but not as repeats.
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
	if depth > pairwiseMax {
		return countRepeats(path, maxRepeat)
	}
	rest := path
	for len(rest) > 0 {
		seg := nextSegment(&rest)
		if seg == "" {
			continue
		}
		// Count seg in what follows; each segment is counted from its first
		// occurrence, so the loop visits every pair at most once.
		n := 1
		for after := rest; len(after) > 0; {
			if nextSegment(&after) == seg {
				if n++; n >= maxRepeat {
					return RepeatedSegment
				}
			}
		}
	}
	return OK
}

// countRepeats is pathTraps's repeat check for a long path.
func countRepeats(path string, maxRepeat int) Reason {
	seen := make(map[string]int)
	for rest := path; len(rest) > 0; {
		seg := nextSegment(&rest)
		if seg == "" {
			continue
		}
		n := seen[seg] + 1
		if n >= maxRepeat {
			return RepeatedSegment
		}
		seen[seg] = n
	}
	return OK
}

// nextSegment takes the segment at the start of *rest, which begins with
// '/', off it.
func nextSegment(rest *string) string {
	s := (*rest)[1:]
	seg := s
	if i := strings.IndexByte(s, '/'); i >= 0 {
		seg = s[:i]
	}
	*rest = s[len(seg):]
	return seg
}
