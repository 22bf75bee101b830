package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testRobots = "User-agent: *\nDisallow: /private\nAllow: /private/ok\n\nUser-agent: KSpider\nDisallow: /nokspider\n"

func writeRobots(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "robots.txt")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRobotsCheck(t *testing.T) {
	p := writeRobots(t, testRobots)
	code, out, errOut := runCmd(t, "", "robots", "check", "--robots", p, "--agent", "Other/1.0",
		"http://e.com/private/x", "http://e.com/private/ok", "http://e.com/nokspider", "http://e.com/robots.txt")
	want := "disallowed http://e.com/private/x\nallowed http://e.com/private/ok\nallowed http://e.com/nokspider\nallowed http://e.com/robots.txt\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", code, out, want, errOut)
	}
	code, out, _ = runCmd(t, testRobots, "robots", "check", "--robots", "-", "--agent", "KSpider/1.0 (+http://x)",
		"http://e.com/private/x", "http://e.com/nokspider")
	if want := "allowed http://e.com/private/x\ndisallowed http://e.com/nokspider\n"; code != 0 || out != want {
		t.Fatalf("stdin robots: exit %d, stdout %q, want %q", code, out, want)
	}
	code, out, _ = runCmd(t, "", "robots", "check", "--robots", p, "http://e.com/x", "http://[::1/")
	if code != 1 || !strings.HasPrefix(out, "allowed http://e.com/x\nerror http://[::1/: ") {
		t.Fatalf("bad URL: exit %d, stdout %q", code, out)
	}
	// Inputs that are not http(s) URLs are errors naming them, not
	// "disallowed".
	for _, u := range []string{"e.com/private/x", "/private/x", "ftp://e.com/private/x", "mailto:a@e.com", "http:///private/x", "", "private"} {
		code, out, errOut := runCmd(t, "", "robots", "check", "--robots", p, u, "http://e.com/private/x")
		if code != 1 || !strings.HasPrefix(out, "error "+u+": ") || !strings.HasSuffix(out, "\nallowed http://e.com/private/x\n") || !strings.Contains(errOut, "not http(s)") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", u, code, out, errOut)
		}
	}
}

func TestRobotsUsage(t *testing.T) {
	p := writeRobots(t, testRobots)
	for _, args := range [][]string{
		{"robots"},
		{"robots", "frob"},
		{"robots", "check", "--robots", p},
		{"robots", "check", "http://e.com/"},
		{"robots", "check", "--jsonl", "http://e.com/"},
		{"robots", "check", "--bogus"},
	} {
		if code, _, errOut := runCmd(t, "", args...); code != 2 || errOut == "" {
			t.Errorf("%q: exit %d (want 2), stderr %q", args, code, errOut)
		}
	}
	if code, _, _ := runCmd(t, "", "robots", "check", "--robots", filepath.Join(t.TempDir(), "none"), "http://e.com/"); code != 1 {
		t.Errorf("missing file: exit %d, want 1", code)
	}
	for _, args := range [][]string{{"robots", "--help"}, {"robots", "-h"}, {"robots", "check", "--help"}, {"help", "robots"}} {
		code, out, _ := runCmd(t, "", args...)
		if code != 0 || !strings.Contains(out, "usage: kspider robots") {
			t.Errorf("%q: exit %d, stdout %q", args, code, out)
		}
	}
	if _, out, _ := runCmd(t, "", "robots", "check", "--help"); !strings.Contains(out, "--jsonl") && !strings.Contains(out, "-jsonl") {
		t.Errorf("robots check --help does not describe --jsonl:\n%s", out)
	}
}

func TestRobotsJSONL(t *testing.T) {
	req := func(robots, agent, url string) string {
		b, _ := json.Marshal(map[string]string{"robots": robots, "agent": agent, "url": url})
		return string(b)
	}
	in := strings.Join([]string{
		req(testRobots, "other", "http://e.com/private/x"),
		req(testRobots, "other", "http://e.com/private/ok"),
		req(testRobots, "other", "e.com/private/x"),
		"{not json",
		req(testRobots, "KSpider", "http://e.com/nokspider"),
		`{"robots": "", "agent": "x"}`,
		"",
		req("user-agent: *\r\ndisallow: /\r\n", "x", "https://e.com/a"),
		`{"robots": "user-agent: *\ndisallow: /", "agent": "x", "url": "http://[::1/"}`,
		req("", "x", "https://e.com/a") + "\r",
	}, "\n")
	code, out, errOut := runCmd(t, in, "robots", "check", "--jsonl")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	want := []string{`{"allowed":false}`, `{"allowed":true}`, `error`, `error`, `{"allowed":false}`, `error`, `error`,
		`{"allowed":false}`, `error`, `{"allowed":true}`}
	if len(lines) != len(want) {
		t.Fatalf("%d answers for %d requests:\n%s", len(lines), len(want), out)
	}
	for i, w := range want {
		if w == "error" {
			var e struct{ Error string }
			if json.Unmarshal([]byte(lines[i]), &e) != nil || e.Error == "" {
				t.Errorf("answer %d = %s, want an error object", i+1, lines[i])
			}
		} else if lines[i] != w {
			t.Errorf("answer %d = %s, want %s", i+1, lines[i], w)
		}
	}
}

// TestRobotsJSONLLongLines checks that a request over the line limit gets an
// error answer and the requests around it still get theirs, whatever the
// buffer boundaries.
func TestRobotsJSONLLongLines(t *testing.T) {
	ok := `{"robots": "user-agent: *\ndisallow: /x", "agent": "a", "url": "http://h/x"}`
	long := `{"robots": "` + strings.Repeat("#", 200_000) + `", "agent": "a", "url": "http://h/"}`
	in := ok + "\n" + long + "\r\n" + ok + "\n" + long
	var out bytes.Buffer
	e := env{stdin: strings.NewReader(in), stdout: &out, stderr: io.Discard}
	if err := robotsJSONL(context.Background(), e, 1<<20, 100_000); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 4 || lines[0] != `{"allowed":false}` || lines[2] != `{"allowed":false}` ||
		!strings.Contains(lines[1], "longer than") || !strings.Contains(lines[3], "longer than") {
		t.Fatalf("answers:\n%s", out.String())
	}
	// Under the limit, the same long request is answered.
	out.Reset()
	e.stdin = strings.NewReader(long)
	if err := robotsJSONL(context.Background(), e, 1<<20, 1<<20); err != nil || out.String() != `{"allowed":true}`+"\n" {
		t.Fatalf("long request under the limit: %v %q", err, out.String())
	}
}
