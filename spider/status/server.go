// Package status serves a node's status over HTTP: a self-contained HTML
// dashboard at /, the JSON snapshot (spider.Status, versioned field names)
// at /status, Prometheus metrics at /metrics, and control requests under
// /control/ (pause, resume, drain, set).
//
// Every page reads one spider.Status per request (Node.Status), so the
// dashboard, the JSON, the metrics and the progress line never disagree.
//
// # Control
//
// Control requests are POSTs carrying the node's token, read from the data
// directory (TokenFile, mode 0600) by whoever may drive the node:
//
//	Authorization: Bearer <token>
//
// A request without the token, with another one, with an Origin header
// naming another origin than the request's Host, or that a browser marks
// cross-site (Sec-Fetch-Site), is refused (403): a page of another site
// open in the operator's browser cannot drive the node. Answers are JSON
// ({"ok":true,"state":"paused"} or {"error":"..."}). With control off
// (Server.ControlOff: the token file refused) every control request gets
// 503 and the reason.
//
// # DNS rebinding
//
// A server listening on loopback (Server.Loopback) answers only requests
// whose Host is an IP address or "localhost": a page of another site whose
// name was made to resolve to 127.0.0.1 names that site in its Host and is
// refused (421), so it cannot read the figures either.
package status

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/kspider/kspider/spider"
)

// Source gives the snapshot every page shows.
type Source interface {
	Status() *spider.Status
}

// Controller steers a node; spider.Node implements it.
type Controller interface {
	Pause()
	Resume()
	Drain()
	Set(settings ...spider.Setting) error // all or none
}

// Server is the status server's handler. Node is required; Control may be
// nil (no /control/), Token must be set when Control is.
type Server struct {
	Node    Source
	Control Controller
	Token   string
	// ControlOff, with Control nil, is why control is off (the token file
	// refused): control requests are answered with it (503), so that
	// kspider ctl says why instead of a bare refusal.
	ControlOff string
	// Refresh is the dashboard's self-refresh interval in seconds (5 when 0).
	Refresh int
	// Loopback: the server listens on loopback only, so every request
	// names an IP address or localhost in its Host (see DNS rebinding).
	Loopback bool

	mux     http.Handler
	metrics http.Handler
}

// Handler returns the server's routes.
func (s *Server) Handler() http.Handler {
	if s.mux != nil {
		return s.mux
	}
	s.metrics = newMetrics(s.Node)
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", s.page)
	m.HandleFunc("GET /status", s.json)
	m.Handle("GET /metrics", s.metrics)
	m.HandleFunc("POST /control/{action}", s.control)
	s.mux = m
	if s.Loopback {
		s.mux = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !localHost(r.Host) {
				ReplyError(w, http.StatusMisdirectedRequest, fmt.Sprintf("host %q refused: this status page answers to IP addresses and localhost only", r.Host))
				return
			}
			m.ServeHTTP(w, r)
		})
	}
	return s.mux
}

// localHost reports whether a Host header names an IP address or localhost.
func localHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.EqualFold(host, "localhost") || net.ParseIP(host) != nil
}

func (s *Server) json(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	enc.Encode(s.Node.Status())
}

func (s *Server) control(w http.ResponseWriter, r *http.Request) {
	if s.Control == nil {
		if s.ControlOff != "" {
			ReplyError(w, http.StatusServiceUnavailable, "control off: "+s.ControlOff)
			return
		}
		ReplyError(w, http.StatusNotFound, "this node takes no control requests")
		return
	}
	if why := s.refuse(r); why != "" {
		ReplyError(w, http.StatusForbidden, why)
		return
	}
	switch a := r.PathValue("action"); a {
	case "pause":
		s.Control.Pause()
	case "resume":
		s.Control.Resume()
	case "drain":
		s.Control.Drain()
	case "set":
		r.Body = http.MaxBytesReader(w, r.Body, 4096)
		if err := r.ParseForm(); err != nil {
			ReplyError(w, http.StatusBadRequest, "set: "+err.Error())
			return
		}
		if len(r.PostForm) == 0 {
			ReplyError(w, http.StatusBadRequest, "set: no KEY=VALUE given")
			return
		}
		keys := slices.Sorted(maps.Keys(r.PostForm)) // the same error for the same request
		var set []spider.Setting
		for _, k := range keys {
			for _, v := range r.PostForm[k] {
				set = append(set, spider.Setting{Key: k, Value: v})
			}
		}
		if err := s.Control.Set(set...); err != nil {
			ReplyError(w, http.StatusBadRequest, "set (nothing changed): "+err.Error())
			return
		}
	default:
		ReplyError(w, http.StatusNotFound, fmt.Sprintf("no control action %q (pause, resume, drain, set)", a))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"ok": true, "state": s.Node.Status().State})
}

// refuse says why a control request is refused, or "".
func (s *Server) refuse(r *http.Request) string {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return "cross-site request refused"
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || o == "null" || !strings.EqualFold(u.Host, r.Host) {
			return fmt.Sprintf("request from origin %q refused", o)
		}
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || s.Token == "" || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(s.Token)) != 1 {
		return "missing or wrong token (Authorization: Bearer <token from the data directory>)"
	}
	return ""
}

// ReplyError answers code with msg as the status page's errors are: JSON,
// {"error":"..."}, which kspider ctl and scripts parse.
func ReplyError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// IsLoopback reports whether addr (host:port) listens on loopback only.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
