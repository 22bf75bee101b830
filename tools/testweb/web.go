package testweb

import (
	"fmt"
	"math"
	"net/netip"
	"sort"
	"strings"
)

// Config says which web to generate. The zero value of every field but Seed
// means its default.
type Config struct {
	Hosts        int   // number of hosts (default 2000), wildcard spam domains included
	Seed         int64 // the same seed always gives the same web
	MaxPages     int   // pages of the most popular host (default 30000); others follow a Zipf law
	MinPages     int   // pages of the least popular hosts (default 3)
	MeanPageSize int   // target mean HTML page size in bytes (default 15000)
	Seeds        int   // number of seed URLs (default 10)
	// Plain makes a well-behaved web: no hostile hosts, no DNS failures, no
	// spam domains, only well-formed robots.txt files. For benchmarks and
	// end-to-end tests that want numbers, not traps.
	Plain bool
}

func (c Config) withDefaults() Config {
	if c.Hosts <= 0 {
		c.Hosts = 2000
	}
	if c.MaxPages <= 0 {
		c.MaxPages = 30000
	}
	if c.MinPages <= 0 {
		c.MinPages = 3
	}
	if c.MinPages > c.MaxPages {
		c.MinPages = c.MaxPages
	}
	if c.MeanPageSize <= 0 {
		c.MeanPageSize = 15000
	}
	if c.Seeds <= 0 {
		c.Seeds = 10
	}
	return c
}

// pathStyle is how a host spells its page URLs.
type pathStyle uint8

const (
	styleHTML  pathStyle = iota // /news/annual-report-12.html
	styleDir                    // /news/12/
	styleQuery                  // /news/view.php?id=12&lang=th
)

// Host is one web site of the test web. Fields are read-only after Generate.
type Host struct {
	Index     int
	Name      string     // ASCII name (punycode for IDN) as DNS and the Host header carry it
	Display   string     // Unicode form of Name
	Scheme    string     // "http" or "https": the scheme its URLs use
	Addr      netip.Addr // its IPv4 address in 127.0.0.0/8 (shared by virtual hosts)
	IPv6      bool       // DNS also answers AAAA ::1, and the server listens on [::1]
	Pages     int        // HTML pages 0..Pages-1; page 0 is "/"
	Resources int        // non-HTML resources 0..Resources-1
	Rank      int        // popularity rank for links from other hosts (0 = most linked)
	Robots    RobotsKind
	Behaviour Behaviour
	DNS       DNSKind
	CNAMEs    []string // the alias chain DNS answers for DNSCNAME hosts
	TTL       uint32   // DNS TTL in seconds
	Wildcard  bool     // a spam domain: every name under Name resolves and serves spam

	rules    robotsRuleset // parsed robots rules, for the kinds that serve rules
	style    pathStyle
	sections []string // section directories, without slashes at the ends
	key      uint64   // hash of (seed, index): the root of everything about the host
}

// Web is a generated web. It holds only per-host facts; pages are generated
// when asked for.
type Web struct {
	cfg     Config
	hosts   []*Host
	byName  map[string]*Host
	byRank  []*Host // most popular first
	wild    []*Host
	filler  *filler
	seedIDs []int
}

// Generate builds the web for cfg. It is cheap: O(hosts).
func Generate(cfg Config) *Web {
	cfg = cfg.withDefaults()
	w := &Web{cfg: cfg, byName: make(map[string]*Host, cfg.Hosts)}
	seed := uint64(cfg.Seed)
	r := newRng(key(seed, 1))
	taken := map[string]bool{}
	spam := 0
	if !cfg.Plain && cfg.Hosts >= 20 {
		spam = 1 + cfg.Hosts/500
	}
	addrNext := 0
	for i := 0; i < cfg.Hosts; i++ {
		h := &Host{Index: i, key: key(seed, 2, uint64(i)), Scheme: "http"}
		hr := newRng(h.key)
		switch {
		case i >= cfg.Hosts-spam:
			h.Wildcard = true
			h.Name = spamDomain(&r, i, taken)
			h.Display = h.Name
			h.Behaviour = BehaviourSpam
		default:
			h.Name, h.Display = hostName(&r, r.chance(0.05), taken)
		}
		if hr.chance(0.2) {
			h.Scheme = "https"
		}
		// Virtual hosting: some hosts share the previous host's address.
		if i > 0 && !h.Wildcard && hr.chance(0.1) {
			h.Addr = w.hosts[i-1].Addr
		} else {
			h.Addr = loopbackAddr(addrNext)
			addrNext++
		}
		h.IPv6 = hr.chance(0.05)
		h.TTL = uint32(pick(&hr, []int{60, 300, 300, 3600, 3600, 86400}))
		// 60% .html pages, 40% directory pages; then 15% become ?id= pages.
		h.style = pathStyle(hr.intn(10) / 6)
		if hr.chance(0.15) {
			h.style = styleQuery
		}
		nsec := 3 + hr.intn(5)
		for s := 0; s < nsec; s++ {
			sec := pick(&hr, sectionWords)
			if hr.chance(0.05) {
				sec = thaiSection
			}
			h.sections = append(h.sections, sec)
		}
		h.sections = append(h.sections, "private")
		w.hosts = append(w.hosts, h)
		w.byName[h.Name] = h
		if h.Wildcard {
			w.wild = append(w.wild, h)
		}
	}
	// Popularity: a seeded permutation; page counts follow rank by Zipf.
	perm := make([]int, cfg.Hosts)
	for i := range perm {
		perm[i] = i
	}
	for i := len(perm) - 1; i > 0; i-- {
		j := r.intn(i + 1)
		perm[i], perm[j] = perm[j], perm[i]
	}
	w.byRank = make([]*Host, cfg.Hosts)
	for rank, idx := range perm {
		h := w.hosts[idx]
		h.Rank = rank
		w.byRank[rank] = h
		hr := newRng(key(h.key, 3))
		p := float64(cfg.MaxPages) / math.Pow(float64(rank+1), 1.0)
		p *= 0.7 + 0.6*hr.float()
		h.Pages = int(p)
		if h.Pages < cfg.MinPages {
			h.Pages = cfg.MinPages + hr.intn(cfg.MinPages+1)
		}
		if h.Pages > cfg.MaxPages {
			h.Pages = cfg.MaxPages
		}
		h.Resources = 4 + h.Pages/3
	}
	w.assignKinds(&r)
	for _, h := range w.hosts {
		h.rules = parseRobots(robotsRules(h))
	}
	w.filler = newFiller(key(seed, 4))
	// Seeds: the most popular hosts that resolve and behave.
	for _, h := range w.byRank {
		if len(w.seedIDs) >= cfg.Seeds {
			break
		}
		if h.DNS.resolves() && h.Behaviour == BehaviourNormal && !h.Wildcard {
			w.seedIDs = append(w.seedIDs, h.Index)
		}
	}
	return w
}

