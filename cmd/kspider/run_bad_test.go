package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kspider/kspider/tools/testweb"
)

// writeRunConfig writes a config for a crawl of seeds into tmp.
func writeRunConfig(t *testing.T, tmp, dir, dns string, seeds ...string) string {
	t.Helper()
	conf := filepath.Join(tmp, "crawl.toml")
	q := make([]string, len(seeds))
	for i, s := range seeds {
		q[i] = fmt.Sprintf("%q", s)
	}
	toml := fmt.Sprintf("seeds = [%s]\ndata_dir = %q\nfetchers = 4\ndns_servers = [%q]\ncontact = \"https://example.org/bot\"\n"+
		"[politeness]\ndelay = \"10ms\"\n[limits]\nmax_depth = 1\n", strings.Join(q, ", "), dir, dns)
	if err := os.WriteFile(conf, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	return conf
}

// TestRunBadSeeds: a --seeds value that is not a URL is a usage error
// (exit 2); one in the config is exit 1 naming it; nothing is created.
func TestRunBadSeeds(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "data")
	conf := writeRunConfig(t, tmp, dir, "127.0.0.1:53", "http://a.example/")
	if code, _, errOut := runCmd(t, "", "run", "--config", conf, "--seeds", "notaurl", "--quiet"); code != 2 || !strings.Contains(errOut, `"notaurl" is not an absolute http(s) URL`) {
		t.Errorf("--seeds notaurl: exit %d, want 2 naming it:\n%s", code, errOut)
	}
	conf = writeRunConfig(t, tmp, dir, "127.0.0.1:53", "ftp://a.example/")
	if code, _, errOut := runCmd(t, "", "run", "--config", conf, "--quiet"); code != 1 || !strings.Contains(errOut, "ftp://a.example/") {
		t.Errorf("an ftp seed: exit %d, want 1 naming it:\n%s", code, errOut)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("the data directory was created for a run that never started")
	}
}

// TestRunEmptyFlags: a flag given an empty value (--dir "$DIR" in a
// script, DIR unset) was taken for one not given: --dir= crawled into
// the config's data_dir, --seeds= crawled the config's seeds, --status=
// served the config's status, --ca= ran without the test web's CA. Now
// each is a usage error naming the flag, exit 2, nothing created.
func TestRunEmptyFlags(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "data")
	conf := writeRunConfig(t, tmp, dir, "127.0.0.1:53", "http://127.0.0.1:1/")
	for _, flag := range []string{"dir", "seeds", "status", "ca", "cpuprofile"} {
		code, _, errOut := runCmd(t, "", "run", "--config", conf, "--quiet", "--"+flag+"=")
		if code != 2 || !strings.Contains(errOut, "--"+flag+" is given empty") {
			t.Errorf("--%s=: exit %d, want 2 naming it:\n%s", flag, code, errOut)
		}
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("the data directory was created for a run that never started")
	}
}

// TestRunCPUProfileUnwritable: a --cpuprofile that cannot be created was
// said 'kspider run: open DIR/cpu.prof: no such file or directory',
// naming no flag; now '--cpuprofile: open ...', exit 1.
func TestRunCPUProfileUnwritable(t *testing.T) {
	tmp := t.TempDir()
	conf := writeRunConfig(t, tmp, filepath.Join(tmp, "data"), "127.0.0.1:53", "http://127.0.0.1:1/")
	bad := filepath.Join(tmp, "none", "cpu.prof")
	if code, _, errOut := runCmd(t, "", "run", "--config", conf, "--quiet", "--cpuprofile", bad); code != 1 || !strings.Contains(errOut, "kspider run: --cpuprofile: open "+bad) {
		t.Errorf("--cpuprofile in a directory that does not exist: exit %d, want 1 naming the flag:\n%s", code, errOut)
	}
}

