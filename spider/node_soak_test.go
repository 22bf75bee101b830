package spider

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kspider/kspider/resolver"
	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/spider/robots"
	"github.com/kspider/kspider/spider/scope"
	"github.com/kspider/kspider/spider/urlnorm"
	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/tools/testweb"
	"github.com/kspider/kspider/urltree"
)

// The crash soak: TestNodeCrash's kill -9 and restart, on webs that stress
// what its shallow one cannot. A deep web (few hosts, many pages each, the
// depth limit well inside it) finds most URLs first by a long path and
// later by a shorter one, so URLs are lowered, and pages re-expanded, across
// the kills; a hostile web adds redirects (chains and loops), robots.txt
// denials, error statuses retried with back-off, and stalls. The kills come
// at random moments of three kinds: a few milliseconds to a second after
// the start (also before OpenNode is done), after some pages are handed to
// the store, and right after some pages became durable (the window between
// the store's sync and the scheduler's reports). Then a run to the end, and
// the store is compared with the web's truth: every crawlable page stored,
// nothing beyond the depth or robots.txt, nothing stored twice (also not
// under one id, which a Scan hides as superseded), each page under its
// URL's id.
//
// TestNodeCrashDeep is short rounds in make test; -node.soak=DURATION
// runs TestNodeSoak, rounds of random webs and kill schedules for that long
// (make soak).

var nodeSoak = flag.Duration("node.soak", 0, "run TestNodeSoak, kill -9 rounds on random deep and hostile webs, for this long")

const nodeSoakChildEnv = "KSPIDER_NODE_SOAK_CHILD"

// soakSpec is what the soak's child process crawls.
type soakSpec struct {
	Dir, DNS, CA string
	Log          string // the node's log lines, every run's, appended
	Seeds        []string
	Depth        int
	Hostile      bool     // the default trap filters, with a budget per host
	Exclude      []string // scope.exclude (Vary: this run's only)
	Steer        uint64   // not 0: the seed of this run's pauses, resumes, settings and drain
}

// soakShape is one soak round's web and kill schedule.
type soakShape struct {
	Web     testweb.Config
	Depth   int
	Kills   int
	Hostile bool
	// Vary: each run killed has its own limits.max_depth, from 1 to Depth,
	// and in one of two a scope excluding a host of the web; the run to the
	// end has Depth and no exclude. So kills land in the passes a raised
	// limit and a widened scope make, and in lists dropping URLs queued
	// under the old ones.
	Vary bool
	// Steer: each run killed is also paused, resumed, given other
	// settings and maybe drained at random moments, as kspider ctl does.
	Steer bool
}

// soakBudget is the pages per host of a hostile round: above any regular
// host's pages, resources and trap entries (MaxPages ≤ soakMaxPages), so
// the truth needs no budget.
const soakBudget, soakMaxPages = 200, 100

