package spider

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kspider/kspider/resolver"
	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/tools/testweb"
	"github.com/kspider/kspider/urltree"
)

const nodeCrashChildEnv = "KSPIDER_NODE_CRASH_CHILD"

// TestNodeCrashChild is the node process TestNodeCrash kills; it does
// nothing in a normal run. $KSPIDER_NODE_CRASH_CHILD is "dir;dns;ca;seed,...".
// It prints "pages N" whenever the count of pages stored grows.
func TestNodeCrashChild(t *testing.T) {
	spec := os.Getenv(nodeCrashChildEnv)
	if spec == "" {
		t.Skip("only run as TestNodeCrash's child process")
	}
	parts := strings.SplitN(spec, ";", 4)
	dir, dns, caFile, seeds := parts[0], parts[1], parts[2], strings.Split(parts[3], ",")
	res, err := resolver.New(resolver.Config{Servers: []string{dns}, Timeout: 500 * time.Millisecond, Network: "ip4"})
	if err != nil {
		childFail(err)
	}
	cfg := nodeConfigFor(t, dir, seeds, func(ctx context.Context, host string) ([]netip.Addr, error) { return res.Lookup(ctx, host) }, childCAPool(caFile), 3)
	cfg.Logf = nil
	crawlAsChild(cfg, false, nil)
}

// crawlAsChild crawls cfg to the end as a crash test's child process,
// printing "pages N" whenever the pages handed to the store grow and, with
// durable, "durable N" whenever the pages made durable do (the parent
// kills it on those lines); it exits 0 at the end, 3 on an error (on
// stderr). steer, when not nil, runs beside the crawl until it ends (its
// context's end), steering it as kspider ctl would; a Drain it asks for
// ends the run with exit 0 too.
func crawlAsChild(cfg NodeConfig, durable bool, steer func(context.Context, *Node)) {
	n, err := OpenNode(cfg)
	if err != nil {
		childFail(err)
	}
	out := bufio.NewWriter(os.Stdout)
	stop := make(chan struct{})
	go func() {
		var pages, made uint64
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			wrote := false
			if p := n.st.pages.Load(); p != pages {
				pages, wrote = p, true
				fmt.Fprintf(out, "pages %d\n", p)
			}
			if d := n.store.Durable(); durable && d != made {
				made, wrote = d, true
				fmt.Fprintf(out, "durable %d\n", d)
			}
			if wrote {
				out.Flush()
			}
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	steered := make(chan struct{})
	go func() {
		defer close(steered)
		if steer != nil {
			steer(ctx, n)
		}
	}()
	_, err = n.Run(context.Background())
	cancel()
	<-steered
	if errors.Is(err, ErrDrained) {
		err = nil
	}
	close(stop)
	if err := errors.Join(err, n.Close()); err != nil {
		childFail(err)
	}
	os.Exit(0)
}

// childFail ends a crash test's child process on err.
func childFail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(3)
}

// childCAPool is the test web's CA, from the file its parent wrote.
func childCAPool(caFile string) *x509.CertPool {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		childFail(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return pool
}

// TestNodeCrash kills a crawling node with SIGKILL after a random number of
// pages, 10 times over one directory of a 1,000-host web, restarting it each time, then lets it
// finish. Every page stored must be under the id the tree gives its URL
// (the durability order), no page stored twice, and the pages stored are
// exactly the crawlable URLs of the web.
func TestNodeCrash(t *testing.T) {
	if os.Getenv(nodeCrashChildEnv) != "" {
		t.Skip("child")
	}
	var log bytes.Buffer
	// ≥ 1,000 hosts, few pages each (-node.long: 10,000).
	webCfg := testweb.Config{Hosts: 1000, Seed: 13, MaxPages: 4, MeanPageSize: 2000, Seeds: 60, Plain: true}
	if *nodeLong {
		webCfg.Hosts, webCfg.MaxPages, webCfg.Seeds = 10000, 8, 100
	}
	srv, _ := startWeb(t, webCfg, &log)
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "node")
	ca := filepath.Join(tmp, "ca.pem")
	if err := os.WriteFile(ca, srv.CACertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := strings.Join([]string{dir, srv.DNSAddr(), ca, strings.Join(srv.SeedURLs(), ",")}, ";")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	kills, finished := 0, false
	for round := 0; round < 30 && !finished; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestNodeCrashChild$", "-test.v=false")
		cmd.Env = append(os.Environ(), nodeCrashChildEnv+"="+spec)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill after a random number of newly stored pages, or let the
		// last rounds run to the end.
		killAt := uint64(1 + rng.IntN(40))
		if kills >= 10 {
			killAt = 1 << 62
		}
		sc := bufio.NewScanner(stdout)
		var first, last uint64
		killed := false
		for sc.Scan() {
			var p uint64
			if _, err := fmt.Sscanf(sc.Text(), "pages %d", &p); err != nil {
				continue
			}
			if first == 0 {
				first = p
			}
			last = p
			if p-first >= killAt {
				cmd.Process.Kill()
				killed = true
				break
			}
		}
		go func() { _, _ = bufio.NewReader(stdout).WriteTo(new(discard)) }()
		err = cmd.Wait()
		switch {
		case killed:
			kills++
			t.Logf("round %d: killed after %d pages", round, last)
		case err != nil:
			t.Fatalf("round %d: child failed: %v\n%s", round, err, stderr.String())
		default:
			finished = true
			t.Logf("round %d: finished (%d pages this run)", round, last)
		}
	}
	if !finished {
		t.Fatal("the crawl did not finish after 30 rounds")
	}
	if kills < 10 {
		t.Logf("only %d kills: the crawl finished first", kills)
	}

	// Every page is stored under its URL's id in the tree.
	tree, err := urltree.Open(filepath.Join(dir, "urls"), &urltree.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	r, err := storage.OpenReader([]string{filepath.Join(dir, "pages")})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := map[string]bool{}
	var buf []byte
	if err := r.Scan(context.Background(), func(p *storage.Page) error {
		if got[p.URL] {
			t.Errorf("stored twice: %s", p.URL)
		}
		got[p.URL] = true
		buf, err = tree.Get(uint32(p.URLID), buf[:0])
		if err != nil || string(buf) != p.URL {
			t.Errorf("page %s stored under id %d, which the tree gives to %q (%v)", p.URL, p.URLID, buf, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	compareSets(t, got, truthURLs(t, srv, 3))
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
