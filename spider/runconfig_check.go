package spider

import (
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/spider/scope"
	"github.com/kspider/kspider/storage"
)

// Validate checks a config built or changed in code (after flags override
// keys, say); ParseRunConfig already did this with line numbers.
func (c *RunConfig) Validate() error { return c.validate("config", nil) }

// maxConfigErrors bounds the errors reported for one file.
const maxConfigErrors = 50

// checker collects errors naming the file, the key's line and the key.
type checker struct {
	name  string
	lines *keyIndex
	errs  []error
	more  int
}

func (k *checker) errorf(key, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if l := k.lines.lineFor(key); l > 0 {
		k.add(fmt.Errorf("%s:%d: %s: %s", k.name, l, key, msg))
	} else {
		k.add(fmt.Errorf("%s: %s: %s", k.name, key, msg))
	}
}

func (k *checker) add(err error) {
	if len(k.errs) >= maxConfigErrors {
		k.more++
		return
	}
	k.errs = append(k.errs, shortError(err))
}

// maxErrorText bounds the text of one error of a config or seeds file.
const maxErrorText = 1024

// shortError cuts the middle out of an error's text over maxErrorText,
// keeping its start (file, line, key, the value's start) and its end (what
// is wrong): a value of megabytes (a seed, a contact, an unknown key) was
// quoted whole, one line of 3 MB on the operator's terminal for each.
func shortError(err error) error {
	msg := err.Error()
	if len(msg) <= maxErrorText {
		return err
	}
	head, tail := maxErrorText*3/4, maxErrorText/4
	return errors.New(strings.ToValidUTF8(msg[:head], "") + fmt.Sprintf(" [... %d bytes ...] ", len(msg)-head-tail) + strings.ToValidUTF8(msg[len(msg)-tail:], ""))
}

func (k *checker) err() error {
	if k.more > 0 {
		k.errs = append(k.errs, &MoreErrors{File: k.name, N: k.more})
	}
	return errors.Join(k.errs...)
}

// MoreErrors stands for the errors of a file past the first ones listed,
// so that a file of thousands of bad lines gives a bounded report.
type MoreErrors struct {
	File string
	N    int
}

func (e *MoreErrors) Error() string { return fmt.Sprintf("%s: %d more errors", e.File, e.N) }

// ValuesNotChecked ends the report of a file with more unknown keys than
// a mistyped config has: it says what the report lacks and is no error of
// its own, so a count of the file's errors leaves it out.
type ValuesNotChecked struct {
	File    string
	Unknown int // the file's unknown keys
}

func (e *ValuesNotChecked) Error() string {
	return fmt.Sprintf("%s: values not checked: %d unknown keys, more than a kspider config mistyped has (is it one?)", e.File, e.Unknown)
}

func (k *checker) intRange(key string, v, lo, hi int64) {
	if v < lo || v > hi {
		k.errorf(key, "%d is out of range %d..%d", v, lo, hi)
	}
}

// duration checks lo <= d; positive durations must be > 0.
// maxPhaseLength bounds cluster.phase_length.
const maxPhaseLength = 24 * time.Hour

// path refuses a path holding a NUL byte ("\u0000" in TOML), which no
// system call takes: it was said ok, and the run failed at its start,
// "lock: mkdir x\x00y: invalid argument", naming no key. It reports
// whether p is fine.
func (k *checker) path(key, p string) bool {
	if strings.IndexByte(p, 0) >= 0 {
		k.errorf(key, "%q holds a NUL byte, which no path can", p)
		return false
	}
	return true
}

func (k *checker) duration(key string, d Duration, positive bool) {
	switch {
	case d.Duration < 0:
		k.errorf(key, "negative duration %v", d)
	case positive && d.Duration == 0:
		k.errorf(key, "must be longer than 0")
	}
}

