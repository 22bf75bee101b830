package robots

// A crawler holds canonical absolute URLs; robots.txt rules are kept per
// origin ("scheme://authority", RFC 9309 section 2.3: the rules of one
// robots.txt cover its scheme, host and port) and matched on the
// path+query. These helpers cut a URL in two without parsing it fully or
// allocating.

// PathOf returns the path+query of an absolute URL ("scheme://authority/p?q#f"
// gives "/p?q"), "/" when there is none. It does not validate the URL.
func PathOf(rawURL string) string {
	_, path := splitURL(rawURL)
	return path
}

// OriginOf returns "scheme://authority" of an absolute URL, the key robots.txt
// rules are cached under, or "" when rawURL has no "://".
func OriginOf(rawURL string) string {
	origin, _ := splitURL(rawURL)
	return origin
}

// splitURL splits an absolute URL into origin and path+query in one pass; a
// reference without "://" before any '/', '?' or '#' has no origin and is
// all path. The fragment is dropped; an empty path is "/". Only the rare
// "http://h?q" (query, no path) allocates.
func splitURL(s string) (origin, path string) {
	i := 0
	for i < len(s) && s[i] != ':' && s[i] != '/' && s[i] != '?' && s[i] != '#' {
		i++
	}
	if i+2 < len(s) && s[i] == ':' && s[i+1] == '/' && s[i+2] == '/' {
		j := i + 3
		for j < len(s) && s[j] != '/' && s[j] != '?' && s[j] != '#' {
			j++
		}
		origin, s = s[:j], s[j:]
	}
	for k := 0; k < len(s); k++ {
		if s[k] == '#' {
			s = s[:k]
			break
		}
	}
	switch {
	case s == "":
		return origin, "/"
	case s[0] != '/':
		// "http://h?q" has the empty path: the request line is "/?q".
		return origin, "/" + s
	}
	return origin, s
}
