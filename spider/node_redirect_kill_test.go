package spider

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

const redirectKillChildEnv = "KSPIDER_REDIRECT_KILL_CHILD"

// TestNodeRedirectKillChild is the node TestNodeRedirectChainKilled kills;
// it does nothing in a normal run. $KSPIDER_REDIRECT_KILL_CHILD is
// "dir;seed".
func TestNodeRedirectKillChild(t *testing.T) {
	spec := os.Getenv(redirectKillChildEnv)
	if spec == "" {
		t.Skip("only run as TestNodeRedirectChainKilled's child process")
	}
	dir, seed, _ := strings.Cut(spec, ";")
	cfg := hostileConfig(t, dir, []string{seed}, 1)
	cfg.Logf = nil
	cfg.Lookup = func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	crawlAsChild(cfg, false, nil)
}

// TestNodeRedirectChainKilled: a node killed (kill -9) after each page of
// an endless redirect chain, and run again each time, follows it no
// further than one run would. Counted in memory, every kill started the
// count again, and a node killed in a loop followed the chain without end.
func TestNodeRedirectChainKilled(t *testing.T) {
	if os.Getenv(redirectKillChildEnv) != "" {
		t.Skip("child")
	}
	web := startHostile(t, func(w http.ResponseWriter, r *http.Request, web *hostileWeb) {
		var k int
		fmt.Sscanf(r.URL.Path[min(3, len(r.URL.Path)):], "%d", &k)
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
		case "/":
			htmlLinks(w, "/r/0")
		default:
			http.Redirect(w, r, fmt.Sprintf("/r/%d", k+1), http.StatusFound)
		}
	})
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kills := 0
	for run := 0; run < 40; run++ {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestNodeRedirectKillChild$", "-test.v=false")
		cmd.Env = append(os.Environ(), redirectKillChildEnv+"="+dir+";"+web.url("main.test", "/"))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Killed as soon as this run has handed a page to the store: a
		// hop or two of the chain per run.
		killed, sc := false, bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "pages ") {
				cmd.Process.Kill()
				killed = true
				break
			}
		}
		err = cmd.Wait()
		if !killed {
			if err != nil {
				t.Fatalf("run %d: %v", run, err)
			}
			break // the crawl ended
		}
		kills++
		if ctx.Err() != nil {
			t.Fatal("out of time")
		}
	}
	if kills < 3 {
		t.Fatalf("killed %d times: the chain was crawled in too few runs to tell", kills)
	}
	t.Logf("killed %d times", kills)
	got := storedURLs(t, dir)
	for k := 0; k <= maxRedirectHops+10; k++ {
		u := web.url("main.test", fmt.Sprintf("/r/%d", k))
		if k > maxRedirectHops && got[u] {
			t.Errorf("%s stored: %d redirects in a row followed over the kills", u, k)
		}
		if k <= maxRedirectHops && !got[u] {
			t.Errorf("%s not stored", u)
		}
	}
}
