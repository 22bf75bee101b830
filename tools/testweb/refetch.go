package testweb

import "sort"

// Refetches counts the requests for a URL that the server had already
// answered normally: a status other than 429 or 5xx, without a Note saying
// it misbehaved (a cut body, a stall; "close-after" is normal), and not
// after such a response on the same connection (a body longer than its
// Content-Length garbles the answers behind it). A crawler
// may ask again after a failed answer (RFC 9309 asks it to retry a robots.txt
// that answered 5xx), but never twice for one it got. It returns the count
// and up to max such URLs, most repeated first.
func Refetches(entries []Entry, max int) (int, []URLCount) {
	var reqs []Entry
	for _, e := range entries {
		if e.Kind == "req" {
			reqs = append(reqs, e)
		}
	}
	sort.SliceStable(reqs, func(i, j int) bool { return reqs[i].Start < reqs[j].Start })
	answered := map[string]bool{}
	again := map[string]int{}
	tainted := map[uint64]bool{} // connections after a misbehaving response
	n := 0
	for _, e := range reqs {
		u := e.Scheme + "://" + e.Host + e.Target
		if answered[u] {
			n++
			again[u]++
			continue
		}
		odd := e.Note != "" && e.Note != "close-after"
		failed := e.Status == 0 || e.Status == 429 || e.Status >= 500 || odd || tainted[e.Conn]
		if odd {
			tainted[e.Conn] = true
		}
		if !failed {
			answered[u] = true
		}
	}
	var list []URLCount
	for u, c := range again {
		list = append(list, URLCount{u, c + 1})
	}
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i], list[j]
		return a.Count > b.Count || a.Count == b.Count && a.URL < b.URL
	})
	if len(list) > max {
		list = list[:max]
	}
	return n, list
}
