package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kspider/kspider/spider/robots"
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
	// A '%' that starts no escape: net/url refuses the URL, a crawl
	// fetches it, so it is checked.
	code, out, errOut = runCmd(t, "", "robots", "check", "--robots", p, "http://e.com/nokspider%", "http://e.com/home%?q=%")
	if want := "disallowed http://e.com/nokspider%\nallowed http://e.com/home%?q=%\n"; code != 0 || out != want {
		t.Fatalf("stray '%%': exit %d, stdout %q, want %q, stderr %q", code, out, want, errOut)
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

// endlessRobots is a robots.txt that never ends (a pipe left open,
// /dev/zero); it fails the read once far past any parse limit.
type endlessRobots struct{ n int }

func (r *endlessRobots) Read(p []byte) (int, error) {
	if r.n > 64<<20 {
		return 0, errors.New("read 64 MiB of an endless robots.txt")
	}
	head := "User-agent: *\nDisallow: /a\n"
	n := 0
	for n < len(p) {
		if r.n < len(head) {
			p[n] = head[r.n]
		} else {
			p[n] = "# comment\n"[(r.n-len(head))%10]
		}
		n++
		r.n++
	}
	return n, nil
}

// TestRobotsCheckBoundedRead: the file was read whole before the parse
// limit was applied, so an endless input never finished and a long file's
// ignored tail was not mentioned; --limit 0 or below meant no limit at all.
func TestRobotsCheckBoundedRead(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), env{stdin: &endlessRobots{}, stdout: &out, stderr: &errb},
		[]string{"robots", "check", "--robots", "-", "http://e.com/a", "http://e.com/b"})
	if code != 0 || out.String() != "disallowed http://e.com/a\nallowed http://e.com/b\n" || !strings.Contains(errb.String(), "longer than 524288 bytes") {
		t.Errorf("endless stdin: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	// The rule past the limit is ignored, and the note says so.
	p := writeRobots(t, "User-agent: *\n"+strings.Repeat("# pad\n", 20)+"Disallow: /late\n")
	code, stdout, errOut := runCmd(t, "", "robots", "check", "--robots", p, "--limit", "100", "http://e.com/late")
	if code != 0 || stdout != "allowed http://e.com/late\n" || !strings.Contains(errOut, p+" is longer than 100 bytes") {
		t.Errorf("cut file: exit %d, stdout %q, stderr %q", code, stdout, errOut)
	}
	if code, stdout, errOut := runCmd(t, "", "robots", "check", "--robots", p, "http://e.com/late"); code != 0 || stdout != "disallowed http://e.com/late\n" || errOut != "" {
		t.Errorf("whole file: exit %d, stdout %q, stderr %q", code, stdout, errOut)
	}
	for _, args := range [][]string{
		{"robots", "check", "--robots", p, "--limit", "0", "http://e.com/"},
		{"robots", "check", "--robots", p, "--limit", "-1", "http://e.com/"},
		{"robots", "check", "--jsonl", "--limit", "0"},
		{"robots", "check", "--robots", p, "--agent", " ", "http://e.com/"},
	} {
		if code, _, errOut := runCmd(t, "", args...); code != 2 {
			t.Errorf("%q: exit %d (want 2), stderr %q", args, code, errOut)
		}
	}
}

// TestRobotsCheckOverBudget: a check the rules' wildcard patterns make too
// costly is answered disallowed, as the crawler answers, and says so: on
// standard error, and in --jsonl's answer.
func TestRobotsCheckOverBudget(t *testing.T) {
	var b strings.Builder
	b.WriteString("User-agent: *\n")
	for i := 0; b.Len() < robots.DefaultMaxSize-64; i++ {
		x := strings.NewReplacer("0", "a", "1", "b").Replace(fmt.Sprintf("%020b", i))
		fmt.Fprintf(&b, "Disallow: /*%s*%s\n", x, x)
	}
	p := writeRobots(t, b.String())
	long := "http://e.com/" + strings.Repeat("ab", 4000) + "0"
	code, out, errOut := runCmd(t, "", "robots", "check", "--robots", p, long, "http://e.com/ok")
	if want := "disallowed " + long + "\nallowed http://e.com/ok\n"; code != 0 || out != want || !strings.Contains(errOut, "too costly") {
		t.Errorf("exit %d, stdout %.80q, stderr %q", code, out, errOut)
	}
	req, _ := json.Marshal(map[string]string{"robots": b.String(), "agent": "KSpider", "url": long})
	code, out, errOut = runCmd(t, string(req)+"\n", "robots", "check", "--jsonl")
	if want := `{"allowed":false,"over_budget":true}` + "\n"; code != 0 || out != want {
		t.Errorf("--jsonl: exit %d, stdout %q, want %q, stderr %q", code, out, want, errOut)
	}
}