// TestRunDNSNoAnswer: a DNS server that never answers stops the run at
// once (exit 1) saying so, before the data directory is touched.
func TestRunDNSNoAnswer(t *testing.T) {
	mute, err := net.ListenPacket("udp4", "127.0.0.1:0") // reads nothing, answers nothing
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "data")
	conf := writeRunConfig(t, tmp, dir, mute.LocalAddr().String(), "http://a.example/")
	code, _, errOut := runCmd(t, "", "run", "--config", conf, "--quiet")
	if code != 1 || !strings.Contains(errOut, "DNS: no answer from dns_servers "+mute.LocalAddr().String()) {
		t.Errorf("mute DNS server: exit %d, want 1 saying no answer:\n%s", code, errOut)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("the data directory was created for a run that never started")
	}
}

// TestRunBadDataDir: a data directory that is a file, or whose state
// files are damaged, is exit 1 with a message naming it, never a panic;
// the pages already stored stay readable.
func TestRunBadDataDir(t *testing.T) {
	srv, tmp, ca := startRunWeb(t, testweb.Config{Hosts: 5, Seed: 9, MaxPages: 5, Seeds: 2, Plain: true})
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := writeRunConfig(t, tmp, file, srv.DNSAddr(), srv.SeedURLs()...)
	if code, _, errOut := runCmd(t, "", "run", "--config", conf, "--ca", ca, "--quiet"); code != 1 || !strings.Contains(errOut, file) {
		t.Errorf("data_dir is a file: exit %d, want 1 naming it:\n%s", code, errOut)
	}

	dir := filepath.Join(tmp, "data")
	conf = writeRunConfig(t, tmp, dir, srv.DNSAddr(), srv.SeedURLs()...)
	if code, _, errOut := runCmd(t, "", "run", "--config", conf, "--ca", ca, "--quiet"); code != 0 {
		t.Fatalf("crawl: exit %d:\n%s", code, errOut)
	}
	pages := storedPages(t, dir)
	if len(pages) == 0 {
		t.Fatal("nothing stored")
	}
	// Damage each state file in turn (a copy of the directory each time).
	for _, sub := range []string{"urls", "sched"} {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			for _, how := range []string{"all", "middle"} {
				if e.IsDir() {
					continue
				}
				broken := filepath.Join(tmp, "broken-"+how+"-"+sub+"-"+e.Name())
				if err := os.CopyFS(broken, os.DirFS(dir)); err != nil {
					t.Fatal(err)
				}
				victim := filepath.Join(broken, sub, e.Name())
				b, err := os.ReadFile(victim)
				if err != nil || len(b) == 0 {
					continue
				}
				if how == "all" {
					for i := 0; i < len(b); i += 7 { // garble it all: header, records and checksums
						b[i] ^= 0x5a
					}
				} else {
					b[len(b)/2] ^= 0x5a // one byte past the header
				}
				if err := os.WriteFile(victim, b, 0o644); err != nil {
					t.Fatal(err)
				}
				c := writeRunConfig(t, tmp, broken, srv.DNSAddr(), srv.SeedURLs()...)
				code, _, errOut := runCmd(t, "", "run", "--config", c, "--ca", ca, "--quiet")
				t.Logf("%s/%s damaged (%s): exit %d: %s", sub, e.Name(), how, code, errOut[strings.LastIndex(strings.TrimSpace(errOut), "\n")+1:])
				if code != 1 && code != 0 {
					t.Errorf("%s/%s damaged: exit %d, want 1 (or 0 if it was rebuilt)", sub, e.Name(), code)
				}
				if code == 1 && !strings.Contains(errOut, e.Name()) && !strings.Contains(errOut, sub) {
					t.Errorf("%s/%s damaged: the message does not name it:\n%s", sub, e.Name(), errOut)
				}
				if got := storedPages(t, broken); len(got) < len(pages) {
					t.Errorf("%s/%s damaged: %d pages readable, %d were stored", sub, e.Name(), len(got), len(pages))
				}
			}
		}
	}
}

