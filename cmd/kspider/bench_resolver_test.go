package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kspider/kspider/tools/daemon"
	"github.com/kspider/kspider/tools/testenv"
)

func TestResolverHostOfLine(t *testing.T) {
	for line, want := range map[string]string{
		"http://www.Example.com/a":          "www.example.com",
		"https://user:pw@foo.org:8080/x?y":  "foo.org",
		"HTTPS://Bar.ORG.":                  "bar.org",
		"example.net":                       "example.net",
		"ftp://a.b#frag":                    "a.b",
		"  spaced.example  ":                "spaced.example",
		"http://10.0.0.1/":                  "",
		"192.0.2.1":                         "",
		"http://[2001:db8::1]:80/":          "",
		"http://bad host/":                  "",
		"http://":                           "",
		"http://xn--bcher-kva.example/path": "xn--bcher-kva.example",
	} {
		got, ok := resolverHostOfLine(line)
		if got != want || ok != (want != "") {
			t.Errorf("resolverHostOfLine(%q) = %q, %v; want %q", line, got, ok, want)
		}
	}
}

func TestBenchResolver(t *testing.T) {
	testenv.Binary(t, "dnsmasq", "dnsmasq-base")
	list := filepath.Join(t.TempDir(), "urls.txt")
	os.WriteFile(list, []byte(strings.Join([]string{
		"http://www.one.test/a", "http://www.one.test/b", "two.test", "https://THREE.test:443/",
		"http://192.0.2.1/", "not a host", "http://four.test/x",
	}, "\n")+"\n"), 0o644)
	code, out, errOut := runCmd(t, "", "bench", "resolver", "--names", list, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	// hit_allocs is read from the process's allocation counter; over four
	// names other goroutines' allocations show, so only bound it here (the
	// real benchmark divides by hundreds of thousands of hits).
	var res benchResolverResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Names != 4 || res.Skipped != 2 || res.ColdErrors != 0 || res.HitRate != 1 || res.HitAllocs > 0.5 || res.ColdQPS <= 0 || res.HitNs <= 0 {
		t.Errorf("result: %+v", res)
	}

	// --stream: five lines with a host, one of them a repeat.
	code, out, errOut = runCmd(t, "", "bench", "resolver", "--names", list, "--json", "--stream")
	res = benchResolverResult{}
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil {
		t.Fatalf("--stream: exit %d, %v: %s%s", code, err, out, errOut)
	}
	if res.StreamLookups != 5 || res.StreamHitRate != 0.2 {
		t.Errorf("--stream: %d lookups, hit rate %v; want 5, 0.2", res.StreamLookups, res.StreamHitRate)
	}

	// The same names against a server we started: hosts map them to
	// 127.0.0.1..4 in order.
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := benchResolverWriteHosts(hosts, []string{"www.one.test", "two.test", "three.test", "four.test"}); err != nil {
		t.Fatal(err)
	}
	d, err := daemon.StartDnsmasq(t.Context(), hosts, "")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	code, out, errOut = runCmd(t, "", "bench", "resolver", "--server", d.Addr.String(), "--names", list)
	if code != 0 || !strings.Contains(out, "hit rate 1.0000") || !strings.Contains(out, d.Addr.String()) {
		t.Errorf("--server: exit %d\n%s%s", code, out, errOut)
	}
	if got := benchResolverAddr(3).String(); got != "127.0.0.4" {
		t.Errorf("address of the 4th name = %s", got)
	}
}

func TestBenchResolverUsage(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "resolver"},
		{"bench", "resolver", "--names", "x", "--slots", "0"},
		{"bench", "resolver", "--names", "x", "extra"},
	} {
		if code, _, _ := runCmd(t, "", args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if code, _, errOut := runCmd(t, "", "bench", "resolver", "--names", filepath.Join(t.TempDir(), "missing")); code != 1 {
		t.Errorf("missing file: exit %d %s", code, errOut)
	}
}
