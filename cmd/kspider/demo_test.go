package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kspider/kspider/spider/urlnorm"
	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/tools/testweb"
)

// demoJSON runs `kspider demo --json` in-process and decodes its report.
func demoJSON(t *testing.T, args ...string) (int, *demoReport, string) {
	t.Helper()
	code, out, errOut := runCmd(t, "", append([]string{"demo", "--json"}, args...)...)
	var rep demoReport
	if code == 0 || strings.HasPrefix(out, "{") {
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("demo --json: exit %d, output not JSON: %v\n%s\n%s", code, err, out, errOut)
		}
	}
	return code, &rep, errOut
}

// checkDemo checks a report against the web's ground truth and audit.
func checkDemo(t *testing.T, rep *demoReport, what string) {
	t.Helper()
	if rep.Interrupted || rep.Missing != 0 || rep.Extra != 0 || rep.Store.Twice != 0 || rep.Crawlable == 0 ||
		rep.Audit.DuplicateFetches != 0 || rep.Audit.Forbidden != 0 || rep.Audit.MaxConnsPerHost > 1 {
		t.Errorf("%s: interrupted %v, %d crawlable, %d missing, %d extra, %d stored twice, audit %+v",
			what, rep.Interrupted, rep.Crawlable, rep.Missing, rep.Extra, rep.Store.Twice, rep.Audit)
	}
}

// TestDemoContinuesFinishedCrawl: a second demo on a finished --dir
// fetches nothing and still reports every page stored, matching the truth.
func TestDemoContinuesFinishedCrawl(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	args := []string{"--plain", "--hosts", "25", "--seed", "4", "--depth", "2", "--dir", dir}
	code, rep, errOut := demoJSON(t, args...)
	if code != 0 {
		t.Fatalf("first demo: exit %d\n%s", code, errOut)
	}
	checkDemo(t, rep, "first demo")
	if rep.Store.Pages == 0 || rep.Store.Earlier != 0 {
		t.Errorf("first demo: %d pages stored, %d by earlier runs", rep.Store.Pages, rep.Store.Earlier)
	}
	code, rep2, errOut := demoJSON(t, args...)
	if code != 0 {
		t.Fatalf("second demo: exit %d\n%s", code, errOut)
	}
	checkDemo(t, rep2, "second demo")
	if rep2.Crawl.Fetched != 0 || rep2.Store.Pages != rep.Store.Pages || rep2.Store.Earlier != rep.Store.Pages {
		t.Errorf("second demo fetched %d, store %d pages (%d earlier), want 0 and %d", rep2.Crawl.Fetched,
			rep2.Store.Pages, rep2.Store.Earlier, rep.Store.Pages)
	}
	if code, _, errOut := runCmd(t, "", "demo", "--hosts", "26", "--dir", dir); code != 2 || !strings.Contains(errOut, "another web") {
		t.Errorf("demo on a directory of another web: exit %d, want 2:\n%s", code, errOut)
	}
}