// TestNodeSoakChild is the node process the soak kills; it does nothing in
// a normal run. It prints "pages N" when the pages handed to the store grow
// and "durable N" when the pages made durable do.
func TestNodeSoakChild(t *testing.T) {
	raw := os.Getenv(nodeSoakChildEnv)
	if raw == "" {
		t.Skip("only run as the soak's child process")
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
	logFile, err := os.OpenFile(spec.Log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		childFail(err)
	}
	fmt.Fprintf(logFile, "--- run of pid %d\n", os.Getpid())
	cfg.Logf = func(f string, a ...any) { fmt.Fprintf(logFile, f+"\n", a...) }
	if spec.Hostile {
		traps := scope.Default()
		traps.MaxPagesPerHost = soakBudget
		cfg.Scope = &traps
		cfg.Collector.MaxBody = 1 << 20
		cfg.Collector.FirstByte, cfg.Collector.ResponseTimeout = 2*time.Second, 4*time.Second
		cfg.Scheduler.MaxRetryAfter, cfg.Scheduler.MaxBackoff = time.Second, 2*time.Second
	}
	if len(spec.Exclude) > 0 {
		sc := *cfg.Scope
		sc.Exclude = spec.Exclude
		cfg.Scope = &sc
	}
	var steer func(context.Context, *Node)
	if spec.Steer != 0 {
		steer = func(ctx context.Context, n *Node) { steerSoak(ctx, n, spec.Steer) }
	}
	crawlAsChild(cfg, true, steer)
}

// steerSoak pauses, resumes, sets the delay and the fetchers of n and,
// once in a while, drains it, at random moments drawn from seed, until ctx
// ends (the run's end).
func steerSoak(ctx context.Context, n *Node, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 5))
	for {
		t := time.NewTimer(time.Duration(rng.IntN(300)) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		switch rng.IntN(10) {
		case 0, 1, 2:
			n.Pause()
		case 3, 4, 5:
			n.Resume()
		case 6:
			n.Set(Setting{"fetchers", fmt.Sprint(1 + rng.IntN(n.maxFetchers()))})
		case 7:
			n.Set(Setting{"delay", fmt.Sprintf("%dms", rng.IntN(300))})
		case 8:
			n.Resume()
			n.Set(Setting{"fetchers", fmt.Sprint(n.maxFetchers())}, Setting{"delay", "100ms"})
		case 9:
			if rng.IntN(4) == 0 {
				n.Drain()
			}
		}
	}
}

// TestNodeCrashDeep is three short soak rounds in make test: a deep plain
// web on which URLs are lowered across the kills, a hostile one (the
// web on which a crash lost a page's re-expansion in 1 run of 3: see
// node_lower.go), and a hostile one whose runs killed have their own
// limits and scope and are steered (Vary, Steer).
func TestNodeCrashDeep(t *testing.T) {
	if os.Getenv(nodeSoakChildEnv) != "" {
		t.Skip("child")
	}
	seed := uint64(time.Now().UnixNano())
	t.Run("plain", func(t *testing.T) {
		soakRound(t, soakShape{Web: testweb.Config{Hosts: 12, Seed: 31, MaxPages: 40, MeanPageSize: 2000, Seeds: 2, Plain: true},
			Depth: 5, Kills: 5}, seed, 3*time.Minute)
	})
	t.Run("hostile", func(t *testing.T) {
		soakRound(t, soakShape{Web: testweb.Config{Hosts: 39, Seed: 335432850, MaxPages: 45, MeanPageSize: 2000, Seeds: 2},
			Depth: 5, Kills: 5, Hostile: true}, seed+1, 5*time.Minute)
	})
	t.Run("varied", func(t *testing.T) {
		soakRound(t, soakShape{Web: testweb.Config{Hosts: 30, Seed: 77, MaxPages: 30, MeanPageSize: 2000, Seeds: 2},
			Depth: 4, Kills: 6, Hostile: true, Vary: true, Steer: true}, seed+2, 5*time.Minute)
	})
}

// TestNodeSoak runs soak rounds for -node.soak, each on a web and with a
// kill schedule drawn at random (the seed is logged: a failure can be
// run again with -node.soak.seed, and its round alone, again and again,
// with -node.soak.round).
func TestNodeSoak(t *testing.T) {
	if os.Getenv(nodeSoakChildEnv) != "" {
		t.Skip("child")
	}
	if *nodeSoak <= 0 {
		t.Skip("run with -node.soak=DURATION (make soak)")
	}
	end := time.Now().Add(*nodeSoak)
	seed := *nodeSoakSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("soak seed %d (-node.soak.seed)", seed)
	// A failed round keeps its evidence and the soak goes on: one run
	// may find more than one bug.
	for i := 0; time.Now().Before(end); i++ {
		round := i
		if *nodeSoakRound >= 0 {
			round = *nodeSoakRound // the same round again and again: its kills land at other moments
		}
		rng := rand.New(rand.NewPCG(seed, uint64(round)))
		sh := soakShape{Kills: 3 + rng.IntN(8), Hostile: rng.IntN(3) == 0, Vary: rng.IntN(3) == 0, Steer: rng.IntN(3) == 0}
		sh.Web = testweb.Config{Hosts: 5 + rng.IntN(40), Seed: rng.Int64N(1 << 30), MaxPages: 20 + rng.IntN(100),
			MeanPageSize: 2000, Seeds: 1 + rng.IntN(3), Plain: !sh.Hostile}
		sh.Depth = 4 + rng.IntN(5)
		if sh.Hostile {
			// Every hostile kind; the budget bounds a host's pages.
			sh.Web.Hosts += 20
			sh.Web.MaxPages = min(sh.Web.MaxPages, soakMaxPages)
			sh.Depth = min(sh.Depth, 5)
		}
		t.Run(fmt.Sprintf("round%d", i), func(t *testing.T) {
			soakRound(t, sh, seed+uint64(round)<<32, 10*time.Minute)
		})
	}
}

