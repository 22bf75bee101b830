package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kspider/kspider/spider"
	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/tools/testweb"
)

// startRunWeb serves a test web on loopback for `kspider run` and writes
// its CA certificate into a temporary directory: the web, the directory and
// the certificate's file.
func startRunWeb(t *testing.T, cfg testweb.Config) (*testweb.Server, string, string) {
	t.Helper()
	srv, err := testweb.Start(context.Background(), testweb.Generate(cfg), testweb.ServeConfig{HTTPAddr: "127.0.0.1:0", DNSAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	tmp := t.TempDir()
	ca := filepath.Join(tmp, "ca.pem")
	if err := os.WriteFile(ca, srv.CACertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	return srv, tmp, ca
}

// TestRunCommand runs `kspider run` on a plain test web: interrupted before
// it starts (exit 1, "interrupted"), then again on the same directory to
// the end (exit 0), with every page stored once; a third run finds nothing
// left and a usage error is exit 2.
func TestRunCommand(t *testing.T) {
	srv, tmp, ca := startRunWeb(t, testweb.Config{Hosts: 20, Seed: 5, MaxPages: 20, Seeds: 2, Plain: true})
	dir := filepath.Join(tmp, "data")
	conf := filepath.Join(tmp, "crawl.toml")
	toml := fmt.Sprintf("seeds = [%q]\ndata_dir = %q\nfetchers = 8\ndns_servers = [%q]\ncontact = \"https://example.org/bot\"\n"+
		"[politeness]\ndelay = \"100ms\"\n[limits]\nmax_depth = 2\n", srv.SeedURLs()[0], dir, srv.DNSAddr())
	if err := os.WriteFile(conf, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--config", conf, "--ca", ca, "--quiet", "--seeds", strings.Join(srv.SeedURLs(), ",")}

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // SIGINT before anything was fetched
	var out, errb bytes.Buffer
	if code := run(ctx, env{stdout: &out, stderr: &errb}, args); code != 1 || !strings.Contains(errb.String(), "interrupted") {
		t.Fatalf("interrupted run: exit %d, want 1 saying interrupted:\n%s", code, errb.String())
	}

	code, _, errOut := runCmd(t, "", args...)
	if code != 0 {
		t.Fatalf("resumed run: exit %d:\n%s", code, errOut)
	}
	t.Log(errOut)
	// The counts line says the robots denied too costly to check apart,
	// and the crawl bench still reads the URLs off it.
	if !regexp.MustCompile(`robots denied \d+ \(\d+ too costly to check\), too deep`).MatchString(errOut) || urlsOfRun(errOut) == 0 {
		t.Errorf("counts line without the robots too costly to check, or its URLs unread (%d):\n%s", urlsOfRun(errOut), errOut)
	}
	r, err := storage.OpenReader([]string{filepath.Join(dir, "pages")})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	if err := r.Scan(context.Background(), func(p *storage.Page) error {
		if seen[p.URL] {
			t.Errorf("stored twice: %s", p.URL)
		}
		seen[p.URL] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if len(seen) == 0 {
		t.Fatal("nothing stored")
	}

	if code, _, errOut := runCmd(t, "", args...); code != 0 || !strings.Contains(errOut, "stored 0") {
		t.Errorf("run on a finished crawl: exit %d:\n%s", code, errOut)
	}
	if code, _, _ := runCmd(t, "", "run"); code != 2 {
		t.Errorf("run without --config: exit %d, want 2", code)
	}
	bad := filepath.Join(tmp, "bad.toml")
	if err := os.WriteFile(bad, []byte("seeds = [\"http://a.example/\"]\nfetcherz = 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCmd(t, "", "run", "--config", bad); code != 1 || !strings.Contains(errOut, "fetcherz") {
		t.Errorf("run with an unknown key: exit %d, want 1 naming it:\n%s", code, errOut)
	}
	lock, err := spider.LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	if code, _, errOut := runCmd(t, "", args...); code != 1 || !strings.Contains(errOut, strconv.Itoa(os.Getpid())) {
		t.Errorf("run on a locked directory: exit %d, want 1 naming pid %d:\n%s", code, os.Getpid(), errOut)
	}
}

// TestRunSeedsWithCommas: --seeds was split at every comma, so a seed
// holding one (a path /a,b, a query ids=1,2) could not be given: its
// pieces were refused as not URLs. Now the list is split only where
// another http(s) URL starts, and a list of URLs works as before.
func TestRunSeedsWithCommas(t *testing.T) {
	for list, want := range map[string][]string{
		"http://a/":                            {"http://a/"},
		"http://a/,https://b/":                 {"http://a/", "https://b/"},
		"http://a/x,y, HTTPS://b/?i=1,2":       {"http://a/x,y", "HTTPS://b/?i=1,2"},
		"http://a/,,http://b/":                 {"http://a/,", "http://b/"},
		"notaurl,http://a/":                    {"notaurl", "http://a/"},
		"http://a/?next=x,http://b/,https://c": {"http://a/?next=x", "http://b/", "https://c"},
	} {
		if got := splitSeeds(list); !slices.Equal(got, want) {
			t.Errorf("splitSeeds(%q) = %q, want %q", list, got, want)
		}
	}
	// A seed holding ",http://" cannot be told from two: the help sends
	// it to the config, where it said a comma within a URL stays in it.
	if _, out, _ := runCmd(t, "", "run", "--help"); !strings.Contains(out, `a URL holding ",http://" goes in the config's seeds or seeds_file`) {
		t.Errorf("kspider run --help does not say where a seed holding \",http://\" goes:\n%s", out)
	}
	var mu sync.Mutex
	asked := map[string]bool{}
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked[r.URL.RequestURI()] = true
		mu.Unlock()
		fmt.Fprint(w, "<p>no links")
	}))
	defer web.Close()
	tmp := t.TempDir()
	conf := writeRunConfig(t, tmp, filepath.Join(tmp, "data"), "127.0.0.1:53", "http://a.example/")
	seeds := web.URL + "/a,b, " + web.URL + "/c?ids=1,2," + web.URL + "/d"
	code, _, errOut := runCmd(t, "", "run", "--config", conf, "--seeds", seeds, "--status", "off", "--quiet")
	if code != 0 {
		t.Fatalf("--seeds %s: exit %d:\n%s", seeds, code, errOut)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range []string{"/a,b", "/c?ids=1,2", "/d"} {
		if !asked[p] {
			t.Errorf("seed %s not fetched; asked %v", p, asked)
		}
	}
}
