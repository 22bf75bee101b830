package spider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kspider/kspider/resolver"
	"github.com/kspider/kspider/tools/testweb"
)

const nodeNoFileChildEnv = "KSPIDER_NODE_NOFILE_CHILD"

// TestNodeNoFileChild crawls with a low open-files limit; it does nothing
// in a normal run. It prints the run's summary and error as JSON.
func TestNodeNoFileChild(t *testing.T) {
	raw := os.Getenv(nodeNoFileChildEnv)
	if raw == "" {
		t.Skip("only run as TestNodeOpenFilesLimit's child process")
	}
	var spec soakSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		childFail(err)
	}
	res, err := resolver.New(resolver.Config{Servers: []string{spec.DNS}, Timeout: 500 * time.Millisecond, Network: "ip4",
		DownFor: 100 * time.Millisecond, ServFailTTL: 100 * time.Millisecond})
	if err != nil {
		childFail(err)
	}
	lookup := func(ctx context.Context, host string) ([]netip.Addr, error) { return res.Lookup(ctx, host) }
	cfg := nodeConfigFor(t, spec.Dir, spec.Seeds, lookup, childCAPool(spec.CA), spec.Depth)
	cfg.Collector.Fetchers = 64
	cfg.Logf = func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
	n, err := OpenNode(cfg)
	if err != nil {
		childFail(err)
	}
	// Low enough that fetchers' connections run out of descriptors.
	lim := syscall.Rlimit{Cur: 40, Max: 40}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		childFail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, runErr := n.Run(ctx)
	closeErr := n.Close()
	msg := ""
	if err := errors.Join(runErr, closeErr); err != nil {
		msg = err.Error()
	}
	out, _ := json.Marshal(struct {
		Sum *NodeSummary
		Err string
	}{sum, msg})
	fmt.Printf("%s\n", out)
	os.Exit(0)
}

// TestNodeOpenFilesLimit: a node whose open-files limit is too low for its
// fetchers. A connection that fails for want of a descriptor is not the
// host's failure: counted so, each URL's retries were spent on it and the
// crawl "finished" without the pages, which no later run fetched. Now
// the crawl stops with an error saying so, and a run with the limit
// raised stores the truth.
func TestNodeOpenFilesLimit(t *testing.T) {
	if os.Getenv(nodeNoFileChildEnv) != "" {
		t.Skip("child")
	}
	var log bytes.Buffer
	webCfg := testweb.Config{Hosts: 60, Seed: 3, MaxPages: 80, MeanPageSize: 2000, Seeds: 4, Plain: true}
	srv, lookup := startWeb(t, webCfg, &log)
	tmp := t.TempDir()
	spec := soakSpec{Dir: filepath.Join(tmp, "node"), DNS: srv.DNSAddr(), CA: filepath.Join(tmp, "ca.pem"), Seeds: srv.SeedURLs(), Depth: 3}
	if err := os.WriteFile(spec.CA, srv.CACertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNodeNoFileChild$", "-test.v=false")
	cmd.Env = append(os.Environ(), nodeNoFileChildEnv+"="+string(raw))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	var got struct {
		Sum *NodeSummary
		Err string
	}
	if err := json.Unmarshal(bytes.TrimSpace(bytes.SplitN(out, []byte("\n"), 2)[0]), &got); err != nil {
		t.Fatalf("child said %q: %v", out, err)
	}
	t.Logf("child: %+v %s", got.Sum, got.Err)
	errLines := 0
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(l, "too many open files") && errLines < 5 {
			t.Log(l)
			errLines++
		}
	}
	if !strings.Contains(got.Err, "too many open files") {
		t.Errorf("the crawl with too few descriptors ended with %q, want an error saying so", got.Err)
	}
	sum, err := runNode(t, context.Background(), nodeConfig(t, spec.Dir, srv, lookup, 3))
	if err != nil || !sum.Finished {
		t.Fatalf("the run with the limit raised: %+v, %v", sum, err)
	}
	compareSets(t, storedURLs(t, spec.Dir), truthURLs(t, srv, 3))
}