// TestDemoDepthZero: --depth 0 fetches the seeds only.
func TestDemoDepthZero(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	code, rep, errOut := demoJSON(t, "--plain", "--hosts", "30", "--seed", "2", "--depth", "0", "--dir", dir, "--status", "127.0.0.1:0")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if !statusLine.MatchString(errOut) { // the demo is a node like any other: it has the status page
		t.Errorf("no status page announced:\n%s", errOut)
	}
	checkDemo(t, rep, "depth 0")
	st, err := readDemoState(dir)
	if err != nil || st == nil {
		t.Fatalf("demo state: %v", err)
	}
	web := testweb.Generate(testweb.Config{Hosts: st.Hosts, Seed: st.Seed, Plain: st.Plain})
	seeds := map[string]bool{}
	for _, s := range web.SeedURLs(testweb.Ports{HTTP: st.HTTPPort, HTTPS: st.HTTPSPort}) {
		c, err := urlnorm.Canonical(nil, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		seeds[c] = true
	}
	got := storedPages(t, dir)
	if len(got) == 0 || len(got) > len(seeds) {
		t.Errorf("%d pages stored for %d seeds", len(got), len(seeds))
	}
	for u := range got {
		if !seeds[u] {
			t.Errorf("stored %s, not a seed", u)
		}
	}
}

// storedPages reads the demo directory's pages: URL -> times stored.
func storedPages(t *testing.T, dir string) map[string]int {
	t.Helper()
	r, err := storage.OpenReader([]string{filepath.Join(dir, "pages")})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := map[string]int{}
	if err := r.Scan(context.Background(), func(p *storage.Page) error {
		got[p.URL]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

const demoChildEnv = "KSPIDER_DEMO_CHILD"

// TestDemoChild is the kspider process TestDemoInterruptAndKill signals; it
// does nothing in a normal run. $KSPIDER_DEMO_CHILD holds the arguments,
// separated by spaces.
func TestDemoChild(t *testing.T) {
	args := os.Getenv(demoChildEnv)
	if args == "" {
		t.Skip("only run as TestDemoInterruptAndKill's child process")
	}
	ctx, stop := signalContext(os.Stderr)
	code := run(ctx, env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, strings.Fields(args))
	stop()
	os.Exit(code)
}

var progressPagesRE = regexp.MustCompile(`\bpages ([0-9,]+)`)

// demoChild is `kspider demo` running as a child process.
type demoChild struct {
	cmd    *exec.Cmd
	out    bytes.Buffer
	stderr bytes.Buffer // the drain goroutine's until done is closed
	done   chan struct{}
}

// wait reads the child's stderr to its end, then waits for it.
func (c *demoChild) wait() error {
	<-c.done
	return c.cmd.Wait()
}

// startDemoChild starts `kspider demo` as a child process and returns once
// its progress line shows at least one page stored, with that count.
func startDemoChild(t *testing.T, args string) (*demoChild, uint64) {
	t.Helper()
	c := &demoChild{cmd: exec.Command(os.Args[0], "-test.run=^TestDemoChild$", "-test.v=false"), done: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), demoChildEnv+"="+args)
	c.cmd.Stdout = &c.out
	pipe, err := c.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(pipe)
	var pages uint64
	for sc.Scan() {
		c.stderr.WriteString(sc.Text() + "\n")
		if m := progressPagesRE.FindStringSubmatch(sc.Text()); m != nil {
			if pages, _ = strconv.ParseUint(strings.ReplaceAll(m[1], ",", ""), 10, 64); pages > 0 {
				break
			}
		}
	}
	if pages == 0 {
		c.cmd.Wait()
		t.Fatalf("the demo stored nothing before it ended:\n%s", c.stderr.String())
	}
	go func() { // keep draining, so the child never blocks on stderr; kept for a failure's evidence
		defer close(c.done)
		for sc.Scan() {
			c.stderr.WriteString(sc.Text() + "\n")
		}
	}()
	return c, pages
}

// TestDemoInterruptAndKill: Ctrl-C (SIGINT) stops a demo with exit 1
// saying it was interrupted, every page it counted stored; a kill -9 next;
// then the same demo command continues to the end, and the store holds the
// truth, no page twice, nothing stored before the interruptions lost.
func TestDemoInterruptAndKill(t *testing.T) {
	if os.Getenv(demoChildEnv) != "" {
		t.Skip("child")
	}
	dir := filepath.Join(t.TempDir(), "demo")
	args := "demo --plain --hosts 150 --seed 6 --depth 4 --status off --dir " + dir

	webLog := filepath.Join(t.TempDir(), "web.log")
	evidence := map[string]*string{}
	var afterKill string // the data directory's copy once the kill left it
	defer func() {
		if t.Failed() {
			keepDemoEvidence(t, evidence, webLog, afterKill)
		}
	}()

	child, pages := startDemoChild(t, args)
	if err := child.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := child.wait()
	out1 := child.out.String() + child.stderr.String()
	evidence["interrupted.out"] = &out1
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(child.out.String(), "INTERRUPTED") {
		t.Fatalf("after SIGINT: %v, want exit 1 and a summary saying INTERRUPTED:\n%s", err, child.out.String())
	}
	stored := storedPages(t, dir)
	if uint64(len(stored)) < pages {
		t.Fatalf("the demo counted %d pages stored, the store holds %d", pages, len(stored))
	}
	t.Logf("interrupted with %d pages stored", len(stored))

	child, pages2 := startDemoChild(t, args)
	child.cmd.Process.Kill()
	child.wait()
	out2 := child.stderr.String()
	evidence["killed.out"] = &out2
	// The data directory as the kill left it: what the continued run
	// started from, for a failure's evidence.
	afterKill = filepath.Join(t.TempDir(), "afterkill")
	if err := copyTree(dir, afterKill); err != nil {
		t.Fatal(err)
	}
	before := storedPages(t, dir)
	t.Logf("killed with %d pages stored (%d this run)", len(before), pages2)

	code, rep, errOut := demoJSON(t, append(strings.Fields(args)[1:], "-v", "--log", webLog)...)
	evidence["continued.out"] = &errOut
	if code != 0 {
		t.Fatalf("continued demo: exit %d\n%s", code, errOut)
	}
	excused := refetchesAfterFailure(t, webLog, errOut)
	rep.Audit.DuplicateFetches -= excused
	checkDemo(t, rep, "continued demo")
	if t.Failed() {
		t.Logf("%d refetches excused, each after a failure the demo logged for its URL", excused)
		logRepeats(t, errOut, webLog)
	}
	after := storedPages(t, dir)
	for u, n := range after {
		if n > 1 {
			t.Errorf("stored %d times: %s", n, u)
		}
	}
	for u := range before {
		if after[u] == 0 {
			t.Errorf("stored before the kill, gone after: %s", u)
		}
	}
	if rep.Store.Earlier < len(before) {
		t.Errorf("the report says %d pages by earlier runs, %d were stored", rep.Store.Earlier, len(before))
	}
}

// keepDemoEvidence keeps a failed TestDemoInterruptAndKill's outputs and
// the web's log of the last run in $KSPIDER_KEEP_LOGS, when set: a failure
// seen once under load (pages fetched twice) could not be looked into, its
// logs gone with the test's temporary directory.
func keepDemoEvidence(t *testing.T, evidence map[string]*string, webLog, afterKill string) {
	keep := os.Getenv("KSPIDER_KEEP_LOGS")
	if keep == "" {
		t.Log("set KSPIDER_KEEP_LOGS=DIR to keep the demo's outputs and the web's log of a failure")
		return
	}
	err := os.MkdirAll(keep, 0o755)
	dir := ""
	if err == nil {
		dir, err = os.MkdirTemp(keep, "TestDemoInterruptAndKill-")
	}
	if err != nil {
		t.Log("keeping the evidence:", err)
		return
	}
	for name, text := range evidence {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(*text), 0o644); err != nil {
			t.Log("keeping the evidence:", err)
		}
	}
	if b, err := os.ReadFile(webLog); err == nil {
		err = os.WriteFile(filepath.Join(dir, "web.log"), b, 0o644)
		if err != nil {
			t.Log("keeping the evidence:", err)
		}
	}
	if afterKill != "" {
		if err := copyTree(afterKill, filepath.Join(dir, "afterkill")); err != nil {
			t.Log("keeping the evidence:", err)
		}
	}
	t.Logf("the demo's outputs, the web's log and the data directory after the kill are kept in %s", dir)
}

// copyTree copies the regular files and directories under src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case !d.Type().IsRegular():
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
}

// TestDemoBadDir: a --dir that is a file, or whose demo.json is damaged,
// or that holds another kind of crawl, is exit 1 naming it.
// TestDemoBadStatus: a --status that is no address is a usage error, as
// for run, before anything starts; the demo warned and crawled on without
// its page, exit 0.
func TestDemoBadStatus(t *testing.T) {
	for _, bad := range []string{"bogus", "127.0.0.1:99999", "localhost"} {
		code, _, errOut := runCmd(t, "", "demo", "--plain", "--hosts", "3", "--status", bad)
		if code != 2 || !strings.Contains(errOut, fmt.Sprintf("kspider demo: --status: %q", bad)) || strings.Contains(errOut, "generating") {
			t.Errorf("demo --status %s: exit %d, want 2 naming it before the web starts:\n%s", bad, code, errOut)
		}
	}
}

// TestDemoBadLog: a --log file that cannot be written fails the demo
// before it starts, naming the flag; it was found out after the whole
// crawl, whose summary was then not printed.
func TestDemoBadLog(t *testing.T) {
	tmp := t.TempDir()
	for _, bad := range []string{tmp, filepath.Join(tmp, "none", "x.log")} {
		code, out, errOut := runCmd(t, "", "demo", "--plain", "--hosts", "3", "--status", "off", "--log", bad)
		if code != 1 || !strings.Contains(errOut, "kspider demo: --log: ") || !strings.Contains(errOut, bad) || strings.Contains(errOut, "generating") {
			t.Errorf("demo --log %s: exit %d, want 1 naming it before the web starts:\n%s%s", bad, code, out, errOut)
		}
	}
}

func TestDemoBadDir(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCmd(t, "", "demo", "--plain", "--hosts", "3", "--dir", file); code != 1 || !strings.Contains(errOut, file) {
		t.Errorf("--dir is a file: exit %d, want 1 naming it:\n%s", code, errOut)
	}
	bad := filepath.Join(tmp, "bad")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, demoStateFile), []byte(`{"version":1,"hosts":3,"http_port":99999}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCmd(t, "", "demo", "--plain", "--hosts", "3", "--dir", bad); code != 1 || !strings.Contains(errOut, demoStateFile) {
		t.Errorf("damaged demo.json: exit %d, want 1 naming it:\n%s", code, errOut)
	}
	other := filepath.Join(tmp, "other")
	if err := os.MkdirAll(filepath.Join(other, "urls"), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCmd(t, "", "demo", "--plain", "--hosts", "3", "--dir", other); code != 1 || !strings.Contains(errOut, "not a demo's") {
		t.Errorf("a kspider run directory: exit %d, want 1:\n%s", code, errOut)
	}
}

// refetchesAfterFailure counts the refetches in the web's log, as the demo
// counts them (testweb.Refetches: asked again after a normal answer), that
// follow a failure the demo's -v log (errOut) gives for the same URL
// ("fetch URL: timeout: ..."): the server answered, but so late for a
// loaded machine that the demo had given up (3 s to the first byte, 2 s
// between reads), or the answer was lost on the way, and asking again was
// a retry, not a duplicate. Each logged failure excuses one refetch of its
// URL. It read the demo's list of refetched URLs, which stops at 10: with
// 12 refetches, 10 listed and all after a timeout, 2 were never excused.
func refetchesAfterFailure(t *testing.T, webLog, errOut string) int {
	t.Helper()
	b, err := os.ReadFile(webLog)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := testweb.ReadLog(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	_, again := testweb.Refetches(entries, len(entries))
	return excusedRefetches(again, errOut)
}

// excusedRefetches is how many of the refetches in again follow a failure
// errOut logs for their URL, one refetch per failure.
func excusedRefetches(again []testweb.URLCount, errOut string) int {
	failed := map[string]int{}
	for _, line := range strings.Split(errOut, "\n") {
		i := strings.Index(line, "fetch ")
		if i < 0 || i > 0 && line[i-1] != ' ' {
			continue
		}
		if raw, _, ok := strings.Cut(line[i+len("fetch "):], ": "); ok {
			if u, err := url.Parse(raw); err == nil && u.Host != "" {
				failed[u.Scheme+"://"+u.Hostname()+u.RequestURI()]++
			}
		}
	}
	n := 0
	for _, d := range again {
		n += min(d.Count-1, failed[d.URL])
	}
	return n
}

// logRepeats logs, for a failed check, what the demo said of the URLs it
// fetched more than once, or missed, or stored though not in the truth,
// and the web's log of their hosts (requests and connections, times in ms
// from the first), so that a failure seen once under load says whether the
// client had given up on the first answer (a timeout) or asked twice for
// one it got, and whether a missing page was asked for at all.
func logRepeats(t *testing.T, errOut, webLog string) {
	t.Helper()
	hosts := map[string]bool{}
	for _, line := range strings.Split(errOut, "\n") {
		if strings.Contains(line, "audit:") || strings.Contains(line, "fetched ") && strings.Contains(line, " times: ") ||
			strings.Contains(line, "crawlable but not stored: ") || strings.Contains(line, "stored but not in the truth: ") {
			t.Log(line)
			if u, err := url.Parse(line[strings.LastIndex(line, " ")+1:]); err == nil && u.Host != "" {
				hosts[u.Hostname()] = true
			}
		}
	}
	for _, line := range strings.Split(errOut, "\n") {
		for h := range hosts {
			if strings.Contains(line, "://"+h) && !strings.Contains(line, " times: ") {
				t.Log("demo: " + line)
			}
		}
	}
	f, err := os.Open(webLog)
	if err != nil {
		t.Log(err)
		return
	}
	defer f.Close()
	entries, err := testweb.ReadLog(f)
	if err != nil || len(entries) == 0 {
		t.Log("web log:", err)
		return
	}
	t0, conns := entries[0].Start, map[string]bool{} // server address and conn id
	ms := func(ns int64) float64 { return float64(ns-t0) / 1e6 }
	lines := 0
	for _, e := range entries {
		if e.Kind == "req" && hosts[e.Host] && lines < 300 {
			lines++
			conns[fmt.Sprint(e.Server, e.Conn)] = true
			t.Logf("web: req conn %d %s%s status %d %.1f-%.1f ms %s", e.Conn, e.Host, e.Target, e.Status, ms(e.Start), ms(e.End), e.Note)
		}
	}
	for _, e := range entries {
		if e.Kind == "conn" && conns[fmt.Sprint(e.Server, e.Conn)] {
			t.Logf("web: conn %d %s %.1f-%.1f ms, %d requests %s", e.Conn, e.Server, ms(e.Start), ms(e.End), e.Requests, e.Note)
		}
	}
}

// TestExcusedRefetches: a refetch is excused by a failure logged for its
// URL, whatever its kind, one per failure; refetches past the demo's list
// of ten count too.
func TestExcusedRefetches(t *testing.T) {
	log := "fetch http://a.th:37365/i.png: timeout: read tcp 1->2: i/o timeout\n" +
		"demo: fetch https://b.net:42691/c/: timeout: read tcp 1->2: i/o timeout\n" +
		"fetch https://b.net:42691/c/: reset: read tcp 1->2: connection reset by peer\n" +
		"x fetched 3 times: https://b.net/c/\n"
	again := []testweb.URLCount{{URL: "http://a.th/i.png", Count: 2}, {URL: "https://b.net/c/", Count: 3}}
	if n := excusedRefetches(again, log); n != 3 {
		t.Errorf("all after failures: %d, want 3", n)
	}
	again = append(again, testweb.URLCount{URL: "http://c.th/", Count: 2})
	if n := excusedRefetches(again, log); n != 3 {
		t.Errorf("one without a failure: %d excused, want 3", n)
	}
	if n := excusedRefetches([]testweb.URLCount{{URL: "http://a.th/i.png", Count: 4}}, log); n != 1 {
		t.Errorf("three refetches after one failure: %d excused, want 1", n)
	}
	var many []testweb.URLCount
	var manyLog strings.Builder
	for i := range 12 {
		many = append(many, testweb.URLCount{URL: fmt.Sprintf("http://h%d.th/", i), Count: 2})
		fmt.Fprintf(&manyLog, "fetch http://h%d.th:80/: timeout: i/o timeout\n", i)
	}
	if n := excusedRefetches(many, manyLog.String()); n != 12 {
		t.Errorf("twelve after timeouts: %d excused, want 12", n)
	}
}