func (c *RunConfig) validate(name string, lines *keyIndex) error {
	k := &checker{name: name, lines: lines}
	for i, s := range c.Seeds {
		if err := checkSeed(s); err != nil {
			k.errorf(fmt.Sprintf("seeds[%d]", i), "%v", err)
		}
	}
	if c.DataDir == "" {
		k.errorf("data_dir", "must not be empty")
	}
	k.path("data_dir", c.DataDir)
	k.path("seeds_file", c.SeedsFile)
	k.path("cluster.secret_file", c.Cluster.SecretFile)
	k.intRange("fetchers", int64(c.Fetchers), 1, 100_000)
	k.intRange("pipelining", int64(c.Pipelining), 1, 128)
	if !isToken(c.UserAgent) {
		k.errorf("user_agent", "%q is not a product token like \"MyCrawler/1.0\"", c.UserAgent)
	}
	contactOK := isContactURL(c.Contact)
	if !contactOK {
		k.errorf("contact", "%q is not an http(s) or mailto URL", c.Contact)
	}
	if n := len(c.UserAgentHeader()); n > maxUserAgentHeader && contactOK && isToken(c.UserAgent) {
		// Servers answer a header line past their bound (8 KiB in nginx
		// and Apache) with 431, which was stored as the page: a crawl of
		// the seeds' 431s ended "0 errors", exit 0.
		key := "user_agent"
		if len(c.Contact) > len(c.UserAgent) {
			key = "contact"
		}
		k.errorf(key, "user_agent and contact make a User-Agent header of %d bytes, more than %d: servers refuse a header that long", n, maxUserAgentHeader)
	}
	if c.From != "" {
		if a, err := mail.ParseAddress(c.From); err != nil || a.Name != "" {
			k.errorf("from", "%q is not an e-mail address", c.From)
		}
	}
	for i, s := range c.DNSServers {
		if _, err := netip.ParseAddr(s); err != nil {
			if _, err := netip.ParseAddrPort(s); err != nil {
				k.errorf(fmt.Sprintf("dns_servers[%d]", i), "%q is not an IP address or ip:port", s)
			}
		}
	}
	for i, s := range c.NTPServers {
		if err := checkHostPort(s, false); err != nil {
			k.errorf(fmt.Sprintf("ntp_servers[%d]", i), "%v", err)
		}
	}
	if c.Status != "" {
		if _, err := parseListen(c.Status); err != nil {
			k.errorf("status", "%v", err)
		}
	}
	c.validateStorage(k)
	c.validateScope(k)
	p := &c.Politeness
	k.duration("politeness.delay", p.Delay, false)
	if p.Delay.Duration > maxPoliteDelay {
		// The scheduler adds it to the time of day: a delay near the
		// largest duration wrapped around to a time long past, and every
		// host was asked again at once, with no delay at all.
		k.errorf("politeness.delay", "%v is above %v (the most 'kspider ctl set delay' takes too)", p.Delay, Duration{maxPoliteDelay})
	}
	k.intRange("politeness.per_ip", int64(p.PerIP), 1, 10_000)
	k.duration("politeness.crawl_delay_cap", p.CrawlDelayCap, false)
	if p.CrawlDelayCap.Duration == 0 {
		// The scheduler takes 0 for its default, a minute: Crawl-delay
		// was obeyed up to that where the operator asked it never to matter.
		k.errorf("politeness.crawl_delay_cap", "must be longer than 0; for Crawl-delay never to matter, set it at or below politeness.delay (%v)", p.Delay)
	}
	if p.CrawlDelayCap.Duration > scheduler.MaxDelay {
		// The scheduler refuses it (a wait added to the time of day would
		// wrap round): the node's start failed, naming no file or key.
		k.errorf("politeness.crawl_delay_cap", "%v is above %v (the longest wait the scheduler keeps)", p.CrawlDelayCap, Duration{scheduler.MaxDelay})
	}
	k.duration("politeness.robots_stale_for", p.RobotsStaleFor, false)
	l := &c.Limits
	k.intRange("limits.max_body", l.MaxBody, 1, 1<<30)
	k.duration("limits.connect_timeout", l.ConnectTimeout, true)
	k.duration("limits.tls_timeout", l.TLSTimeout, true)
	k.duration("limits.first_byte_timeout", l.FirstByteTimeout, true)
	k.duration("limits.response_timeout", l.ResponseTimeout, true)
	k.duration("limits.idle_timeout", l.IdleTimeout, true)
	k.intRange("limits.max_depth", int64(l.MaxDepth), 0, int64(scope.MaxLimit))
	k.intRange("limits.max_pages_per_host", int64(l.MaxPagesPerHost), 0, 1<<40)
	k.intRange("limits.max_links_per_page", int64(l.MaxLinksPerPage), 1, 10_000_000)
	k.intRange("limits.max_pages", l.MaxPages, 0, 1<<50)
	c.validateCluster(k)
	return k.err()
}