// TestRunStatusFlag: --status off runs without a status page whatever else
// is given (--dir made the config be checked again, which refused "off"),
// and a --status that is not an address is a usage error naming it instead
// of a warning and a crawl nobody can watch or steer.
func TestRunStatusFlag(t *testing.T) {
	tmp := t.TempDir()
	conf := writeRunConfig(t, tmp, filepath.Join(tmp, "data"), "127.0.0.1:53", "http://a.example/")
	for _, bad := range []string{"nonsense", "127.0.0.1", "example.org:80", "127.0.0.1:99999"} {
		code, _, errOut := runCmd(t, "", "run", "--config", conf, "--status", bad, "--quiet")
		if code != 2 || !strings.Contains(errOut, "--status: ") || !strings.Contains(errOut, bad) {
			t.Errorf("--status %s: exit %d, want 2 naming it:\n%s", bad, code, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "data")); err == nil {
		t.Error("the data directory was created for a run that never started")
	}
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<p>no links")
	}))
	defer web.Close()
	code, _, errOut := runCmd(t, "", "run", "--config", conf, "--seeds", web.URL+"/", "--dir", filepath.Join(tmp, "data2"), "--status", "off", "--quiet")
	if code != 0 || strings.Contains(errOut, "status") {
		t.Errorf("--status off --dir: exit %d, want 0 and no status page:\n%s", code, errOut)
	}
}

// TestRunNodeFlagOneNode: --node naming a node the one-node config does
// not have is a usage error, not a crawl as that one node; --ca's errors
// name the flag.
func TestRunNodeFlagOneNode(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "data")
	conf := writeRunConfig(t, tmp, dir, "127.0.0.1:53", "http://a.example/")
	code, _, errOut := runCmd(t, "", "run", "--config", conf, "--node", "3", "--quiet")
	if code != 2 || !strings.Contains(errOut, "--node 3: the config has one node alone, id 0") {
		t.Errorf("--node 3: exit %d, want 2 naming it:\n%s", code, errOut)
	}
	code, _, errOut = runCmd(t, "", "run", "--config", conf, "--ca", filepath.Join(tmp, "none.pem"), "--quiet")
	if code != 1 || !strings.Contains(errOut, "--ca: open ") {
		t.Errorf("--ca of no file: exit %d, want 1 naming the flag:\n%s", code, errOut)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("the data directory was created for a run that never started")
	}
}

// TestRunNodeFlagCluster: --node naming no node of a cluster's config is
// a usage error (it was exit 1), and a negative one too: it was taken for
// no --node, and the process crawled as the config's cluster.node.
func TestRunNodeFlagCluster(t *testing.T) {
	tmp := t.TempDir()
	secret := filepath.Join(tmp, "secret")
	if err := os.WriteFile(secret, []byte("0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "data")
	conf := filepath.Join(tmp, "cluster.toml")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("data_dir = %q\nstatus = \"\"\ncontact = \"mailto:me@example.org\"\n"+
		"[cluster]\nphases = 2\nsecret_file = %q\n[[cluster.nodes]]\nid = 0\nudp = \"127.0.0.1:1\"\n[[cluster.nodes]]\nid = 1\nudp = \"127.0.0.1:2\"\n",
		dir, secret)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ node, want string }{
		{"2", "--node 2 is not in cluster.nodes (ids 0 to 1)"},
		{"-2", "--node -2: node ids are 0 or more"},
		{"-1", "--node -1: node ids are 0 or more"},
	} {
		// Bounded: a run that starts anyway ends here.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var out, errb bytes.Buffer
		code := run(ctx, env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}, []string{"run", "--config", conf, "--node", c.node, "--quiet"})
		cancel()
		if code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("--node %s: exit %d, want 2 with %q:\n%s", c.node, code, c.want, &errb)
		}
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("the data directory was created for a run that never started")
	}
}

// TestRunCAFileTooBig: --ca reads at most maxCAFile bytes: a device that
// never ends (--ca /dev/zero) was read into memory until the kernel's OOM
// killer ended the process, Ctrl-C and SIGTERM unheard. A regular file one
// byte over the bound stands for it here.
func TestRunCAFileTooBig(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "data")
	conf := writeRunConfig(t, tmp, dir, "127.0.0.1:53", "http://a.example/")
	big := filepath.Join(tmp, "big.pem")
	if err := os.WriteFile(big, bytes.Repeat([]byte("x"), maxCAFile+1), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCmd(t, "", "run", "--config", conf, "--ca", big, "--quiet")
	if want := "--ca: " + big + " is over 16 MiB"; code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("--ca of %d bytes: exit %d, want 1 with %q:\n%s", maxCAFile+1, code, want, errOut)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("the data directory was created for a run that never started")
	}
}

