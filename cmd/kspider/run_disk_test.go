package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/kspider/kspider/spider"
	"github.com/kspider/kspider/spider/robots"
	"github.com/kspider/kspider/spider/urlnorm"
	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/tools/testweb"
)

// TestRunFullDiskResume: `kspider run` on a data directory whose disk
// fills up mid-crawl exits 1 naming the file it could not write, its
// summary says it stopped by an error (not "interrupted"), and the
// pages and megabytes it says are stored are exactly those in the store
// (it said the pages handed to the store, up to three times those on
// disk); once space is freed the same command finishes the crawl: every
// page of the first run is still there, none is stored twice, and the
// store is the web's truth.
func TestRunFullDiskResume(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	srv, tmp, ca := startRunWeb(t, testweb.Config{Hosts: 40, Seed: 11, MaxPages: 60, MeanPageSize: 8000, Seeds: 3, Plain: true})
	disk := filepath.Join(tmp, "disk")
	if err := os.Mkdir(disk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", disk, "tmpfs", 0, "size=2m"); err != nil {
		t.Skipf("cannot mount a tmpfs (%v): needs root with CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(disk, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting the test's tmpfs %s: %v", disk, err)
		}
	})
	dir := filepath.Join(disk, "data")
	conf := filepath.Join(tmp, "crawl.toml")
	toml := fmt.Sprintf("data_dir = %q\nfetchers = 8\ndns_servers = [%q]\ncontact = \"https://example.org/bot\"\nstatus = \"\"\n"+
		"[politeness]\ndelay = \"10ms\"\n[limits]\nmax_depth = 3\n", dir, srv.DNSAddr())
	if err := os.WriteFile(conf, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--config", conf, "--ca", ca, "--quiet", "--seeds", strings.Join(srv.SeedURLs(), ",")}

	code, _, errOut := runCmd(t, "", args...)
	t.Logf("first run, exit %d:\n%s", code, errOut)
	if code != 1 || !strings.Contains(errOut, "no space left on device") || !strings.Contains(errOut, ".seg") {
		t.Fatalf("run on a full disk: exit %d, want 1 naming the segment it could not write", code)
	}
	// The summary said "crawl interrupted (run again on the same
	// directory to continue)", as after a Ctrl-C: all well, when the
	// disk was full.
	if strings.Contains(errOut, "interrupted") || !strings.Contains(errOut, "crawl "+spider.RunFailed) {
		t.Errorf("run on a full disk: the summary does not say the crawl stopped by an error (%q)", spider.RunFailed)
	}
	// The saver's error was said twice at the end: in the run's error and
	// again as the store's Close error.
	if i := strings.LastIndex(errOut, "kspider run: "); i < 0 || strings.Count(errOut[i:], "no space left on device") != 1 {
		t.Errorf("the error at the end does not name the full disk exactly once")
	}
	m := regexp.MustCompile(`stored (\d+), errors`).FindStringSubmatch(errOut)
	if m == nil {
		t.Fatal("no summary of what was stored")
	}
	said, _ := strconv.Atoi(m[1])
	first := storedPages(t, dir)
	if said != len(first) {
		t.Errorf("the run says %d pages stored, the store holds %d", said, len(first))
	}
	// The MB figure counted the bodies handed to the store, lost ones
	// too: 3.3 MB said with 2 MB of disk.
	mb := regexp.MustCompile(`pages stored \(\d+/s\), (\d+\.\d) MB`).FindStringSubmatch(errOut)
	if mb == nil {
		t.Fatal("no MB figure in the summary")
	}
	saidMB, _ := strconv.ParseFloat(mb[1], 64)
	if body := storedBodyBytes(t, dir); math.Abs(saidMB-float64(body)/1e6) > 0.051 {
		t.Errorf("the run says %s MB stored, the store holds %d body bytes", mb[1], body)
	}

	if err := syscall.Mount("tmpfs", disk, "tmpfs", syscall.MS_REMOUNT, "size=256m"); err != nil {
		t.Fatalf("remounting the tmpfs larger: %v", err)
	}
	if code, _, errOut := runCmd(t, "", args...); code != 0 {
		t.Fatalf("run after space was freed: exit %d:\n%s", code, errOut)
	}
	all := storedPages(t, dir)
	for u, n := range all {
		if n > 1 {
			t.Errorf("%s stored %d times", u, n)
		}
	}
	for u := range first {
		if all[u] == 0 {
			t.Errorf("%s, stored by the first run, is gone", u)
		}
	}
	truth := srv.Truth().Crawlable(robots.ProductToken(spider.DefaultUserAgent), 3, 0)
	for _, d := range truth {
		if c, err := urlnorm.Canonical(nil, d.URL, nil); err != nil || all[c] == 0 {
			t.Errorf("%s (%v) is not stored", d.URL, err)
		}
	}
	if len(all) != len(truth) {
		t.Errorf("the store holds %d pages after the resumed crawl, the web has %d to crawl", len(all), len(truth))
	}
}

// storedBodyBytes is the sum of the bodies of the pages in dir's store.
func storedBodyBytes(t *testing.T, dir string) uint64 {
	t.Helper()
	r, err := storage.OpenReader([]string{filepath.Join(dir, "pages")})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var n uint64
	if err := r.Scan(context.Background(), func(p *storage.Page) error {
		n += uint64(len(p.Body))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestUnseen: the store's error that stopped the run and that its Close
// returns again is said once; another Close error is kept.
func TestUnseen(t *testing.T) {
	disk := errors.New("writing 00000001.seg: no space left on device")
	runErr := fmt.Errorf("spider: storing u (id 1): %w", fmt.Errorf("storage: every saver has stopped: %w", disk))
	other := errors.New("unlocking: bad file descriptor")
	if err := unseen(runErr, errors.Join(nil, disk, nil)); err != nil {
		t.Errorf("the run's own error came back from Close: %v", err)
	}
	if err := unseen(runErr, errors.Join(disk, other)); !errors.Is(err, other) || errors.Is(err, disk) {
		t.Errorf("close error %v: want the other error alone", err)
	}
	if err := unseen(nil, disk); err != disk {
		t.Errorf("without a run error: %v", err)
	}
	if err := unseen(runErr, other); err != other {
		t.Errorf("a lone other error: %v", err)
	}
}
