package testweb

// RobotsKind is what a host answers for /robots.txt.
type RobotsKind string

const (
	RobotsNone       RobotsKind = "none"        // 404
	RobotsAllowAll   RobotsKind = "allow-all"   // User-agent: * / Disallow:
	RobotsDisallow   RobotsKind = "disallow"    // Disallow: /private/ and a section
	RobotsWildcards  RobotsKind = "wildcards"   // patterns with * and $
	RobotsAgents     RobotsKind = "agents"      // a group for kspider and one for *
	RobotsCrawlDelay RobotsKind = "crawl-delay" // Crawl-delay: 1
	RobotsServerErr  RobotsKind = "5xx"         // 503: a crawler must assume full disallow
	RobotsForbidden  RobotsKind = "403"         // 401/403: RFC 9309 says allow all
	RobotsRedirect   RobotsKind = "redirect"    // 301 to /robots-moved.txt
	RobotsSlow       RobotsKind = "slow"        // answers after ServeConfig.SlowDelay
	RobotsHuge       RobotsKind = "huge"        // > 500 KiB; the rules are at the start
	RobotsHTML       RobotsKind = "html"        // an HTML page served as robots.txt
)

var allRobotsKinds = []RobotsKind{
	RobotsNone, RobotsAllowAll, RobotsDisallow, RobotsWildcards, RobotsAgents,
	RobotsCrawlDelay, RobotsServerErr, RobotsForbidden, RobotsRedirect,
	RobotsSlow, RobotsHuge, RobotsHTML,
}

var plainRobotsKinds = []RobotsKind{
	RobotsNone, RobotsAllowAll, RobotsDisallow, RobotsWildcards, RobotsAgents,
}

func weightedRobots(r *rng, plain bool) RobotsKind {
	x := r.intn(100)
	switch {
	case x < 30:
		return RobotsNone
	case x < 55:
		return RobotsAllowAll
	case x < 75:
		return RobotsDisallow
	case x < 83:
		return RobotsWildcards
	case x < 90:
		return RobotsAgents
	}
	if plain {
		return RobotsAllowAll
	}
	return pick(r, allRobotsKinds[5:])
}

// Behaviour is how a host misbehaves, if it does.
type Behaviour string

const (
	BehaviourNormal Behaviour = "normal"
	// Trap paths, linked from the host's pages:
	BehaviourRedirects    Behaviour = "redirects"     // /go/N/K: chains of 301/302/307/308
	BehaviourRedirectLoop Behaviour = "redirect-loop" // /loop/a/K <-> /loop/b/K
	BehaviourStatus       Behaviour = "status"        // /status/CODE/K: 404 410 500 503 429
	BehaviourStall        Behaviour = "stall"         // /stall/K: headers, some body, then silence
	BehaviourEndless      Behaviour = "endless"       // /stream/K: a chunked body without end
	BehaviourGzipBomb     Behaviour = "gzip-bomb"     // /bomb/K: small gzip, huge when inflated
	BehaviourCalendar     Behaviour = "calendar"      // /calendar/YYYY/MM/: next month, forever
	BehaviourSymlink      Behaviour = "symlink"       // /a/loop/loop/...: ever deeper
	// Whole-host behaviours:
	BehaviourSlow          Behaviour = "slow"           // first byte after ServeConfig.SlowDelay
	BehaviourWrongLength   Behaviour = "wrong-length"   // Content-Length does not match the body
	BehaviourChunked       Behaviour = "chunked"        // chunked transfer encoding
	BehaviourCloseAfter    Behaviour = "close-after"    // Connection: close after 3 requests
	BehaviourPipelineBreak Behaviour = "pipeline-break" // drops the connection on pipelined requests
	BehaviourSession       Behaviour = "session"        // a session id in every link
	BehaviourNonUTF8       Behaviour = "non-utf8"       // TIS-620 / windows-874 pages
	BehaviourSpam          Behaviour = "spam"           // wildcard domain linking to new subdomains
)

var hostileBehaviours = []Behaviour{
	BehaviourRedirects, BehaviourRedirectLoop, BehaviourStatus, BehaviourStall,
	BehaviourEndless, BehaviourGzipBomb, BehaviourCalendar, BehaviourSymlink,
	BehaviourSlow, BehaviourWrongLength, BehaviourChunked, BehaviourCloseAfter,
	BehaviourPipelineBreak, BehaviourSession, BehaviourNonUTF8,
}

// CloseAfterRequests is how many requests a BehaviourCloseAfter host answers
// on one connection.
const CloseAfterRequests = 3

// DNSKind is how the DNS server answers for a host.
type DNSKind string

const (
	DNSNormal   DNSKind = "normal"   // A (and AAAA ::1 when Host.IPv6)
	DNSCNAME    DNSKind = "cname"    // a chain of CNAMEs, then A
	DNSServFail DNSKind = "servfail" // SERVFAIL
	DNSTimeout  DNSKind = "timeout"  // no answer at all
	DNSNXDomain DNSKind = "nxdomain" // linked from other hosts but does not exist
)

func (k DNSKind) resolves() bool { return k == DNSNormal || k == DNSCNAME }