// TestRunLogsNodeLines: a lone node's own lines reach stderr (here the
// page index found damaged and rebuilt, which a node's operator must
// see), while each URL's trouble (a redirect chain cut) shows only with
// --verbose.
func TestRunLogsNodeLines(t *testing.T) {
	srv, tmp, ca := startRunWeb(t, testweb.Config{Hosts: 5, Seed: 9, MaxPages: 5, Seeds: 2, Plain: true})
	loop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/r"))
		http.Redirect(w, r, fmt.Sprintf("/r%d", n+1), http.StatusFound)
	}))
	defer loop.Close()
	dir := filepath.Join(tmp, "data")
	conf := writeRunConfig(t, tmp, dir, srv.DNSAddr(), append(srv.SeedURLs(), loop.URL+"/r0")...)
	const cut = "redirect not followed"
	code, _, errOut := runCmd(t, "", "run", "--config", conf, "--ca", ca, "--quiet")
	if code != 0 || strings.Contains(errOut, cut) {
		t.Fatalf("crawl: exit %d, want 0 and no URL's trouble logged without --verbose:\n%s", code, errOut)
	}
	ix := filepath.Join(dir, "pages", "url.idx")
	b, err := os.ReadFile(ix)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] ^= 0x5a
	}
	if err := os.WriteFile(ix, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCmd(t, "", "run", "--config", conf, "--ca", ca, "--quiet")
	if code != 0 || !strings.Contains(errOut, "rebuilding it from the segments") {
		t.Errorf("damaged page index: exit %d, want 0 and the rebuild logged:\n%s", code, errOut)
	}
	code, _, errOut = runCmd(t, "", "run", "--config", conf, "--ca", ca, "--quiet", "--verbose", "--dir", filepath.Join(tmp, "data2"))
	if code != 0 || !strings.Contains(errOut, cut) {
		t.Errorf("--verbose: exit %d, want 0 and the redirect chain's cut logged:\n%s", code, errOut)
	}
}

// A flag that holds one value given twice took the last silently (run
// --config a.toml --config b.toml crawled by b), and one given empty
// read as not given in every command but run (init --check= printed the
// sample config and exited 0: a CI step checking "$CONF", unset, passed).
// Now both are usage errors naming the flag, exit 2, in every command;
// the repeatable flags (--data, --header, --server) still repeat, and one
// given twice alike is no ambiguity.
func TestFlagsGivenTwiceOrEmpty(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--config", "a.toml", "--config=b.toml"}, `--config is given 2 times, with different values ("a.toml", "b.toml"): give it once`},
		{[]string{"init", "--check="}, "--check is given empty"},
		{[]string{"init", "--check", ""}, "--check is given empty"},
		{[]string{"run", "--dir="}, "--dir is given empty"},
		{[]string{"export", "warc", "--data", "x", "--out", "a", "--out", "b"}, "--out is given 2 times"},
		{[]string{"get", "-i", "-i=false", "--data", "x", "1"}, `get: -i is given 2 times`},
	} {
		code, out, errOut := runCmd(t, "", c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr %q, stdout %.80q; want exit 2 and %q", c.args, code, errOut, out, c.want)
		}
	}
	if code, _, errOut := runCmd(t, "", "init", "--check", "/nonexistent/c.toml", "--check=/nonexistent/c.toml"); code == 2 {
		t.Errorf("init --check twice alike: exit 2: %s", errOut)
	}
	// Repeatable: both directories are read (neither exists: named).
	code, _, errOut := runCmd(t, "", "stats", "--data", "/nonexistent/a", "--data", "/nonexistent/b")
	if code == 2 || strings.Contains(errOut, "given 2 times") {
		t.Errorf("stats --data twice: exit %d: %s", code, errOut)
	}
}
