package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kspider/kspider/tools/testweb"
)

// TestFetchCommand fetches pages of a test web (http and https, through its
// DNS server and CA), a redirect and an unknown host, in text and JSON.
func TestFetchCommand(t *testing.T) {
	srv, err := testweb.Start(context.Background(), testweb.Generate(testweb.Config{Hosts: 80, Seed: 21, MaxPages: 20}),
		testweb.ServeConfig{HTTPAddr: "127.0.0.1:0", DNSAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(ca, srv.CACertPEM(), 0o644)
	var plain, secure, redirect *testweb.Host
	for _, h := range srv.Web().Hosts() {
		if (h.DNS != testweb.DNSNormal && h.DNS != testweb.DNSCNAME) || h.Wildcard {
			continue
		}
		switch {
		case h.Behaviour == testweb.BehaviourNormal && h.Scheme == "http" && plain == nil:
			plain = h
		case h.Behaviour == testweb.BehaviourNormal && h.Scheme == "https" && secure == nil:
			secure = h
		case h.Behaviour == testweb.BehaviourRedirects && redirect == nil:
			redirect = h
		}
	}
	if plain == nil || secure == nil || redirect == nil {
		t.Fatal("the web lacks a plain, an https or a redirecting host")
	}
	orig := func(h *testweb.Host) string {
		p := srv.Ports().HTTP
		if h.Scheme == "https" {
			p = srv.Ports().HTTPS
		}
		return h.Scheme + "://" + h.Name + ":" + strconv.Itoa(p)
	}
	urls := []string{orig(plain) + "/", orig(secure) + "/", orig(plain) + "/robots.txt", orig(redirect) + "/go/2/0"}
	bodies := t.TempDir()
	args := append([]string{"fetch", "--server", srv.DNSAddr(), "--ca", ca, "--pipeline", "4", "--body", bodies, "--json"}, urls...)
	code, out, errOut := runCmd(t, "", args...)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(urls) {
		t.Fatalf("%d lines for %d URLs:\n%s", len(lines), len(urls), out)
	}
	for i, line := range lines {
		var l fetchLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		d, _ := srv.Truth().Lookup(urls[i])
		if l.URL != urls[i] || l.Status != d.Status || l.Kind != "" || l.Location != d.Location {
			t.Errorf("line %d: %+v, truth %+v", i, l, d)
		}
		if d.Status == 200 {
			want, _ := srv.Truth().Body(urls[i])
			got, _ := os.ReadFile(l.BodyFile)
			if string(got) != string(want) {
				t.Errorf("%s: body file %s has %d bytes, want %d", urls[i], l.BodyFile, len(got), len(want))
			}
		}
	}

	code, out, errOut = runCmd(t, "", "fetch", "--server", srv.DNSAddr(), orig(plain)+"/", "http://no-such-host.th:"+strconv.Itoa(srv.Ports().HTTP)+"/")
	if code != 1 || !strings.Contains(out, "\t200\t-\t") || !strings.Contains(out, "\t0\tdns\t") || !strings.Contains(errOut, "1 of 2 URLs failed") {
		t.Errorf("exit %d:\n%s%s", code, out, errOut)
	}
	if code, _, _ := runCmd(t, "", "fetch", "ftp://x/"); code != 2 {
		t.Errorf("ftp URL: exit %d, want 2", code)
	}
}

// TestFetchOneConnectionPerOrigin: URLs were grouped by their host as
// written, so "http://H:0P/" and "http://h:P/" went to the collector as two
// lists, two connections at once to one host; a port out of range made a
// result line and a robots.txt line without a URL.
func TestFetchOneConnectionPerOrigin(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "requests.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	srv, err := testweb.Start(context.Background(), testweb.Generate(testweb.Config{Hosts: 20, Seed: 3, MaxPages: 20, Plain: true}),
		testweb.ServeConfig{HTTPAddr: "127.0.0.1:0", DNSAddr: "127.0.0.1:0", Log: logFile})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var host *testweb.Host
	for _, h := range srv.Web().Hosts() {
		if h.Scheme == "http" && h.DNS == testweb.DNSNormal && !h.Wildcard {
			host = h
			break
		}
	}
	if host == nil {
		t.Fatal("no plain http host")
	}
	port := strconv.Itoa(srv.Ports().HTTP)
	urls := []string{"http://" + host.Name + ":" + port + "/", "HTTP://" + strings.ToUpper(host.Name) + ":0" + port + "/",
		"http://" + host.Name + ":" + port + "/robots.txt"}
	code, out, errOut := runCmd(t, "", append([]string{"fetch", "--server", srv.DNSAddr(), "--robots"}, urls...)...)
	if code != 0 || strings.Count(out, "\n") != 4 {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), `"ev":"conn"`); n != 1 {
		t.Errorf("%d connections for one origin, want 1:\n%s", n, log)
	}
	// --timeout gives the whole response twice as long: over half the
	// longest duration that wrapped to a negative response timeout.
	if code, _, errOut := runCmd(t, "", "fetch", "--timeout", "1500000h", "--server", "127.0.0.1:1", "http://127.0.0.1:1/"); code != 2 || !strings.Contains(errOut, "--timeout") {
		t.Errorf("--timeout 1500000h: exit %d, stderr %q", code, errOut)
	}
	for _, u := range []string{"http://h.th:99999/", "http://h.th:0/", "http://:80/"} {
		code, out, errOut := runCmd(t, "", "fetch", "--robots", "--server", "127.0.0.1:1", u)
		if code != 2 || out != "" || !strings.Contains(errOut, u) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", u, code, out, errOut)
		}
	}
}

// A Unicode host name is fetched by its A-labels, as a crawl would, and
// the rest of the URL as given.
func TestFetchASCIIHost(t *testing.T) {
	for raw, want := range map[string]string{
		"http://ข่าว.com/a?b":         "http://xn--22c8e6a1f.com/a?b",
		"https://ข่าว.com:8443/x":     "https://xn--22c8e6a1f.com:8443/x",
		"http://www.example.com/ข่าว": "http://www.example.com/ข่าว", // an ASCII host: as given
		// The path as given: a '%' that starts no escape (net/url refuses
		// it; a crawl fetches it), and an escape beside '|' (net/url
		// would write "/a/b%7Cc").
		"http://example.com/home%":      "http://example.com/home%",
		"http://u@ข่าว.com:81/a%2Fb|c%": "http://u@xn--22c8e6a1f.com:81/a%2Fb|c%",
	} {
		if got, _, err := fetchTarget(raw); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", raw, got, err, want)
		}
	}
	if _, _, err := fetchTarget("http://a\u00a0b.com/"); err == nil {
		t.Error("a host with a no-break space: no error")
	}
	if code, _, errOut := runCmd(t, "", "fetch", "http://a\u00a0b.com/"); code != 2 || !strings.Contains(errOut, "not a host name") {
		t.Errorf("fetch of a bad Unicode host: exit %d: %s", code, errOut)
	}
}
