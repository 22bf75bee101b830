package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kspider/kspider/tools/testweb"
)

func runTest(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"serve", "--help"}, {"audit", "--help"}} {
		code, out, errs := runTest(t, context.Background(), args...)
		if code != 0 || !strings.Contains(out+errs, "usage: testweb") {
			t.Errorf("%v: exit %d, %q %q", args, code, out, errs)
		}
	}
	if code, _, _ := runTest(t, context.Background(), "serve", "--bogus"); code != 2 {
		t.Errorf("bad flag: exit %d, want 2", code)
	}
	// Negative values were taken as the defaults. The context is done, so
	// a regression serves nothing for long.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, flag := range [][]string{{"--max-pages", "-1"}, {"--seeds", "-1"}, {"--slow", "-1s"}, {"--stall", "-1ms"}} {
		args := append([]string{"serve", "--hosts", "3", "--http", "127.0.0.1:0", "--https", "127.0.0.1:0", "--dns", ""}, flag...)
		if code, _, errs := runTest(t, done, args...); code != 2 || !strings.Contains(errs, flag[0]) {
			t.Errorf("%v: exit %d, %s", flag, code, errs)
		}
	}
}

func TestServeUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	code, out, errs := runTest(t, ctx, "--hosts", "50", "--http", "127.0.0.1:0", "--https", "127.0.0.1:0", "--dns", "127.0.0.1:0")
	if code != 0 || !strings.Contains(out, "seeds:") || !strings.Contains(out, "dns   127.0.0.1:") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}

func TestAuditCommand(t *testing.T) {
	dir := t.TempDir()
	log := dir + "/requests.log"
	lines := `{"ev":"req","conn":1,"scheme":"http","server":"127.1.0.1:80","client":"127.0.0.2:5000","start":100,"end":200,"host":"a.th","method":"GET","target":"/","status":200,"bytes":10}
{"ev":"req","conn":2,"scheme":"http","server":"127.1.0.1:80","client":"127.0.0.2:5001","start":150,"end":250,"host":"a.th","method":"GET","target":"/","status":200,"bytes":10,"disallowed":true}
{"ev":"conn","conn":1,"scheme":"http","server":"127.1.0.1:80","client":"127.0.0.2:5000","start":90,"end":300,"bytes":99,"requests":1}
{"ev":"conn","conn":2,"scheme":"http","server":"127.1.0.1:80","client":"127.0.0.2:5001","start":140,"end":310,"bytes":99,"requests":1}
`
	if err := os.WriteFile(log, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runTest(t, context.Background(), "audit", "--log", log, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep testweb.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Requests != 2 || rep.DuplicateFetches != 1 || rep.Forbidden != 1 || rep.MaxConnsPerHost != 2 || rep.MinRequestGap != 50 {
		t.Errorf("report %+v", rep)
	}
	code, out, _ = runTest(t, context.Background(), "audit", "--log", log)
	if code != 0 || !strings.Contains(out, "duplicate fetches   1") {
		t.Errorf("text: exit %d\n%s", code, out)
	}
	if code, _, _ := runTest(t, context.Background(), "audit"); code != 2 {
		t.Errorf("no --log: exit %d, want 2", code)
	}
	// --list 0 or below was taken as the default, 20.
	for _, n := range []string{"0", "-1"} {
		if code, _, errs := runTest(t, context.Background(), "audit", "--log", log, "--list", n); code != 2 || !strings.Contains(errs, "--list") {
			t.Errorf("--list %s: exit %d, %s", n, code, errs)
		}
	}
	os.WriteFile(log, []byte("garbage\n"), 0o644)
	if code, _, errs := runTest(t, context.Background(), "audit", "--log", log); code != 1 || !strings.Contains(errs, "line 1") {
		t.Errorf("bad log: exit %d %s", code, errs)
	}
}

type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestServeOutputError: serve ignored a failed write of its addresses and
// seeds and served on, and exited 0, though no one could learn its ports.
func TestServeOutputError(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	var errb bytes.Buffer
	code := run(done, []string{"--hosts", "3", "--http", "127.0.0.1:0", "--https", "127.0.0.1:0", "--dns", ""}, fullWriter{}, &errb)
	if code != 1 || !strings.Contains(errb.String(), "no space left on device") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}

// TestServeHostsBound: --hosts had no upper bound; 100000 hosts under a
// limit of 20,000 open files failed on "too many open files" after
// generating for 10 s. It is refused at once, naming the flag, the bound
// and why, with exit status 2.
func TestServeHostsBound(t *testing.T) {
	for _, c := range []struct {
		hosts int
		files uint64
		ok    bool
		why   string
	}{
		{9744, 20000, true, ""},
		{9745, 20000, false, "at most 9744 under this process's open-files limit (RLIMIT_NOFILE 20000)"},
		{1, 100, false, "at most 0 under"},
		{maxHostAddrs, 0, true, ""},
		{maxHostAddrs + 1, 0, false, "127.1.0.1-127.255.255.254"},
		{maxHostAddrs + 1, 1 << 40, false, "127.1.0.1-127.255.255.254"},
	} {
		err := checkHosts(c.hosts, c.files)
		var ue usageError
		if c.ok != (err == nil) || err != nil && (!errors.As(err, &ue) || !strings.Contains(err.Error(), c.why) || !strings.Contains(err.Error(), "--hosts")) {
			t.Errorf("checkHosts(%d, %d) = %v", c.hosts, c.files, err)
		}
	}
	// The context is done, so a regression serves nothing for long.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	tooMany := []string{strconv.Itoa(maxHostAddrs + 1)}
	if n := openFilesLimit(); n > 0 && (n-min(n, filesReserve))/filesPerHost < 100000 {
		tooMany = append(tooMany, "100000")
	}
	for _, hosts := range tooMany {
		code, out, errs := runTest(t, done, "serve", "--hosts", hosts, "--http", "127.0.0.1:0", "--https", "127.0.0.1:0", "--dns", "")
		if code != 2 || out != "" || !strings.Contains(errs, "--hosts "+hosts+": at most") {
			t.Errorf("--hosts %s: exit %d, stdout %q, stderr %q", hosts, code, out, errs)
		}
		t.Logf("--hosts %s: %s", hosts, strings.TrimSpace(errs))
	}
}
