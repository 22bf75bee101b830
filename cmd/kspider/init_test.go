package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kspider/kspider/spider"
)

// TestInitSampleParsesToDefaults: the sample kspider init prints is a valid
// config whose values are Defaults' (plus the sample seeds), and every key
// of the config appears in it with a comment.
func TestInitSampleParsesToDefaults(t *testing.T) {
	code, out, errOut := runCmd(t, "", "init")
	if code != 0 || errOut != "" {
		t.Fatalf("kspider init: exit %d, stderr %q", code, errOut)
	}
	path := filepath.Join(t.TempDir(), "crawl.toml")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := spider.LoadRunConfig(context.Background(), path)
	if err != nil {
		t.Fatalf("the sample does not parse: %v", err)
	}
	want := spider.Defaults()
	want.Seeds = sampleSeeds
	if !reflect.DeepEqual(*cfg, want) {
		t.Errorf("the sample parses to\n%+v\nwant Defaults with the sample seeds\n%+v", *cfg, want)
	}
	// Every key is shown: the sample lists as many keys as the effective
	// config --check prints.
	code, checked, _ := runCmd(t, "", "init", "--check", path)
	if code != 0 {
		t.Fatalf("init --check on the sample: exit %d", code)
	}
	if got, want := countKeys(out), countKeys(checked); got != want {
		t.Errorf("the sample has %d keys, the effective config %d", got, want)
	}
	if strings.Contains(out, "m0s\"") || strings.Contains(out, "h0m") {
		t.Errorf("durations not in their short form:\n%s", out)
	}
}

// countKeys counts "key = value" lines.
func countKeys(doc string) int {
	n := 0
	for _, l := range strings.Split(doc, "\n") {
		if l != "" && l[0] != '#' && l[0] != '[' && strings.Contains(l, " = ") {
			n++
		}
	}
	return n
}

func TestInitCheck(t *testing.T) {
	dir := t.TempDir()
	seeds := filepath.Join(dir, "seeds.txt")
	os.WriteFile(seeds, []byte("https://b.example/\nhttps://c.example/\n"), 0o644)
	good := filepath.Join(dir, "good.toml")
	os.WriteFile(good, []byte("seeds = [\"https://a.example/\"]\nseeds_file = \""+seeds+"\"\ncontact = \"mailto:me@example.org\"\nstatus = \"0.0.0.0:7411\"\n[limits]\nmax_depth = 5\n"), 0o644)
	code, out, errOut := runCmd(t, "", "init", "--check", good)
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"ok: " + good + "\n", "# 3 seeds (1 inline, 2 from " + seeds + ")", "User-Agent: KSpider/0.1 (+mailto:me@example.org)", "max_depth = 5\n", "delay = '1s'\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "warning: status: \"0.0.0.0:7411\" is not a loopback address") || strings.Contains(errOut, "warning: contact") {
		t.Errorf("warnings:\n%s", errOut)
	}
	// A fetcher count this machine cannot serve is warned about, naming
	// the figure (the port range needs 4 per fetcher: 100,000 need 400,000).
	huge := filepath.Join(dir, "huge.toml")
	os.WriteFile(huge, []byte("fetchers = 100000\n[limits]\nmax_body = 1073741824\n"), 0o644)
	if code, _, errOut := runCmd(t, "", "init", "--check", huge); code != 0 || !strings.Contains(errOut, "the 400000 that 100000 fetchers need") {
		t.Errorf("100,000 fetchers: exit %d, warnings:\n%s", code, errOut)
	}
	// Nor were bodies of 1 GiB for each of them, far above any machine's
	// memory (when this one's can be read).
	if _, err := spider.ReadMemTotal(spider.MemInfoFile); err == nil {
		if _, _, errOut := runCmd(t, "", "init", "--check", huge); !strings.Contains(errOut, "warning: fetchers × limits.max_body: 100000 × 1 GiB = 97.7 TiB is above this machine's memory") {
			t.Errorf("100,000 fetchers × 1 GiB: warnings:\n%s", errOut)
		}
	}

	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("fetchers = 0\n[politeness]\ndelay = \"-1s\"\n[cluster]\nnode = 3\n"), 0o644)
	code, out, errOut = runCmd(t, "", "init", "--check", bad)
	if code != 1 || strings.Contains(out, "ok") {
		t.Fatalf("bad config: exit %d, stdout %q", code, out)
	}
	for _, want := range []string{bad + ":1: fetchers: 0 is out of range", bad + ":3: politeness.delay: negative duration -1s",
		bad + ":5: cluster.node: node 3 is not in cluster.nodes", "kspider init: " + bad + " is not a valid config (3 errors)"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}

	os.WriteFile(seeds, []byte("https://b.example/\nb.example\n"), 0o644)
	code, _, errOut = runCmd(t, "", "init", "--check", good)
	if code != 1 || !strings.Contains(errOut, seeds+":2: \"b.example\" is not an absolute http(s) URL") {
		t.Errorf("bad seeds file: exit %d:\n%s", code, errOut)
	}
	var many strings.Builder
	many.WriteString("seeds = [")
	for i := range 60 {
		fmt.Fprintf(&many, "%q, ", fmt.Sprintf("bad%d", i))
	}
	many.WriteString("]\n")
	os.WriteFile(bad, []byte(many.String()), 0o644)
	if _, _, errOut := runCmd(t, "", "init", "--check", bad); !strings.Contains(errOut, "more errors") || !strings.Contains(errOut, "is not a valid config (60 errors)\n") {
		t.Errorf("60 errors, some listed:\n%s", errOut)
	}
	os.WriteFile(bad, []byte("fetchers = 0\n"), 0o644)
	if _, _, errOut := runCmd(t, "", "init", "--check", bad); !strings.Contains(errOut, "is not a valid config (1 error)\n") {
		t.Errorf("one error:\n%s", errOut)
	}
	if code, _, errOut := runCmd(t, "", "init", "--check", filepath.Join(dir, "none.toml")); code != 1 || !strings.Contains(errOut, "none.toml") {
		t.Errorf("missing file: exit %d: %s", code, errOut)
	}
	if code, _, _ := runCmd(t, "", "init", "extra"); code != 2 {
		t.Errorf("stray argument: exit %d, want 2", code)
	}
	if code, out, _ := runCmd(t, "", "init", "--help"); code != 0 || !strings.Contains(out, "--check") {
		t.Errorf("--help: exit %d:\n%s", code, out)
	}
}

