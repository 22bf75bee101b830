package testweb

import (
	"strconv"
	"strings"
	"time"
)

// robotsRules is the text of the rules part of a host's robots.txt (for the
// kinds that answer 200 with rules).
func robotsRules(h *Host) string {
	sec := h.sections[0]
	switch h.Robots {
	case RobotsAllowAll:
		return "User-agent: *\nDisallow:\n"
	case RobotsDisallow, RobotsSlow, RobotsHuge:
		return "# robots.txt for " + h.Name + "\nUser-agent: *\nDisallow: /private/\nDisallow: /" + escapePathSegment(sec) + "/\n"
	case RobotsWildcards:
		return "User-agent: *\nDisallow: /*.pdf$\nDisallow: /*?*lang=\nDisallow: /images/icon-*.png\nDisallow: /private\nAllow: /private/open.html$\n"
	case RobotsAgents:
		return "User-agent: kspider\nDisallow: /private/\nDisallow: /" + escapePathSegment(sec) + "/\n\n" +
			"User-agent: Googlebot\nUser-agent: bingbot\nAllow: /\n\nUser-agent: *\nDisallow: /\n"
	case RobotsCrawlDelay:
		return "User-agent: *\nCrawl-delay: 1\nDisallow: /private/\n"
	case RobotsRedirect:
		return "User-agent: *\nDisallow: /private/\n"
	}
	return ""
}

// hugeRobotsSize is the size of a RobotsHuge file: past the 500 KiB a
// crawler must read at least, by a margin.
const hugeRobotsSize = 600 << 10

// robotsBody is the full robots.txt body of a 200 answer.
func robotsBody(h *Host) []byte {
	rules := robotsRules(h)
	if h.Robots != RobotsHuge {
		return []byte(rules)
	}
	b := make([]byte, 0, hugeRobotsSize+64)
	b = append(b, rules...)
	for n := 0; len(b) < hugeRobotsSize; n++ {
		b = append(b, "\nUser-agent: archiver-"...)
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, "\nDisallow: /archive-"...)
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, "/\n# padding so this file is larger than 500 KiB\n"...)
	}
	return b
}

const robotsHTML = "<!DOCTYPE html>\n<html><head><title>Page not found</title></head>\n<body><h1>Welcome to our site</h1>\n<p>The page you requested has moved.</p></body></html>\n"

// robotsRuleset is a parsed robots.txt: the small matcher testweb uses for
// its own files (RFC 9309 groups, longest match, * and $). It is not a
// general parser; spider/robots is.
type robotsRuleset struct {
	groups []robotsGroup
}

type robotsGroup struct {
	agents []string // lower case
	rules  []robotsRule
}

type robotsRule struct {
	allow   bool
	pattern string
}

func parseRobots(text string) robotsRuleset {
	var rs robotsRuleset
	inAgents := false
	for _, line := range strings.Split(text, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		switch k {
		case "user-agent":
			if !inAgents {
				rs.groups = append(rs.groups, robotsGroup{})
				inAgents = true
			}
			g := &rs.groups[len(rs.groups)-1]
			g.agents = append(g.agents, strings.ToLower(v))
		case "allow", "disallow":
			inAgents = false
			if len(rs.groups) == 0 || v == "" {
				continue
			}
			g := &rs.groups[len(rs.groups)-1]
			g.rules = append(g.rules, robotsRule{allow: k == "allow", pattern: v})
		default:
			inAgents = false
		}
	}
	return rs
}

// allowed decides for a product token (lower case) and an escaped
// path-with-query.
func (rs robotsRuleset) allowed(agent, target string) bool {
	var rules []robotsRule
	found := false
	for _, g := range rs.groups {
		for _, a := range g.agents {
			if a == agent {
				rules = append(rules, g.rules...)
				found = true
				break
			}
		}
	}
	if !found {
		for _, g := range rs.groups {
			for _, a := range g.agents {
				if a == "*" {
					rules = append(rules, g.rules...)
					break
				}
			}
		}
	}
	best, allow := -1, true
	for _, rule := range rules {
		if !robotsMatch(rule.pattern, target) {
			continue
		}
		n := len(rule.pattern)
		if n > best || n == best && rule.allow {
			best, allow = n, rule.allow
		}
	}
	return allow
}

// robotsMatch matches a pattern with * (any run) and a trailing $ (end).
func robotsMatch(pattern, s string) bool {
	anchored := strings.HasSuffix(pattern, "$")
	pattern = strings.TrimSuffix(pattern, "$")
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	pos := len(parts[0])
	for i, part := range parts[1:] {
		if i == len(parts)-2 && anchored {
			return len(s)-pos >= len(part) && strings.HasSuffix(s, part)
		}
		j := strings.Index(s[pos:], part)
		if j < 0 {
			return false
		}
		pos += j + len(part)
	}
	return !anchored || pos == len(s)
}

// ProductToken extracts the robots.txt product token from a User-Agent
// header ("kspider/1.0 (+http://...)" -> "kspider"), lower case.
func ProductToken(userAgent string) string {
	t := strings.TrimSpace(userAgent)
	if i := strings.IndexAny(t, "/ ;("); i >= 0 {
		t = t[:i]
	}
	return strings.ToLower(t)
}

// agentFor picks the robots.txt agent a User-Agent header speaks for: a
// product token some group of h's robots.txt names, if the header contains
// it ("Mozilla/5.0 (compatible; kspider/1.0)" is kspider), else the header's
// first product token.
func (h *Host) agentFor(userAgent string) string {
	lower := strings.ToLower(userAgent)
	for _, g := range h.rules.groups {
		for _, a := range g.agents {
			if a != "*" && a != "" && strings.Contains(lower, a) {
				return a
			}
		}
	}
	return ProductToken(userAgent)
}

// CrawlDelay is the Crawl-delay the host's robots.txt asks of agent (0 if none).
func (h *Host) CrawlDelay(agent string) time.Duration {
	if h.Robots == RobotsCrawlDelay {
		return time.Second
	}
	return 0
}

// robotsAllowed is the ground-truth decision for a host: what a crawler
// following RFC 9309 concludes from what the host serves.
func (h *Host) robotsAllowed(agent, target string) bool {
	switch h.Robots {
	case RobotsNone, RobotsForbidden, RobotsHTML:
		return true // 404 and 4xx: no restrictions; HTML: no valid rules
	case RobotsServerErr:
		return target == "/robots.txt" // 5xx: assume complete disallow
	}
	if target == "/robots.txt" || target == "/robots-moved.txt" {
		return true
	}
	return h.rules.allowed(agent, target)
}
