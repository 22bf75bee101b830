package testweb

import (
	"strconv"
	"strings"
)

// Trap URLs exist only on hosts with the matching Behaviour; the host's
// regular pages link into them.

var redirectCodes = []int{301, 302, 307, 308}
var trapStatusCodes = []int{404, 410, 500, 503, 429}

// trapEntry is the trap URL page i of h links to, if any.
func trapEntry(h *Host, i int) (string, bool) {
	if i%3 != 0 {
		return "", false
	}
	k := strconv.Itoa(i)
	switch h.Behaviour {
	case BehaviourRedirects:
		return "/go/" + strconv.Itoa(1+i%6) + "/" + k, true
	case BehaviourRedirectLoop:
		return "/loop/a/" + k, true
	case BehaviourStatus:
		return "/status/" + strconv.Itoa(trapStatusCodes[(i/3)%len(trapStatusCodes)]) + "/" + k, true
	case BehaviourStall:
		return "/stall/" + k, true
	case BehaviourEndless:
		return "/stream/" + k, true
	case BehaviourGzipBomb:
		return "/bomb/" + k, true
	case BehaviourCalendar:
		return "/calendar/2026/01/", true
	case BehaviourSymlink:
		return "/a/loop/", true
	}
	return "", false
}

func trapRoute(h *Host, p string) (route, bool) {
	seg := strings.Split(strings.TrimPrefix(p, "/"), "/")
	pageArg := func(s string) (int, bool) {
		n, ok := atoiPart(s)
		return n, ok && n < h.Pages
	}
	switch h.Behaviour {
	case BehaviourRedirects:
		if len(seg) == 3 && seg[0] == "go" {
			n, ok1 := atoiPart(seg[1])
			k, ok2 := pageArg(seg[2])
			if !ok1 || !ok2 || n > 6 {
				break
			}
			if n == 0 {
				return route{kind: routeRedirect, status: 302, location: pagePath(h, k)}, true
			}
			return route{kind: routeRedirect, status: redirectCodes[n%4], location: "/go/" + strconv.Itoa(n-1) + "/" + seg[2]}, true
		}
	case BehaviourRedirectLoop:
		if len(seg) == 3 && seg[0] == "loop" {
			if _, ok := pageArg(seg[2]); !ok {
				break
			}
			switch seg[1] {
			case "a":
				return route{kind: routeRedirect, status: 302, location: "/loop/b/" + seg[2]}, true
			case "b":
				return route{kind: routeRedirect, status: 301, location: "/loop/a/" + seg[2]}, true
			}
		}
	case BehaviourStatus:
		if len(seg) == 3 && seg[0] == "status" {
			c, ok1 := atoiPart(seg[1])
			_, ok2 := pageArg(seg[2])
			if !ok1 || !ok2 {
				break
			}
			for _, code := range trapStatusCodes {
				if code == c {
					r := route{kind: routeStatus, status: c}
					switch c {
					case 503:
						r.retryAfter = "120"
					case 429:
						r.retryAfter = "30"
					}
					return r, true
				}
			}
		}
	case BehaviourStall, BehaviourEndless, BehaviourGzipBomb:
		if len(seg) == 2 {
			k, ok := pageArg(seg[1])
			if !ok {
				break
			}
			switch {
			case seg[0] == "stall" && h.Behaviour == BehaviourStall:
				return route{kind: routeStall, n: k}, true
			case seg[0] == "stream" && h.Behaviour == BehaviourEndless:
				return route{kind: routeEndless, n: k}, true
			case seg[0] == "bomb" && h.Behaviour == BehaviourGzipBomb:
				return route{kind: routeBomb, n: k}, true
			}
		}
	case BehaviourCalendar:
		if len(seg) == 4 && seg[0] == "calendar" && seg[3] == "" && len(seg[1]) == 4 && len(seg[2]) == 2 {
			y, ok1 := atoiPart(strings.TrimLeft(seg[1], "0"))
			m, ok2 := atoiPart(strings.TrimPrefix(seg[2], "0"))
			if ok1 && ok2 && y >= 1 && y <= 9999 && m >= 1 && m <= 12 {
				return route{kind: routeCalendar, year: y, month: m}, true
			}
		}
	case BehaviourSymlink:
		if len(seg) >= 2 && seg[0] == "a" && seg[len(seg)-1] == "" {
			d := len(seg) - 2
			for _, s := range seg[1 : len(seg)-1] {
				if s != "loop" {
					return route{}, false
				}
			}
			if d > maxTrapDepth {
				return route{kind: routeStatus, status: 414}, true
			}
			return route{kind: routeSymlink, depth: d}, true
		}
	}
	return route{}, false
}

func calendarPath(y, m int) string {
	for m < 1 {
		m += 12
		y--
	}
	for m > 12 {
		m -= 12
		y++
	}
	if y < 1 {
		y = 1
	}
	if y > 9999 {
		y = 9999
	}
	ys := strconv.Itoa(y)
	for len(ys) < 4 {
		ys = "0" + ys
	}
	ms := strconv.Itoa(m)
	if m < 10 {
		ms = "0" + ms
	}
	return "/calendar/" + ys + "/" + ms + "/"
}

func symlinkPath(d int) string {
	return "/a/" + strings.Repeat("loop/", d)
}
