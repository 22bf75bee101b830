package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestNormalizeArgs(t *testing.T) {
	code, out, errOut := runCmd(t, "", "normalize", "--base", "http://example.com/a/b",
		"../c#frag", "HTTP://User@EXAMPLE.com:80/%7e%2f", "mailto:x@y", "http://[::1", "?b=1&a=2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := `http://example.com/c
http://example.com/~%2F
error: scheme "mailto" is not http or https
error: invalid IPv6 address
http://example.com/a/b?b=1&a=2
`
	if out != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, want)
	}
	_, out, _ = runCmd(t, "", "normalize", "--sort-query", "--strip-session-ids", "--base", "http://example.com/", "/x;jsessionid=1?b=1&PHPSESSID=2&a=2")
	if out != "http://example.com/x?a=2&b=1\n" {
		t.Errorf("options: %q", out)
	}
}

func TestNormalizeWHATWG(t *testing.T) {
	code, out, _ := runCmd(t, "", "normalize", "--whatwg", "--base", "http://example.com/a/b", "../c#frag", "mailto:x@y", "HTTP://u:p@ÉX.com:80/./x")
	want := "http://example.com/c#frag\nmailto:x@y\nhttp://u:p@xn--x-9fa.com/x\n"
	if code != 0 || out != want {
		t.Errorf("exit %d, stdout:\n%s\nwant:\n%s", code, out, want)
	}
}

func TestNormalizeJSONL(t *testing.T) {
	in := `{"base":"http://example.com/a/","input":"b c"}
{"input":"https://EXAMPLE.com:443"}
{"input":"relative"}
this is not json
{"base":"http://example.com/","input":"javascript:alert(1)"}
{"base":"not a base","input":"x"}

{"base":null,"input":"http://x.example/#f"}`
	code, out, errOut := runCmd(t, in, "normalize", "--jsonl")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 8 {
		t.Fatalf("%d output lines for 8 input lines:\n%s", len(lines), out)
	}
	type result struct {
		URL   string `json:"url"`
		Error string `json:"error"`
	}
	want := []result{
		{URL: "http://example.com/a/b%20c"},
		{URL: "https://example.com/"},
		{Error: "relative URL without a base"},
		{Error: "line 4: not a JSON object"},
		{Error: `scheme "javascript" is not http or https`},
		{Error: "base: relative URL without a base"},
		{Error: "line 7: not a JSON object"},
		{URL: "http://x.example/"},
	}
	for i, l := range lines {
		var got result
		if err := json.Unmarshal([]byte(l), &got); err != nil {
			t.Fatalf("line %d %q: %v", i+1, l, err)
		}
		if got.URL != want[i].URL || !strings.HasPrefix(got.Error, want[i].Error) {
			t.Errorf("line %d: got %+v, want %+v", i+1, got, want[i])
		}
	}
	if code, _, _ := runCmd(t, "", "normalize", "--jsonl", "x"); code != 2 {
		t.Errorf("--jsonl with REF: exit %d, want 2", code)
	}
	if code, _, _ := runCmd(t, "", "normalize"); code != 2 {
		t.Errorf("no REF: exit %d, want 2", code)
	}
	if code, _, _ := runCmd(t, "", "normalize", "--base", "::", "x"); code != 2 {
		t.Errorf("bad --base: exit %d, want 2", code)
	}
}