// assignKinds gives hosts their robots.txt, behaviour and DNS kinds. Every
// kind appears at least once when there are enough hosts; the most popular
// host stays normal so seeds always work.
func (w *Web) assignKinds(r *rng) {
	var order []*Host // candidates, by index, skipping the top-ranked hosts
	for _, h := range w.hosts {
		h.Robots = RobotsNone
		h.Behaviour = orDefault(h.Behaviour, BehaviourNormal)
		h.DNS = DNSNormal
		if h.Rank >= 3 && !h.Wildcard {
			order = append(order, h)
		}
	}
	robotsKinds := allRobotsKinds
	if w.cfg.Plain {
		robotsKinds = plainRobotsKinds
	}
	// Robots kinds: one of each first, then weighted draws.
	for i, h := range w.hosts {
		hr := newRng(key(h.key, 5))
		switch {
		case h.Wildcard:
			h.Robots = RobotsAllowAll // spam answers everything alike
		case i < len(robotsKinds):
			h.Robots = robotsKinds[i]
		default:
			h.Robots = weightedRobots(&hr, w.cfg.Plain)
		}
	}
	if w.cfg.Plain {
		return
	}
	n := 0
	for _, b := range hostileBehaviours {
		for c := 0; c < 2 && n < len(order); c++ {
			order[n].Behaviour = b
			n++
		}
	}
	for _, d := range []DNSKind{DNSCNAME, DNSCNAME, DNSServFail, DNSTimeout, DNSNXDomain} {
		if n < len(order) {
			order[n].DNS = d
			n++
		}
	}
	for _, h := range order[n:] {
		hr := newRng(key(h.key, 6))
		if hr.chance(0.05) {
			h.Behaviour = pick(&hr, hostileBehaviours)
		}
		switch x := hr.float(); {
		case x < 0.06:
			h.DNS = DNSCNAME
		case x < 0.07:
			h.DNS = DNSServFail
		case x < 0.08:
			h.DNS = DNSTimeout
		}
	}
	for _, h := range w.hosts {
		if h.DNS == DNSCNAME {
			hr := newRng(key(h.key, 7))
			depth := 1 + hr.intn(3)
			for d := 0; d < depth; d++ {
				h.CNAMEs = append(h.CNAMEs, fmt.Sprintf("edge%d-%d.cdn%d.akamai-th.net", h.Index, d, hr.intn(9)))
			}
		}
	}
}

func orDefault(b, def Behaviour) Behaviour {
	if b == "" {
		return def
	}
	return b
}

// loopbackAddr is the n-th host address: 127.1.0.1 onwards, skipping .0 and
// .255 and leaving 127.0.0.0/16 to everything else on the machine.
func loopbackAddr(n int) netip.Addr {
	last := n%254 + 1
	n /= 254
	return netip.AddrFrom4([4]byte{127, byte(1 + n/256), byte(n % 256), byte(last)})
}

// Config returns the configuration the web was generated from, defaults filled in.
func (w *Web) Config() Config { return w.cfg }

// Hosts returns the hosts, by index. The slice must not be modified.
func (w *Web) Hosts() []*Host { return w.hosts }

// Host returns the host serving the given name (ASCII, any case, no port),
// including names under a wildcard spam domain.
func (w *Web) Host(name string) (*Host, bool) {
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	if h, ok := w.byName[name]; ok {
		return h, true
	}
	for _, h := range w.wild {
		if strings.HasSuffix(name, "."+h.Name) {
			return h, true
		}
	}
	return nil, false
}

// Addrs returns the distinct IPv4 addresses of all hosts, sorted.
func (w *Web) Addrs() []netip.Addr {
	seen := map[netip.Addr]bool{}
	var out []netip.Addr
	for _, h := range w.hosts {
		if !seen[h.Addr] {
			seen[h.Addr] = true
			out = append(out, h.Addr)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}

// SeedHosts returns the hosts whose root pages are the seed URLs.
func (w *Web) SeedHosts() []*Host {
	out := make([]*Host, len(w.seedIDs))
	for i, id := range w.seedIDs {
		out[i] = w.hosts[id]
	}
	return out
}

// PageCount is the number of HTML pages of the regular hosts (traps and spam
// domains, which are infinite, not counted).
func (w *Web) PageCount() int {
	n := 0
	for _, h := range w.hosts {
		if !h.Wildcard {
			n += h.Pages
		}
	}
	return n
}