var (
	nodeSoakSeed  = flag.Uint64("node.soak.seed", 0, "TestNodeSoak's random seed (0: the time)")
	nodeSoakRound = flag.Int("node.soak.round", -1, "TestNodeSoak runs only this round of -node.soak.seed, again and again")
)

// soakRound crawls sh's web in a child process, killing it sh.Kills times,
// then lets it finish within limit, and checks the store.
func soakRound(t *testing.T, sh soakShape, seed uint64, limit time.Duration) {
	t.Logf("shape %+v, kill seed %d", sh, seed)
	var log bytes.Buffer
	srv, _ := startWeb(t, sh.Web, &log)
	tmp := t.TempDir()
	spec := soakSpec{Dir: filepath.Join(tmp, "node"), DNS: srv.DNSAddr(), CA: filepath.Join(tmp, "ca.pem"), Log: filepath.Join(tmp, "node.log"),
		Seeds: srv.SeedURLs(), Depth: sh.Depth, Hostile: sh.Hostile}
	if err := os.WriteFile(spec.CA, srv.CACertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	rng := rand.New(rand.NewPCG(seed, 11))
	hosts := srv.Web().Hosts()
	kills := 0
	for run := 0; ; run++ {
		last := kills >= sh.Kills
		spec.Depth, spec.Exclude, spec.Steer = sh.Depth, nil, 0
		if sh.Steer && !last {
			spec.Steer = rng.Uint64() | 1
		}
		if sh.Vary && !last {
			spec.Depth = 1 + rng.IntN(sh.Depth)
			if rng.IntN(2) == 0 {
				spec.Exclude = []string{`^https?://` + regexp.QuoteMeta(hosts[rng.IntN(len(hosts))].Name) + `[:/]`}
			}
		}
		raw, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		var k soakKill
		if !last {
			k = soakKill{mode: rng.IntN(3)}
			switch k.mode {
			case killAfterTime:
				k.n = uint64(rng.IntN(3000))
				if rng.IntN(3) == 0 {
					k.n = uint64(rng.IntN(30)) // very early
				}
			default:
				k.n = uint64(1 + rng.IntN(80))
			}
		}
		killed, what, stderr, err := soakRun(ctx, raw, k, last)
		if sh.Vary || sh.Steer {
			what += fmt.Sprintf(", max_depth %d, exclude %q, steer %d", spec.Depth, spec.Exclude, spec.Steer)
		}
		switch {
		case err != nil:
			t.Fatalf("run %d (%s): %v\n%s", run, what, err, tail(stderr, 4000))
		case killed:
			kills++
			t.Logf("run %d: killed %s", run, what)
		case last:
			t.Logf("run %d: finished (%s)", run, what)
		default:
			t.Logf("run %d: finished before its kill (%s)", run, what)
		}
		if !killed && (last || !sh.Vary && !sh.Steer) {
			break
		}
		if !killed {
			kills++ // a run of Vary's own limits finished, or Steer drained it: the last one is still to come
		}
	}
	soakCheck(t, srv, spec, sh)
}

const (
	killAfterTime    = iota // n ms after the start
	killAfterPages          // after n more pages handed to the store
	killAfterDurable        // right after n more pages became durable
)

type soakKill struct {
	mode int
	n    uint64
}

// soakRun runs the child once; unless last it kills it as k says. It
// returns whether it killed it, what happened, and the child's stderr.
func soakRun(ctx context.Context, spec []byte, k soakKill, last bool) (bool, string, []byte, error) {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestNodeSoakChild$", "-test.v=false")
	cmd.Env = append(os.Environ(), nodeSoakChildEnv+"="+string(spec))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return false, "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return false, "", nil, err
	}
	killed := false
	var timer *time.Timer
	if !last && k.mode == killAfterTime {
		timer = time.AfterFunc(time.Duration(k.n)*time.Millisecond, func() { cmd.Process.Kill() })
	}
	sc := bufio.NewScanner(stdout)
	var pages0, durable0, pages, durable uint64
	seenP, seenD := false, false
	for sc.Scan() {
		var v uint64
		switch {
		case sscan(sc.Text(), "pages %d", &v):
			if !seenP {
				pages0, seenP = v, true
			}
			pages = v
			if !last && k.mode == killAfterPages && pages-pages0+1 >= k.n {
				cmd.Process.Kill()
				killed = true
			}
		case sscan(sc.Text(), "durable %d", &v):
			if !seenD {
				durable0, seenD = v, true
			}
			durable = v
			if !last && k.mode == killAfterDurable && durable-durable0+1 >= k.n {
				cmd.Process.Kill()
				killed = true
			}
		}
		if killed {
			break
		}
	}
	go func() { _, _ = bufio.NewReader(stdout).WriteTo(new(discard)) }()
	err = cmd.Wait()
	if timer != nil && !timer.Stop() {
		// The timer fired: killed, unless the run ended first.
		ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
		killed = ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
	}
	what := fmt.Sprintf("%s %d: %d pages, %d durable", [...]string{"after ms", "after pages", "after durable"}[k.mode], k.n, pages, durable)
	if last {
		what = fmt.Sprintf("%d pages, %d durable", pages, durable)
	}
	if ctx.Err() != nil {
		return false, what, stderr.Bytes(), fmt.Errorf("out of time: %w", ctx.Err())
	}
	if killed {
		return true, what, stderr.Bytes(), nil
	}
	return false, what, stderr.Bytes(), err
}