// TestInitCheckSecretFile: init --check reads cluster.secret_file as the
// run does, and fails as the run would; it said ok of a secret others may
// read, too short, or missing, which the run then refused.
func TestInitCheckSecretFile(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	conf := filepath.Join(dir, "cluster.toml")
	os.WriteFile(conf, []byte("contact = \"mailto:me@example.org\"\n[cluster]\nphases = 2\nsecret_file = \""+secret+
		"\"\n[[cluster.nodes]]\nid = 0\nudp = \"127.0.0.1:7410\"\n[[cluster.nodes]]\nid = 1\nudp = \"127.0.0.1:7420\"\n"), 0o644)
	for _, c := range []struct {
		body string
		mode os.FileMode
		want string
	}{
		{"0123456789abcdef0123\n", 0o644, "mode 0644"},
		{"short\n", 0o600, "holds 5 bytes of secret"},
		{"", 0, "no such file"},
	} {
		os.Remove(secret)
		if c.mode != 0 {
			os.WriteFile(secret, []byte(c.body), c.mode)
			os.Chmod(secret, c.mode)
		}
		code, out, errOut := runCmd(t, "", "init", "--check", conf)
		if code != 1 || strings.Contains(out, "ok") || !strings.Contains(errOut, "cluster.secret_file: ") || !strings.Contains(errOut, c.want) {
			t.Errorf("secret %q mode %v: exit %d, want 1 with %q:\n%s%s", c.body, c.mode, code, c.want, out, errOut)
		}
	}
	os.WriteFile(secret, []byte("0123456789abcdef0123\n"), 0o600)
	if code, out, errOut := runCmd(t, "", "init", "--check", conf); code != 0 || !strings.Contains(out, "ok: "+conf) {
		t.Errorf("good secret: exit %d:\n%s%s", code, out, errOut)
	}
}

// TestInitCheckInterrupted: `init --check` on a config whose seeds_file
// never ends (here a pipe fed until the test ends; /dev/urandom did it)
// stops when its context ends, as on Ctrl-C, and does not call the config
// invalid. Before, the first Ctrl-C was swallowed and reading went on.
func TestInitCheckInterrupted(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "seeds")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	stop := make(chan struct{})
	fed := make(chan struct{})
	// reading is closed once the check has read far more than a pipe holds.
	reading := make(chan struct{})
	go func() { // the pipe's writer: seeds until the test is over
		defer close(fed)
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		line := []byte(strings.Repeat("https://a.example/\n", 256))
		written := 0
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := f.Write(line); err != nil {
				return
			}
			if written += len(line); written >= 1<<20 && written-len(line) < 1<<20 {
				close(reading)
			}
		}
	}()
	defer func() { close(stop); <-fed }()
	cfg := filepath.Join(dir, "crawl.toml")
	if err := os.WriteFile(cfg, []byte("seeds_file = \""+fifo+"\"\ndata_dir = \""+filepath.Join(dir, "d")+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}, []string{"init", "--check", cfg})
	}()
	select {
	case <-reading:
	case code := <-done:
		t.Fatalf("init --check ended (exit %d) on an endless pipe, stderr:\n%s", code, errb.String())
	}
	cancel()
	select {
	case code := <-done:
		if code != 1 || !strings.Contains(errb.String(), "stopped at line") || strings.Contains(errb.String(), "not a valid config") {
			t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("init --check went on reading after its context ended")
	}
}

// TestInitCheckPipeNoWriter: `init --check` of a config that is a named
// pipe nothing writes to waited in open(2) past Ctrl-C; now the end of its
// context ends it, naming the file, without calling the config invalid.
func TestInitCheckPipeNoWriter(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "crawl.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}, []string{"init", "--check", fifo})
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case code := <-done:
		if code != 1 || !strings.Contains(errb.String(), fifo) || strings.Contains(errb.String(), "not a valid config") {
			t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("init --check of a pipe nothing writes to went on after its context ended")
	}
}

// TestInitCheckCountsUnknownKeysOnly: a file of more unknown keys than a
// mistyped config has ends its report with a note that the values were not
// checked; the summary counted that note as one more error ("201 errors"
// for 200 unknown keys). It says 200 now, and still exits 1.
func TestInitCheckCountsUnknownKeysOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "many.toml")
	var doc strings.Builder
	for i := range 200 {
		fmt.Fprintf(&doc, "k%d = 1\n", i)
	}
	if err := os.WriteFile(path, []byte(doc.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "", "init", "--check", path)
	if code != 1 || strings.Contains(out, "ok") {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	for _, want := range []string{path + ":1: unknown key k0\n", "values not checked: 200 unknown keys", "is not a valid config (200 errors)\n"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}
