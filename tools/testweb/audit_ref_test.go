package testweb

import (
	"sort"
	"time"
)

// auditReference is AuditEntries as it was, holding every request: the
// streaming audit must report what it did.
func auditReference(entries []Entry, opt AuditOptions) *Report {
	if opt.MaxList <= 0 {
		opt.MaxList = 20
	}
	rep := &Report{Statuses: map[int]int{}, MinRequestGap: -1, MinConnGap: -1}
	conns := map[uint64]interval{}
	connHosts := map[uint64]map[string]bool{}
	connClient := map[uint64]string{}
	connServer := map[uint64]string{}
	reqByHost := map[string][]interval{}
	urls := map[string]int{}
	var forbidden []string
	clients := map[string]*ClientReport{}
	clientHosts := map[string]map[string]bool{}
	client := func(ip string) *ClientReport {
		c := clients[ip]
		if c == nil {
			c = &ClientReport{IP: ip}
			clients[ip] = c
			clientHosts[ip] = map[string]bool{}
		}
		return c
	}
	hostForbidden := map[string]int{}
	ipRequests := map[string]int{}
	for _, e := range entries {
		cip := ipOf(e.Client)
		switch e.Kind {
		case "conn":
			conns[e.Conn] = interval{e.Start, e.End, cip}
			connClient[e.Conn] = cip
			connServer[e.Conn] = ipOf(e.Server)
			rep.Connections++
			client(cip).Connections++
			continue
		}
		rep.Requests++
		rep.Statuses[e.Status]++
		client(cip).Requests++
		ipRequests[ipOf(e.Server)]++
		if e.Status == 421 {
			rep.Misdirected++
		}
		u := e.Scheme + "://" + e.Host + e.Target
		urls[u]++
		if e.Disallowed {
			rep.Forbidden++
			hostForbidden[e.Host]++
			if len(forbidden) < opt.MaxList {
				forbidden = append(forbidden, u)
			}
		}
		if connHosts[e.Conn] == nil {
			connHosts[e.Conn] = map[string]bool{}
		}
		connHosts[e.Conn][e.Host] = true
		connClient[e.Conn] = cip
		connServer[e.Conn] = ipOf(e.Server)
		clientHosts[cip][e.Host] = true
		reqByHost[e.Host] = append(reqByHost[e.Host], interval{e.Start, e.End, cip})
		// A connection the log has no record of (log cut short) spans its requests.
		if _, ok := conns[e.Conn]; !ok {
			conns[e.Conn] = interval{e.Start, e.End, cip}
		}
	}
	// Connection records come after their requests; widen fallbacks only.
	for _, e := range entries {
		if e.Kind == "req" {
			c := conns[e.Conn]
			if e.Start < c.start {
				c.start = e.Start
			}
			if e.End > c.end {
				c.end = e.End
			}
			conns[e.Conn] = c
		}
	}
	rep.DistinctURLs = len(urls)
	rep.DuplicateFetches = rep.Requests - len(urls)
	rep.ForbiddenURLs = forbidden
	for u, n := range urls {
		if n > 1 {
			rep.Duplicates = append(rep.Duplicates, URLCount{u, n})
		}
	}
	sort.Slice(rep.Duplicates, func(i, j int) bool {
		a, b := rep.Duplicates[i], rep.Duplicates[j]
		return a.Count > b.Count || a.Count == b.Count && a.URL < b.URL
	})
	if len(rep.Duplicates) > opt.MaxList {
		rep.Duplicates = rep.Duplicates[:opt.MaxList]
	}

	// Connections per host and per server IP.
	connsByHost := map[string][]interval{}
	connsByIP := map[string][]interval{}
	for id, iv := range conns {
		for h := range connHosts[id] {
			connsByHost[h] = append(connsByHost[h], iv)
		}
		connsByIP[connServer[id]] = append(connsByIP[connServer[id]], iv)
	}
	for h, reqs := range reqByHost {
		hr := HostReport{Host: h, Requests: len(reqs), MinGap: -1, MinConnGap: -1, MinIdleGap: 0, Forbidden: hostForbidden[h]}
		hr.MaxConns = maxSimultaneous(connsByHost[h])
		hr.MaxInFlight = maxSimultaneous(reqs)
		sort.Slice(reqs, func(i, j int) bool { return reqs[i].start < reqs[j].start })
		seenClients := map[string]bool{}
		var latestEnd int64
		for i, iv := range reqs {
			if !seenClients[iv.who] {
				seenClients[iv.who] = true
				hr.Clients = append(hr.Clients, iv.who)
			}
			if i > 0 {
				g := time.Duration(iv.start - reqs[i-1].start)
				if hr.MinGap < 0 || g < hr.MinGap {
					hr.MinGap = g
				}
				idle := time.Duration(iv.start - latestEnd)
				if i == 1 || idle < hr.MinIdleGap {
					hr.MinIdleGap = idle
				}
			}
			if i == 0 || iv.end > latestEnd {
				latestEnd = iv.end
			}
		}
		sort.Strings(hr.Clients)
		cs := connsByHost[h]
		sort.Slice(cs, func(i, j int) bool { return cs[i].start < cs[j].start })
		for i := 1; i < len(cs); i++ {
			g := time.Duration(cs[i].start - cs[i-1].start)
			if hr.MinConnGap < 0 || g < hr.MinConnGap {
				hr.MinConnGap = g
			}
		}
		if hr.MaxConns > rep.MaxConnsPerHost || hr.MaxConns == rep.MaxConnsPerHost && h < rep.MaxConnsHost {
			rep.MaxConnsPerHost, rep.MaxConnsHost = hr.MaxConns, h
		}
		rep.MaxInFlightPerHost = max(rep.MaxInFlightPerHost, hr.MaxInFlight)
		if hr.MinGap >= 0 && (rep.MinRequestGap < 0 || hr.MinGap < rep.MinRequestGap) {
			rep.MinRequestGap, rep.MinRequestGapHost = hr.MinGap, h
		}
		if hr.MinConnGap >= 0 && (rep.MinConnGap < 0 || hr.MinConnGap < rep.MinConnGap) {
			rep.MinConnGap, rep.MinConnGapHost = hr.MinConnGap, h
		}
		rep.Hosts = append(rep.Hosts, hr)
		overlaps, shared := clientOverlaps(h, reqs)
		for _, o := range overlaps {
			if len(rep.Overlaps) < opt.MaxList {
				rep.Overlaps = append(rep.Overlaps, o)
			}
		}
		if shared != nil {
			rep.SharedHosts = append(rep.SharedHosts, *shared)
		}
	}
	sort.Slice(rep.Hosts, func(i, j int) bool { return rep.Hosts[i].Host < rep.Hosts[j].Host })
	sort.Slice(rep.SharedHosts, func(i, j int) bool { return rep.SharedHosts[i].Host < rep.SharedHosts[j].Host })
	sort.Slice(rep.Overlaps, func(i, j int) bool { return rep.Overlaps[i].At < rep.Overlaps[j].At })
	for ip, cs := range connsByIP {
		r := IPReport{IP: ip, Requests: ipRequests[ip], MaxConns: maxSimultaneous(cs)}
		if r.MaxConns > rep.MaxConnsPerIP || r.MaxConns == rep.MaxConnsPerIP && ip < rep.MaxConnsIP {
			rep.MaxConnsPerIP, rep.MaxConnsIP = r.MaxConns, ip
		}
		rep.IPs = append(rep.IPs, r)
	}
	sort.Slice(rep.IPs, func(i, j int) bool { return rep.IPs[i].IP < rep.IPs[j].IP })
	for ip, c := range clients {
		c.Hosts = len(clientHosts[ip])
		rep.Clients = append(rep.Clients, *c)
	}
	sort.Slice(rep.Clients, func(i, j int) bool { return rep.Clients[i].IP < rep.Clients[j].IP })
	return rep
}

// maxSimultaneous is the largest number of intervals containing one moment;
// an interval ending at t does not overlap one starting at t.
func maxSimultaneous(ivs []interval) int {
	type ev struct {
		t     int64
		delta int
	}
	evs := make([]ev, 0, 2*len(ivs))
	for _, iv := range ivs {
		evs = append(evs, ev{iv.start, +1}, ev{iv.end, -1})
	}
	sort.Slice(evs, func(i, j int) bool {
		return evs[i].t < evs[j].t || evs[i].t == evs[j].t && evs[i].delta < evs[j].delta
	})
	cur, best := 0, 0
	for _, e := range evs {
		cur += e.delta
		best = max(best, cur)
	}
	return best
}