func sscan(s, format string, v *uint64) bool {
	_, err := fmt.Sscanf(s, format, v)
	return err == nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// soakCheck compares the store sh's crawl left in spec.Dir with the web's
// truth, and checks the scheduler has nothing unfinished.
func soakCheck(t *testing.T, srv *testweb.Server, spec soakSpec, sh soakShape) {
	t.Helper()
	truth := srv.Truth()
	agent := robots.ProductToken(DefaultUserAgent)
	want := map[string]testweb.Doc{} // must be stored
	may := map[string]bool{}         // may be stored
	for _, d := range truth.Crawlable(agent, sh.Depth, 0) {
		c, err := urlnorm.Canonical(nil, d.URL, nil)
		if err != nil {
			t.Fatalf("truth URL %q has no canonical form: %v", d.URL, err)
		}
		may[c] = true
		// Traps and error statuses retried to the end are never stored;
		// a redirect to a trap is (it is stored as a redirect).
		if d.Kind == "trap" || d.Kind == "dns-failure" || d.Status == 429 || d.Status/100 == 5 {
			continue
		}
		want[c] = d
	}
	tree, err := urltree.Open(filepath.Join(spec.Dir, "urls"), &urltree.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	r, err := storage.OpenReader([]string{filepath.Join(spec.Dir, "pages")})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := map[string]bool{}
	web := testweb.Generate(sh.Web)
	hostile := 0 // stored beyond the truth on hostile hosts
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
		if !may[p.URL] {
			// A hostile host serves what the truth does not describe (a
			// stalled page cut by the server's close is a page, with
			// links); robots.txt holds there too.
			if h, ok := web.Host(hostName(hostKey(p.URL))); ok && h.Behaviour != testweb.BehaviourNormal && truth.Allowed(agent, p.URL) {
				hostile++
			} else {
				t.Errorf("stored beyond the truth (depth %d, robots.txt): %s (status %d)", sh.Depth, p.URL, p.Status)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.Superseded > 0 || st.Damaged() {
		t.Errorf("store: %d records superseded (pages stored twice under one id), damage %d %v", st.Superseded, st.Damage, st.Errors)
	}
	sched, err := scheduler.Open(filepath.Join(spec.Dir, "sched"), scheduler.Config{Clock: SoloClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Close()
	over := soakBudgets(t, sched, want, sh)
	var missing []string
	for u, d := range want {
		if !got[u] && !over[hostKey(u)] {
			missing = append(missing, fmt.Sprintf("%s (%s %d, depth %d)", u, d.Kind, d.Status, d.Depth))
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("%d of %d crawlable URLs not stored: %s", len(missing), len(want), strings.Join(head(missing, 20), "\n\t"))
	}
	unfinished := 0
	for id := uint32(0); uint64(id) < sched.Len(); id++ {
		if sched.URL(id).State.Unfinished() {
			unfinished++
		}
	}
	if unfinished > 0 {
		t.Errorf("%d URLs unfinished in the scheduler after the crawl finished", unfinished)
	}
	t.Logf("%d stored (%d beyond the truth on hostile hosts), %d crawlable to store, %d URLs in the tree", len(got), hostile, len(want), tree.Len())
	if t.Failed() {
		keep := filepath.Join(os.TempDir(), fmt.Sprintf("kspider-soak-%d", time.Now().UnixNano()))
		if err := exec.Command("cp", "-a", filepath.Dir(spec.Dir), keep).Run(); err == nil {
			t.Logf("the data directory and the node's log are kept in %s", keep)
		}
	}
}

// soakBudgets checks a hostile round's per-host budgets: each host's count
// of admitted URLs (the scheduler's, persistent) is the number of its URLs
// the scheduler has, so a crash neither spends the budget on URLs it lost
// nor forgets URLs spent. It returns the hosts with more crawlable URLs than
// the budget, and those whose budget is spent on URLs the scheduler has:
// which of them are stored depends on the order of the crawl. (A host's
// links to pages robots.txt denies are admitted against its budget too,
// and the truth's crawlable URLs leave them out: a session-id host with
// many denied paths spent its budget with under soakBudget crawlable
// URLs, the same ones left out at every replay, kill or none.)
func soakBudgets(t *testing.T, sched *scheduler.Scheduler, want map[string]testweb.Doc, sh soakShape) map[string]bool {
	t.Helper()
	over := map[string]bool{}
	if !sh.Hostile {
		return over
	}
	perHost := map[string]int{}
	for u := range want {
		perHost[hostKey(u)]++
	}
	for h, n := range perHost {
		if n > soakBudget {
			over[h] = true
		}
	}
	urls := map[uint32]int{}
	for id := uint32(0); uint64(id) < sched.Len(); id++ {
		if u := sched.URL(id); u.State != scheduler.Absent {
			urls[u.Host]++
		}
	}
	for h := range sched.Hosts() {
		info, err := sched.HostInfo(uint32(h))
		if err != nil {
			t.Fatal(err)
		}
		if int(info.Pages) != urls[uint32(h)] {
			t.Errorf("host %s: %d URLs admitted against its budget, %d in the scheduler", info.Name, info.Pages, urls[uint32(h)])
		}
		if over[info.Name] && urls[uint32(h)] < soakBudget {
			t.Errorf("host %s: %d crawlable URLs, only %d of a budget of %d admitted", info.Name, perHost[info.Name], urls[uint32(h)], soakBudget)
		}
		if int(info.Pages) == urls[uint32(h)] && urls[uint32(h)] >= soakBudget {
			over[info.Name] = true
		}
	}
	return over
}
