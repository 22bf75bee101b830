package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kspider/kspider/tools/daemon"
	"github.com/kspider/kspider/tools/testenv"
)

// resolveTestDnsmasq starts dnsmasq with a small hosts file and returns its
// address.
func resolveTestDnsmasq(t *testing.T) string {
	t.Helper()
	testenv.Binary(t, "dnsmasq", "dnsmasq-base")
	hosts := filepath.Join(t.TempDir(), "hosts")
	os.WriteFile(hosts, []byte("127.0.0.20 www.kspider.test\n127.0.0.21 two.kspider.test\n127.0.0.22 two.kspider.test\n::1 two.kspider.test\n"), 0o644)
	d, err := daemon.StartDnsmasq(t.Context(), hosts, "kspider.test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	return d.Addr.String()
}

func TestResolveCommand(t *testing.T) {
	srv := resolveTestDnsmasq(t)
	code, out, errOut := runCmd(t, "", "resolve", "--server", srv, "-v", "www.kspider.test", "TWO.kspider.test.", "192.0.2.9")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 {
		t.Fatalf("output:\n%s", out)
	}
	for i, want := range [][2]string{{"www.kspider.test", "127.0.0.20"}, {"TWO.kspider.test.", "127.0.0.21 127.0.0.22 ::1"}, {"192.0.2.9", "192.0.2.9"}} {
		f := strings.Split(lines[i], "\t")
		if len(f) != 3 {
			t.Errorf("line %d = %q", i, lines[i])
			continue
		}
		got := strings.Fields(f[1])
		slices.Sort(got)
		if f[0] != want[0] || strings.Join(got, " ") != want[1] {
			t.Errorf("line %d = %q, want %s with %s", i, lines[i], want[0], want[1])
		}
	}
	if !strings.Contains(lines[3], "replies rejected") {
		t.Errorf("-v line: %q", lines[3])
	}

	// A Unicode name is looked up by its A-labels, as a crawl would.
	code, out, _ = runCmd(t, "", "resolve", "--server", srv, "ข่าว.kspider.test", "a\u00a0b.test")
	if code != 1 || !strings.Contains(out, "ข่าว.kspider.test (xn--22c8e6a1f.kspider.test)\terror: no such host") ||
		!strings.Contains(out, "a\u00a0b.test\terror: not a host name:") {
		t.Errorf("Unicode names: exit %d\n%s", code, out)
	}

	code, out, errOut = runCmd(t, "", "resolve", "--server", srv, "www.kspider.test", "nope.kspider.test", "bad..name")
	if code != 1 || !strings.Contains(out, "nope.kspider.test\terror: no such host") ||
		!strings.Contains(out, "bad..name\terror: not a valid host name") || !strings.Contains(errOut, "2 of 3") {
		t.Errorf("failures: exit %d\n%s%s", code, out, errOut)
	}
}

func TestResolveUsage(t *testing.T) {
	for _, args := range [][]string{
		{"resolve"},
		{"resolve", "--network", "ipx", "a.test"},
		{"resolve", "--timeout", "0s", "a.test"},
	} {
		if code, _, _ := runCmd(t, "", args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if code, _, errOut := runCmd(t, "", "resolve", "--server", "not-an-ip", "a.test"); code != 1 || !strings.Contains(errOut, "not-an-ip") {
		t.Errorf("bad server: exit %d, %s", code, errOut)
	}
}

// TestServerFlagNamesAServer: an empty --server (a shell variable left
// unset) was dropped, and the resolver then asked /etc/resolv.conf's
// servers instead of the one meant. The flag values are checked directly,
// so that a regression sends no query anywhere.
func TestServerFlagNamesAServer(t *testing.T) {
	for _, v := range []string{"", " ", ",", " , "} {
		var s serverList
		if err := s.Set(v); err == nil {
			t.Errorf("--server %q accepted: %v", v, s)
		}
		// clock's --ntp is the same flag type; refused before any query.
		if code, _, _ := runCmd(t, "", "clock", "--ntp", v); code != 2 {
			t.Errorf("--ntp %q: exit %d, want 2", v, code)
		}
	}
	var s serverList
	if err := s.Set("127.0.0.1:53, [::1]:53"); err != nil || len(s) != 2 {
		t.Errorf("two servers: %v, %v", s, err)
	}
	if code, _, errOut := runCmd(t, "", "resolve", "--server", "127.0.0.1:0", "a.test"); code != 1 || !strings.Contains(errOut, "port 0") {
		t.Errorf("port 0: exit %d, %s", code, errOut)
	}
	if code, _, errOut := runCmd(t, "", "fetch", "--network", "ip5", "--server", "127.0.0.1:1", "http://127.0.0.1:1/"); code != 2 || !strings.Contains(errOut, "ip5") {
		t.Errorf("fetch --network ip5: exit %d, %s", code, errOut)
	}
}
