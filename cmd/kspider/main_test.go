package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// runCmd runs kspider in-process and returns its exit status and streams.
func runCmd(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb}, args)
	return code, out.String(), errb.String()
}

func TestHelpListsEveryCommand(t *testing.T) {
	code, out, _ := runCmd(t, "", "help")
	if code != 0 {
		t.Fatalf("kspider help: exit %d", code)
	}
	for _, c := range commands() {
		if !strings.Contains(out, "  "+c.name+" ") {
			t.Errorf("kspider help does not list %q:\n%s", c.name, out)
		}
	}
}

func TestEverySubcommandHasHelp(t *testing.T) {
	for _, c := range commands() {
		if c.run == nil {
			continue
		}
		for _, flag := range []string{"--help", "-h"} {
			code, out, errOut := runCmd(t, "", c.name, flag)
			if code != 0 || !strings.Contains(out, "usage: kspider "+c.name) {
				t.Errorf("kspider %s %s: exit %d, stdout %q, stderr %q", c.name, flag, code, out, errOut)
			}
		}
		code, out, _ := runCmd(t, "", "help", c.name)
		if code != 0 || !strings.Contains(out, "usage: kspider "+c.name) {
			t.Errorf("kspider help %s: exit %d, stdout %q", c.name, code, out)
		}
	}
	for _, c := range [][]string{{"help", "help", "commands:"}, {"help", "export", "warc", "usage: kspider export warc"}, {"help", "bench", "cluster", "usage: kspider bench cluster"}} {
		args, want := c[:len(c)-1], c[len(c)-1]
		if code, out, errOut := runCmd(t, "", args...); code != 0 || !strings.Contains(out, want) {
			t.Errorf("kspider %v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	for _, b := range benchmarks() {
		code, out, errOut := runCmd(t, "", "bench", b.name, "--help")
		if code != 0 || !strings.Contains(out, "usage: kspider bench "+b.name) {
			t.Errorf("kspider bench %s --help: exit %d, stdout %q, stderr %q", b.name, code, out, errOut)
		}
	}
}

func TestUnknownCommandIsUsageError(t *testing.T) {
	code, _, errOut := runCmd(t, "", "frobnicate")
	if code != 2 || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runCmd(t, "", "bench", "nothing")
	if code != 2 || !strings.Contains(errOut, `unknown benchmark "nothing"`) {
		t.Fatalf("bench nothing: exit %d, stderr %q", code, errOut)
	}
	code, _, _ = runCmd(t, "")
	if code != 2 {
		t.Fatalf("no arguments: exit %d, want 2", code)
	}
}

// A benchmark's errors name the benchmark once, and its --help hint points
// at the benchmark, not at `kspider bench`.
func TestBenchErrorsNameTheTarget(t *testing.T) {
	code, _, errOut := runCmd(t, "", "bench", "storage")
	want := "kspider bench storage: --html DIR is required (see 'kspider bench storage --help')\n"
	if code != 2 || errOut != want {
		t.Fatalf("bench storage: exit %d, stderr %q, want exit 2, %q", code, errOut, want)
	}
}