// maxUserAgentHeader bounds the User-Agent header user_agent and contact
// make: real ones are a few dozen bytes.
const maxUserAgentHeader = 1024

// maxPoliteDelay is the longest politeness.delay (as Node.Set's "delay").
const maxPoliteDelay = time.Hour

func (c *RunConfig) validateStorage(k *checker) {
	seen := map[string]int{}
	for i, d := range c.Storage.Dirs {
		key := fmt.Sprintf("storage.dirs[%d]", i)
		if d == "" {
			k.errorf(key, "empty directory name")
			continue
		}
		if !k.path(key, d) {
			continue
		}
		clean := filepath.Clean(d)
		if c.DataDir != "" && clean == filepath.Clean(c.DataDir) {
			// Both keep a LOCK file (and other files) of their own.
			k.errorf(key, "%q is data_dir; use a directory of its own such as %q", d, filepath.Join(d, "pages"))
			continue
		}
		if j, ok := seen[clean]; ok {
			k.errorf(key, "%q is storage.dirs[%d] again", d, j)
			continue
		}
		seen[clean] = i
	}
	if _, err := storage.ParseCodec(c.Storage.Codec); err != nil || c.Storage.Codec == "" {
		k.errorf("storage.codec", "%q is not one of %s", c.Storage.Codec, strings.Join(storage.Codecs(), ", "))
	}
}

func (c *RunConfig) validateScope(k *checker) {
	s := &c.Scope
	for _, list := range []struct {
		key string
		res []string
	}{{"scope.include", s.Include}, {"scope.exclude", s.Exclude}} {
		for i, re := range list.res {
			if _, err := regexp.Compile(re); err != nil {
				k.errorf(fmt.Sprintf("%s[%d]", list.key, i), "%v", err)
			}
		}
	}
	for i, d := range s.Domains {
		if _, err := scope.ParseDomainRules([]string{d}); err != nil {
			k.errorf(fmt.Sprintf("scope.domains[%d]", i), "%v", err)
		}
	}
	k.intRange("scope.max_url_length", int64(s.MaxURLLength), 0, 1<<20)
	k.intRange("scope.max_path_depth", int64(s.MaxPathDepth), 0, 1<<16)
	k.intRange("scope.max_segment_repeat", int64(s.MaxSegmentRepeat), 0, 1<<16)
	if s.MaxSegmentRepeat == 1 {
		// The filter takes it for no limit: the strictest setting asked
		// for would have been none at all, silently.
		k.errorf("scope.max_segment_repeat", "1 would refuse every path (a segment's first occurrence would be its repeat); 2 refuses a segment seen twice, 0 is no limit")
	}
	k.intRange("scope.max_subdomains", int64(s.MaxSubdomains), 0, 1<<40)
}

