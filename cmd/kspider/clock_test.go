package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kspider/kspider/scheduler/ntptest"
)

func TestClockCommand(t *testing.T) {
	a := ntptest.NewServer(t, 1*time.Second)
	b := ntptest.NewServer(t, 2*time.Second)
	c := ntptest.NewServer(t, 3*time.Second)
	code, out, errOut := runCmd(t, "", "clock", "--ntp", a.Addr, "--ntp", b.Addr+","+c.Addr, "--max-offset", "5s",
		"--phases", "5", "--nodes", "3", "--node", "2", "--phase-length", "1h", "--epoch", "2026-01-01T00:00:00Z")
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	for _, re := range []string{
		`(?m)^offset   \+\S+ \(median of 3 good of 3\)$`,
		`(?m)^slot     \d+ `,
		`(?m)^phase    [0-4] of 5 \(node 2 of 3\)$`,
		`(?m)^swap in  `,
		`(?m)^clock    safe`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("output does not match %s:\n%s", re, out)
		}
	}
	// The median is the +2 s server, up to loopback noise.
	m := regexp.MustCompile(`(?m)^offset   \+(\S+) `).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no offset:\n%s", out)
	}
	if d, err := time.ParseDuration(m[1]); err != nil || d < 1500*time.Millisecond || d > 2500*time.Millisecond {
		t.Errorf("median offset %s, want about 2s", m[1])
	}
	// The slot and phase agree with the formula on the corrected clock
	// (unless the slot changed in between, which the hour makes unlikely).
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	slot := int64(time.Since(epoch.Add(-2*time.Second)) / time.Hour)
	if !strings.Contains(out, fmt.Sprintf("slot     %d ", slot)) || !strings.Contains(out, fmt.Sprintf("phase    %d of 5", (2+slot)%5)) {
		t.Errorf("slot %d, phase (2+t) mod 5 not in:\n%s", slot, out)
	}
}

func TestClockUnsafeAndFailures(t *testing.T) {
	skewed := ntptest.NewServer(t, 2*time.Second)
	code, out, _ := runCmd(t, "", "clock", "--ntp", skewed.Addr)
	if code != 0 || !strings.Contains(out, "clock    UNSAFE: offset") || !strings.Contains(out, "may start fetches: no") {
		t.Errorf("2 s skew: exit %d\n%s", code, out)
	}
	dead := ntptest.NewServer(t, 0)
	dead.SetSilent(true)
	code, out, errOut := runCmd(t, "", "clock", "--timeout", "200ms", "--ntp", dead.Addr)
	if code != 1 || !strings.Contains(out, "rejected") || !strings.Contains(errOut, "no NTP server gave a usable answer") {
		t.Errorf("silent server: exit %d\n%s%s", code, out, errOut)
	}
	for _, args := range [][]string{
		{"clock"},
		{"clock", "--ntp", "x", "--phases", "2", "--nodes", "3"},
		{"clock", "--ntp", "x", "--node", "1"},
		{"clock", "--ntp", "x", "--phase-length", "0s"},
		{"clock", "--ntp", "x", "--phase-length", "400ms"},               // the default guard, 200ms, at each end
		{"clock", "--ntp", "x", "--phase-length", "2s", "--guard", "1s"}, // no time left to start fetches
		{"clock", "--ntp", "x", "--epoch", "yesterday"},
	} {
		if code, _, _ := runCmd(t, "", args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestClockChrony(t *testing.T) {
	addr := ntptest.StartChrony(t)
	code, out, errOut := runCmd(t, "", "clock", "--ntp", addr, "--phases", "2", "--node", "1", "--max-offset", "1s")
	if code != 0 || !strings.Contains(out, "stratum 8") || !strings.Contains(out, "clock    safe") {
		t.Errorf("chrony: exit %d\n%s%s", code, out, errOut)
	}
}

// TestClockEpochRange: an epoch more than Go's 292-year durations from now
// saturated now - epoch and printed a slot in 1992 for an epoch in 1700 (and
// a swap "in -303470h"); it is refused as kspider run refuses it. The
// server is a dead loopback port, so a regression asks nothing of anyone.
func TestClockEpochRange(t *testing.T) {
	for _, epoch := range []string{"1700-01-01T00:00:00Z", "2500-01-01T00:00:00Z", "9999-12-31T00:00:00Z"} {
		code, out, errOut := runCmd(t, "", "clock", "--ntp", "127.0.0.1:1", "--timeout", "100ms", "--epoch", epoch)
		if code != 2 || out != "" || !strings.Contains(errOut, "more than 100 years") {
			t.Errorf("--epoch %s: exit %d, stdout %q, stderr %q", epoch, code, out, errOut)
		}
	}
}
