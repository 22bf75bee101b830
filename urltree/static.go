package urltree

// Built-in reference prefixes. An entry with reference distance 0 takes
// its first lcp bytes from the prefix of that length instead of from
// another URL: nearly every URL starts with one of them, and a Get that
// reaches one needs no further memory access. Their lengths are distinct,
// so lcp names the prefix. Changing the list changes the format.
func staticPrefix(n int) string {
	switch n {
	case 4:
		return "http"
	case 7:
		return "http://"
	case 8:
		return "https://"
	case 11:
		return "http://www."
	case 12:
		return "https://www."
	}
	return ""
}

// staticLen returns the length of the longest built-in prefix of u, or 0.
func staticLen(u []byte) int {
	if len(u) < 4 || string(u[:4]) != "http" {
		return 0
	}
	for _, n := range [...]int{12, 11, 8, 7} {
		if len(u) >= n && string(u[:n]) == staticPrefix(n) {
			return n
		}
	}
	return 4
}