func (c *RunConfig) validateCluster(k *checker) {
	cl := &c.Cluster
	n := len(cl.Nodes)
	ids := map[int]bool{}
	udp := map[string]int{}
	for i, nd := range cl.Nodes {
		key := fmt.Sprintf("cluster.nodes[%d]", i)
		switch {
		case nd.ID < 0 || nd.ID >= n:
			k.errorf(key+".id", "%d is out of range 0..%d (ids number the %d nodes from 0)", nd.ID, n-1, n)
		case ids[nd.ID]:
			k.errorf(key+".id", "id %d is given twice", nd.ID)
		}
		ids[nd.ID] = true
		if err := checkHostPort(nd.UDP, true); err != nil {
			k.errorf(key+".udp", "%v", err)
		} else {
			same := nd.UDP // two spellings of one address are one
			if ap, err := netip.ParseAddrPort(nd.UDP); err == nil {
				ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
				same = ap.String()
				if err := cluster.CheckUDP(ap); err != nil {
					k.errorf(key+".udp", "%q: %v", nd.UDP, err)
				}
			}
			if j, ok := udp[same]; ok {
				k.errorf(key+".udp", "%q is cluster.nodes[%d]'s too", nd.UDP, j)
			} else {
				udp[same] = i
			}
		}
		// The node listens on it in place of the top-level status: a host
		// name, refused there, was taken here and listened on one of its
		// addresses, whichever the resolver gave first.
		if nd.Status != "" {
			if _, err := parseListen(nd.Status); err != nil {
				k.errorf(key+".status", "%v", err)
			}
		}
	}
	if !ids[cl.Node] {
		k.errorf("cluster.node", "node %d is not in cluster.nodes", cl.Node)
	}
	if cl.Phases < n {
		k.errorf("cluster.phases", "%d phases for %d nodes; need at least as many phases as nodes", cl.Phases, n)
	}
	k.intRange("cluster.phases", int64(cl.Phases), 1, 1<<16)
	k.duration("cluster.phase_length", cl.PhaseLength, true)
	if d := cl.PhaseLength.Duration; d > maxPhaseLength {
		// Each host's turn comes once in phases × phase_length: past a
		// day, the hosts of the other phases wait days (292 years were
		// taken) while the crawl looks alive.
		k.errorf("cluster.phase_length", "%v is longer than %v: a host's turn comes once in phases × phase_length (%d × %v)", d, maxPhaseLength, cl.Phases, d)
	}
	if d := cl.PhaseLength.Duration; c.clusterTurns() && d > 0 && scheduler.StartWindow(d, cluster.Guard) <= 0 {
		k.errorf("cluster.phase_length", "%v leaves no time to fetch: with partition \"url\" the nodes take turns, and no fetch starts within %v of either end of a slot",
			d, cluster.Guard)
	}
	if cl.Epoch.IsZero() {
		k.errorf("cluster.epoch", "must be set (a date-time such as 2026-01-01T00:00:00Z)")
	} else if err := scheduler.CheckEpochNear(cl.Epoch, time.Now()); err != nil {
		k.errorf("cluster.epoch", "%v", err)
	} else if k.lines.localTime("cluster.epoch") {
		k.errorf("cluster.epoch", "needs a UTC offset (such as 2026-01-01T00:00:00Z): nodes in other time zones would read it as another instant")
	}
	if n > 1 && cl.SecretFile == "" {
		k.errorf("cluster.secret_file", "required with %d nodes: datagrams between nodes are authenticated", n)
	}
	switch cl.Partition {
	case "url", "host", "domain":
	default:
		k.errorf("cluster.partition", "%q is not \"url\", \"host\" or \"domain\"", cl.Partition)
	}
}

