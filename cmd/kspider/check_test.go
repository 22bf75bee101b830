package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kspider/kspider/tools/stats/storetest"
)

func TestCheckFindsAndRepairsDamage(t *testing.T) {
	dirs, args := buildTestStore(t, 1, "none")
	code, out, errOut := runCmd(t, "", append([]string{"check"}, args...)...)
	if code != 0 || !strings.Contains(out, "pages: "+dirs[0]+": ok: 12 pages") {
		t.Fatalf("clean store: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	storetest.Corrupt(t, dirs, "http://www.mit.edu/report.pdf")
	code, out, errOut = runCmd(t, "", append([]string{"check"}, args...)...)
	if code != 1 || !strings.Contains(out, "pages: damage: storage: "+filepath.Join(dirs[0], "00000001.seg")+" at offset") ||
		!strings.Contains(errOut, "1 problems found") {
		t.Fatalf("damaged store: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = runCmd(t, "", append([]string{"check", "--repair"}, args...)...)
	if code != 1 || !strings.Contains(out, "rewritten with its 11 intact records") || !strings.Contains(out, "repaired: 11 intact pages") {
		t.Fatalf("repair: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dirs[0], "damaged", "00000001.seg")); err != nil {
		t.Fatalf("the damaged segment was not kept: %v", err)
	}
	code, out, errOut = runCmd(t, "", append([]string{"check"}, args...)...)
	if code != 0 || !strings.Contains(out, "ok: 11 pages") {
		t.Fatalf("after the repair: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = runCmd(t, "", append([]string{"stats"}, args...)...)
	if code != 0 {
		t.Fatalf("stats after the repair: exit %d, %q", code, errOut)
	}
}

func TestCheckUsage(t *testing.T) {
	empty := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"check"}, 2, "--data DIR is required"},
		{[]string{"check", "--data", empty, "x"}, 2, "unexpected argument"},
		{[]string{"check", "--data", filepath.Join(empty, "missing")}, 1, "missing"},
		{[]string{"check", "--data", empty}, 1, "holds no kspider data"},
	} {
		code, _, errOut := runCmd(t, "", c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
}
