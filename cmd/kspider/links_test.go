package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const linksPage = `<html><head><base href="/docs/"><meta name="robots" content="noindex"></head>
<body><a href="a.html#top">a</a> <a href="mailto:x@example.com">m</a>
<img src="i.png" srcset="i2.png 2x"><a href="/b?x=1" rel="NoFollow">b</a></body>`

func TestLinksPlain(t *testing.T) {
	code, out, errOut := runCmd(t, linksPage, "links", "--base", "http://Example.com/start/page", "--header", "Location: /moved")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := "http://example.com/moved\nhttp://example.com/docs/\nhttp://example.com/docs/a.html\nhttp://example.com/docs/i.png\nhttp://example.com/docs/i2.png\nhttp://example.com/b?x=1\n"
	if out != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, want)
	}
	if !strings.Contains(errOut, "1 links left out: scheme=1") || !strings.Contains(errOut, "noindex=true") {
		t.Errorf("stderr %q lacks the dropped count or the robots directive", errOut)
	}
}

func TestLinksJSONLAndFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "page.html")
	if err := os.WriteFile(path, []byte(linksPage), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "", "links", "--jsonl", "--base", "http://example.com/", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines:\n%s", len(lines), out)
	}
	var last jsonLink
	if err := json.Unmarshal([]byte(lines[4]), &last); err != nil {
		t.Fatal(err)
	}
	if last != (jsonLink{URL: "http://example.com/b?x=1", Element: "a", Attr: "href", Rel: "nofollow", NoFollow: true}) {
		t.Errorf("last link %+v", last)
	}
	var img jsonLink
	json.Unmarshal([]byte(lines[3]), &img)
	if img.Element != "img" || img.Attr != "srcset" {
		t.Errorf("srcset link %+v", img)
	}
}

func TestLinksCapAndErrors(t *testing.T) {
	// The cap counts distinct URLs: the repeated /x counts once.
	page := strings.Repeat(`<a href="/x#a">`, 5) + `<a href="/y"><a href="/z"><a href="/w"><a href="/v">`
	code, out, errOut := runCmd(t, page, "links", "--base", "http://example.com/", "--max-links", "2", "-")
	if code != 0 || out != strings.Repeat("http://example.com/x\n", 5)+"http://example.com/y\n" || !strings.Contains(errOut, "3 more") {
		t.Errorf("cap: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, _ := runCmd(t, page, "links"); code != 2 {
		t.Errorf("no --base: exit %d, want 2", code)
	}
	if code, _, _ := runCmd(t, page, "links", "--base", "relative/only"); code != 2 {
		t.Errorf("relative --base: exit %d, want 2", code)
	}
	if code, _, _ := runCmd(t, "", "links", "--base", "http://example.com/", filepath.Join(t.TempDir(), "missing.html")); code != 1 {
		t.Errorf("missing file: exit %d, want 1", code)
	}
	if code, _, _ := runCmd(t, "", "links", "--base", "http://example.com/", "--header", "no colon"); code != 2 {
		t.Errorf("bad --header: exit %d, want 2", code)
	}
}

// unreadable fails the test that reads it.
type unreadable struct{ t *testing.T }

func (u unreadable) Read([]byte) (int, error) {
	u.t.Error("stdin was read")
	return 0, errors.New("stdin was read")
}

// TestLinksBadBaseFirst: a bad --base was found only after the whole page
// had been read, and its message took two lines (the errors.Join of
// spider/links). Now it is one usage line, before stdin is touched.
func TestLinksBadBaseFirst(t *testing.T) {
	for _, base := range []string{"relative/only", "http://[::1/", "http://h:99999/"} {
		var out, errb bytes.Buffer
		code := run(context.Background(), env{stdin: unreadable{t}, stdout: &out, stderr: &errb}, []string{"links", "--base", base})
		if code != 2 || out.Len() != 0 || strings.Count(errb.String(), "\n") != 1 || !strings.HasPrefix(errb.String(), "kspider links: --base: ") {
			t.Errorf("--base %q: exit %d, stdout %q, stderr %q", base, code, out.String(), errb.String())
		}
	}
}