// Warnings lists what is allowed but probably unwanted, each naming the
// key and the figure.
func (c *RunConfig) Warnings() []string {
	var w []string
	if len(c.Seeds) == 0 && c.SeedsFile == "" {
		w = append(w, "seeds: none (and no seeds_file): a new crawl has nothing to start from")
	}
	if c.Contact == Defaults().Contact {
		w = append(w, fmt.Sprintf("contact: %q is kspider's project page; give site owners a way to reach you", c.Contact))
	}
	statusKeys, statusAddrs := []string{"status"}, []string{c.Status}
	// A node listens on its cluster.nodes entry's status in place of the
	// top-level one: warned of only once it listened there, not at
	// kspider init --check.
	for i, nd := range c.Cluster.Nodes {
		statusKeys, statusAddrs = append(statusKeys, fmt.Sprintf("cluster.nodes[%d].status", i)), append(statusAddrs, nd.Status)
	}
	for i, addr := range statusAddrs {
		if ap, err := parseListen(addr); addr != "" && err == nil && !ap.loopback {
			w = append(w, fmt.Sprintf("%s: %q is not a loopback address: anyone who can reach it sees the crawl and may control it", statusKeys[i], addr))
		}
	}
	if d := c.Cluster.PhaseLength.Duration; c.clusterTurns() && scheduler.StartWindow(d, cluster.Guard) > 0 && d < 10*cluster.Guard {
		w = append(w, fmt.Sprintf("cluster.phase_length: %v: no fetch starts within %v of either end of a slot, %d%% of it", d, cluster.Guard, int(200*cluster.Guard/d)))
	}
	if !c.IsCluster() && len(c.NTPServers) > 0 {
		// kspider run asks them only for a cluster's phase clock.
		w = append(w, fmt.Sprintf("ntp_servers: unused: a node alone (one node, one phase) keeps no phase clock; %s not asked", strings.Join(c.NTPServers, ", ")))
	}
	if len(c.Cluster.Nodes) > 1 && len(c.NTPServers) == 0 {
		w = append(w, fmt.Sprintf("ntp_servers: none with %d nodes: phase boundaries rely on the system clocks agreeing", len(c.Cluster.Nodes)))
	}
	if d := c.Politeness.Delay.Duration; d < 100*time.Millisecond {
		w = append(w, fmt.Sprintf("politeness.delay: %v between requests to one host is impolite outside a test web", d))
	}
	if cap := c.Politeness.CrawlDelayCap.Duration; cap < c.Politeness.Delay.Duration {
		w = append(w, fmt.Sprintf("politeness.crawl_delay_cap: %v is below politeness.delay %v, so Crawl-delay never matters", cap, c.Politeness.Delay))
	}
	return w
}

// isContactURL reports whether s is an http(s) URL with a host, or a
// mailto URL with an e-mail address: "mailto:" alone, sent as "(+mailto:)",
// gave site owners no way to reach the operator.
func isContactURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || strings.ContainsAny(s, " ()\r\n") {
		return false
	}
	switch u.Scheme {
	case "http", "https":
		return u.Host != ""
	case "mailto":
		to, err := url.PathUnescape(u.Opaque)
		if err != nil {
			return false
		}
		_, err = mail.ParseAddressList(to)
		return err == nil
	}
	return false
}

// checkSeed reports why s cannot be a seed.
func checkSeed(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	return nil
}

// isToken reports whether s is a User-Agent product: RFC 9110 token
// characters with at most one '/' between two non-empty parts.
func isToken(s string) bool {
	name, version, _ := strings.Cut(s, "/")
	if name == "" || strings.Contains(s, "/") && version == "" {
		return false
	}
	for _, part := range []string{name, version} {
		for i := 0; i < len(part); i++ {
			c := part[i]
			if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
				return false
			}
		}
	}
	return true
}

// checkHostPort checks "host" or "host:port" (port required when
// needPort); host is an IP address or a DNS name.
func checkHostPort(s string, needPort bool) error {
	host, port := s, ""
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
	} else if needPort || strings.Count(s, ":") == 1 || strings.HasPrefix(s, "[") {
		return fmt.Errorf("%q is not host:port", s)
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: port %q is not 1..65535", s, port)
		}
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	if !isHostName(host) {
		return fmt.Errorf("%q: %q is neither an IP address nor a host name", s, host)
	}
	return nil
}

func isHostName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(h, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// CheckStatusAddr checks a status page address given outside a config
// file (kspider run --status) as the config's status key is checked.
func CheckStatusAddr(s string) error {
	_, err := parseListen(s)
	return err
}

// listenAddr is a parsed status address.
type listenAddr struct {
	addr     string
	loopback bool
}

// parseListen parses a listen address: "ip:port", "localhost:port" or
// ":port" (every interface).
func parseListen(s string) (listenAddr, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return listenAddr{}, fmt.Errorf("%q is not ip:port", s)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return listenAddr{}, fmt.Errorf("%q: port %q is not 0..65535", s, port)
	}
	switch host {
	case "":
		return listenAddr{s, false}, nil
	case "localhost":
		return listenAddr{s, true}, nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || ip.Zone() != "" && !ip.IsLinkLocalUnicast() {
		return listenAddr{}, fmt.Errorf("%q: %q is not an IP address (a status page listens on an IP address, localhost, or every interface as \":port\")", s, host)
	}
	return listenAddr{s, ip.IsLoopback()}, nil
}
