package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/tools/stats/storetest"
	"github.com/kspider/kspider/tools/warc"
	"github.com/kspider/kspider/tools/warccheck"
)

func exportWARC(t *testing.T, args []string) (file, stdout, stderr string) {
	t.Helper()
	file = filepath.Join(t.TempDir(), "out.warc.gz")
	code, out, errOut := runCmd(t, "", append(append([]string{"export", "warc"}, args...), "--out", file)...)
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	return file, out, errOut
}

func pagesByURL() map[string]*storage.Page {
	m := map[string]*storage.Page{}
	for _, p := range storetest.Pages() {
		m[p.URL] = p
	}
	return m
}

func sha1Base32(b []byte) string {
	sum := sha1.Sum(b)
	return "sha1:" + base32.StdEncoding.EncodeToString(sum[:])
}

// TestExportWARCRoundTrip exports a two-directory store and reads it back
// with the Go reader and net/http.
func TestExportWARCRoundTrip(t *testing.T) {
	_, args := buildTestStore(t, 2, "lzo")
	file, out, errOut := exportWARC(t, args)
	pages := pagesByURL()
	if !strings.Contains(out, "wrote 12 pages to "+file) {
		t.Errorf("stdout %q", out)
	}
	if !strings.Contains(errOut, `(http://www.thaigov.go.th/): left out malformed header line 2: not "Name: value"`) {
		t.Errorf("the thaigov page's broken header line is not logged: %q", errOut)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := warc.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	info, err := r.Next()
	if err != nil || info.Get("WARC-Type") != "warcinfo" || info.Get("WARC-Filename") != "out.warc.gz" ||
		!bytes.Contains(info.Block, []byte("software: kspider")) {
		t.Fatalf("first record: %v %+v", err, info)
	}
	seen := 0
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		seen++
		p := pages[rec.Get("WARC-Target-URI")]
		if p == nil {
			t.Fatalf("record for unknown URL %q", rec.Get("WARC-Target-URI"))
		}
		delete(pages, p.URL)
		if rec.Get("WARC-Type") != "response" || rec.Get("WARC-Warcinfo-ID") != info.Get("WARC-Record-ID") ||
			rec.Get("WARC-Date") != p.FetchTime.Format("2006-01-02T15:04:05Z") ||
			rec.Get("WARC-Payload-Digest") != sha1Base32(p.Body) || rec.Get("WARC-Block-Digest") != sha1Base32(rec.Block) ||
			rec.Get("Content-Type") != "application/http; msgtype=response" {
			t.Errorf("%s: fields %v", p.URL, rec.Fields)
		}
		if ip := rec.Get("WARC-IP-Address"); ip != "" != p.ServerIP.IsValid() || p.ServerIP.IsValid() && ip != p.ServerIP.String() {
			t.Errorf("%s: WARC-IP-Address %q, stored %v", p.URL, ip, p.ServerIP)
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(rec.Block)), nil)
		if err != nil {
			t.Fatalf("%s: %v", p.URL, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != p.Status || !bytes.Equal(body, p.Body) || resp.ContentLength != int64(len(p.Body)) {
			t.Errorf("%s: status %d, body %q (length %d)", p.URL, resp.StatusCode, body, resp.ContentLength)
		}
	}
	if seen != 12 || len(pages) != 0 {
		t.Errorf("%d response records; pages not exported: %v", seen, pages)
	}
}

// TestExportWARCReadByWarcio checks the export with the warcio npm package.
func TestExportWARCReadByWarcio(t *testing.T) {
	_, args := buildTestStore(t, 2, "lzo")
	file, _, _ := exportWARC(t, args)
	recs := warccheck.Read(t, file, false)
	pages := pagesByURL()
	if len(recs) != len(pages)+1 || recs[0].Type != "warcinfo" {
		t.Fatalf("warcio read %d records (first %q), want %d", len(recs), recs[0].Type, len(pages)+1)
	}
	for _, rec := range recs[1:] {
		p := pages[rec.TargetURI]
		if p == nil {
			t.Fatalf("warcio: record for unknown URL %q", rec.TargetURI)
		}
		delete(pages, p.URL)
		sum := sha1.Sum(p.Body)
		if rec.Type != "response" || rec.Status != p.Status || rec.PayloadSHA1 != hex.EncodeToString(sum[:]) ||
			rec.PayloadLength != len(p.Body) || rec.WARCHeader("WARC-Payload-Digest") != sha1Base32(p.Body) ||
			rec.HTTPHeader("Content-Length") != strconv.Itoa(len(p.Body)) || rec.HTTPHeader("Transfer-Encoding") != "" {
			t.Errorf("%s: warcio read %+v", p.URL, rec)
		}
		if h, err := p.ParseHeader(); err == nil {
			for name := range h {
				if name != "Content-Length" && name != "Transfer-Encoding" && rec.HTTPHeader(name) != h.Get(name) {
					t.Errorf("%s: header %s: warcio %q, stored %q", p.URL, name, rec.HTTPHeader(name), h.Get(name))
				}
			}
		}
	}
	if len(pages) != 0 {
		t.Errorf("warcio did not see %v", pages)
	}
}

func TestExportSkipsCorruptRecord(t *testing.T) {
	dirs, args := buildTestStore(t, 1, "none")
	storetest.Corrupt(t, dirs, "http://www.mit.edu/report.pdf")
	code, _, errOut := runCmd(t, "", append(append([]string{"export", "warc"}, args...), "--out", filepath.Join(t.TempDir(), "x.warc.gz"))...)
	if code != 1 || !strings.Contains(errOut, "store damaged") {
		t.Errorf("export of a damaged store without --allow-damage: exit %d, %q", code, errOut)
	}
	file, out, errOut := exportWARC(t, append(args, "--allow-damage"))
	if !strings.Contains(out, "wrote 11 pages") || !strings.Contains(out, "1 pages known lost to damage (1 damaged regions") {
		t.Errorf("stdout %q", out)
	}
	if !strings.Contains(errOut, "kspider export: damage:") || !strings.Contains(errOut, ".seg at offset") {
		t.Errorf("the damaged record is not reported with its file and offset: %q", errOut)
	}
	data, _ := os.ReadFile(file)
	r, _ := warc.NewReader(bytes.NewReader(data))
	n := 0
	for {
		if _, err := r.Next(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 12 {
		t.Errorf("%d records, want warcinfo and 11 responses", n)
	}
}

// A segment cut short (a disk that lost its tail) loses every page after
// the cut, but export's last line said 'wrote N pages (1 damaged records
// and 0 unwritable pages skipped)', the damaged region counted as one
// record; now it gives the pages known lost too, as stderr's summary does.
func TestExportCountsPagesLostToDamage(t *testing.T) {
	dirs, args := buildTestStore(t, 1, "none")
	segs, _ := filepath.Glob(filepath.Join(dirs[0], "*.seg"))
	fi, err := os.Stat(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(segs[0], fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	file, out, errOut := exportWARC(t, append(args, "--allow-damage"))
	var written, lost int
	if _, err := fmt.Sscanf(out, "wrote %d pages to "+file+"; not in it: %d pages known lost to damage", &written, &lost); err != nil ||
		lost < 2 || written+lost != len(storetest.Pages()) || !strings.Contains(errOut, fmt.Sprintf("%d pages known lost", lost)) {
		t.Errorf("stdout %q (%v), stderr %q; want the %d pages not written counted", out, err, errOut, len(storetest.Pages())-written)
	}
}

// Every malformed header line left out was logged, one stderr line each,
// and the summary did not count them: a crawl of the real web, with such
// pages by the hundred thousand, buried the summary under them. Now the
// first 100 lines about single pages are logged, the rest counted, and the
// summary counts the lines and pages.
func TestExportBoundsItsLinesAboutPages(t *testing.T) {
	dir := t.TempDir()
	var pages []*storage.Page
	for i := range 150 {
		pages = append(pages, &storage.Page{URLID: uint64(i + 1), URL: fmt.Sprintf("http://www.ku.ac.th/%d", i), Status: 200,
			FetchTime: storetest.Fetched(), Header: []byte("Content-Type: text/html\r\nno colon here\r\nX-Bad\x01: 1\r\n"), Body: []byte("x")})
	}
	storetest.Build(t, []string{dir}, "lzo", pages)
	_, out, errOut := exportWARC(t, []string{"--data", dir})
	if n := strings.Count(errOut, "left out malformed"); n != 100 || !strings.Contains(errOut, "kspider export: 200 more lines about single pages not shown (the first 100 are above)") {
		t.Errorf("%d lines about malformed header lines on stderr, want 100 and the rest counted:\n%s", n, errOut)
	}
	if !strings.Contains(out, "; 300 malformed header lines of 150 pages left out\n") {
		t.Errorf("stdout %q does not count the header lines left out", out)
	}
}

// A store directory whose name holds a line break (a legal name) could not
// be exported at all: its name went into the warcinfo record's description,
// which refused it, 'warc: field description: value contains a line
// break'. Now the name is quoted there.
func TestExportOfADirectoryNamedWithALineBreak(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "disk\n2")
	storetest.Build(t, []string{dir}, "lzo", storetest.Pages()[:2])
	file, _, _ := exportWARC(t, []string{"--data", dir})
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := warc.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	info, err := r.Next()
	if err != nil || !bytes.Contains(info.Block, []byte("description: pages exported from the kspider store "+strconv.Quote(dir)+"\r\n")) {
		t.Errorf("warcinfo %v: %q", err, info)
	}
}

// A page that cannot be written as WARC (only a damaged or foreign store
// holds one) was skipped with exit status 0: a script saw a complete
// export with the page missing. Now it is exit 1 unless --allow-damage.
func TestExportSkipsUnwritablePage(t *testing.T) {
	dir := t.TempDir()
	bad := storetest.Pages()[:2]
	bad[1].URL = "http://www.ku.ac.th/a page with spaces"
	storetest.Build(t, []string{dir}, "lzo", bad)
	file := filepath.Join(t.TempDir(), "x.warc.gz")
	code, out, errOut := runCmd(t, "", "export", "warc", "--data", dir, "--out", file)
	if code != 1 || !strings.Contains(out, "wrote 1 pages") || !strings.Contains(out, "1 unwritable pages") ||
		!strings.Contains(errOut, "a page with spaces") || !strings.Contains(errOut, "1 stored pages could not be written") {
		t.Errorf("exit %d, stdout %q stderr %q; want 1 and the page named", code, out, errOut)
	}
	if _, err := os.Stat(file); err != nil {
		t.Errorf("the WARC of the other pages: %v", err)
	}
	_, out, errOut = exportWARC(t, []string{"--data", dir, "--allow-damage"})
	if !strings.Contains(out, "1 unwritable pages") || !strings.Contains(errOut, "allowed by --allow-damage") {
		t.Errorf("with --allow-damage: stdout %q stderr %q", out, errOut)
	}
}

func TestExportUsageAndFailures(t *testing.T) {
	dir := t.TempDir()
	storetest.Build(t, []string{dir}, "lzo", storetest.Pages()[:1])
	outDir := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"export"}, 2, "missing format"},
		{[]string{"export", "zip"}, 2, `unknown format "zip"`},
		{[]string{"export", "warc", "--out", "x.warc.gz"}, 2, "--data DIR is required"},
		{[]string{"export", "warc", "--data", dir}, 2, "--out FILE is required"},
		{[]string{"export", "warc", "--data", dir, "--out", filepath.Join(outDir, "no", "such", "dir.warc.gz")}, 1, "no such file"},
		// A directory is refused before any file is made.
		{[]string{"export", "warc", "--data", dir, "--out", outDir}, 1, "is a directory"},
	} {
		code, _, errOut := runCmd(t, "", c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
	if entries, _ := os.ReadDir(outDir); len(entries) != 0 {
		t.Errorf("failed exports left files behind: %v", entries)
	}
	for _, args := range [][]string{{"export", "--help"}, {"export", "warc", "--help"}, {"help", "export"}} {
		code, out, _ := runCmd(t, "", args...)
		if code != 0 || !strings.Contains(out, "usage: kspider export") {
			t.Errorf("%v: exit %d, %q", args, code, out)
		}
	}
}

// BenchmarkExportWARCPostgresDoc exports a two-directory LZO store of the
// postgresql-doc-15 HTML. Each iteration times, one after the other so the
// shared machine's load hits all three alike: the baseline (storage's Scan,
// nothing written), one warc.Writer compressing on the scan goroutines in
// turn (the export before its workers compressed in parallel), and kspider
// export warc itself. Reported as MB/s of raw page bytes and as ratios.
func BenchmarkExportWARCPostgresDoc(b *testing.B) {
	pages := storetest.DocPages(b)
	var raw int64
	for _, p := range pages {
		raw += int64(len(p.Header) + len(p.Body))
	}
	dirs := storetest.Build(b, []string{b.TempDir(), b.TempDir()}, "lzo", pages)
	r, err := storage.OpenReader(dirs)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	out := filepath.Join(b.TempDir(), "bench.warc.gz")
	args := []string{"--out", out}
	for _, d := range dirs {
		args = append(args, "--data", d)
	}
	var scan, serial, export time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := r.Scan(context.Background(), func(*storage.Page) error { return nil }); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		w := warc.NewWriter(io.Discard)
		var mu sync.Mutex
		if err := r.Scan(context.Background(), func(p *storage.Page) error {
			mu.Lock()
			defer mu.Unlock()
			_, err := w.WriteResponse(p, "")
			return err
		}); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		var stdout, stderr bytes.Buffer
		if err := runExportWARC(context.Background(), env{stdout: &stdout, stderr: &stderr}, args); err != nil {
			b.Fatal(err, stderr.String())
		}
		scan, serial, export = scan+t1.Sub(t0), serial+t2.Sub(t1), export+time.Since(t2)
	}
	mbs := func(d time.Duration) float64 { return float64(raw) * float64(b.N) / 1e6 / d.Seconds() }
	b.ReportMetric(mbs(scan), "scan_MB/s")
	b.ReportMetric(mbs(serial), "serial_MB/s")
	b.ReportMetric(mbs(export), "export_MB/s")
	b.ReportMetric(scan.Seconds()/export.Seconds(), "export/scan")
	b.ReportMetric(serial.Seconds()/export.Seconds(), "export/serial")
	fi, _ := os.Stat(out)
	b.ReportMetric(float64(fi.Size())/float64(raw), "warc/raw")
}

// TestExportInterruptedLeavesNothing cancels the export (as Ctrl-C does):
// no output file, no temporary file.
func TestExportInterruptedLeavesNothing(t *testing.T) {
	_, args := buildTestStore(t, 2, "lzo")
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	err := runExportWARC(ctx, env{stdout: &stdout, stderr: &stderr}, append(args, "--out", filepath.Join(dir, "x.warc.gz")))
	if err == nil {
		t.Fatalf("a cancelled export succeeded: %s", stdout.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a cancelled export left %v", entries)
	}
}

// Ctrl-C during export, stats or get's scan for a URL ended with
// 'kspider export: context canceled', not saying it was the interrupt nor
// what was not written; now each says it was interrupted and what of it.
func TestOfflineToolsSayInterrupted(t *testing.T) {
	_, args := buildTestStore(t, 2, "lzo")
	out := filepath.Join(t.TempDir(), "x.warc.gz")
	html := filepath.Join(t.TempDir(), "x.html")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{append([]string{"export", "warc", "--out", out}, args...), "kspider export: interrupted after 0 pages: " + out + " not written"},
		{append([]string{"stats"}, args...), "kspider stats: interrupted after 0 pages: no report"},
		{append([]string{"stats", "--html", html}, args...), "kspider stats: interrupted after 0 pages: " + html + " not written"},
		{append(append([]string{"get"}, args...), "http://www.ku.ac.th/"), `kspider get: interrupted before a page stored for URL "http://www.ku.ac.th/" was found`},
	} {
		var stdout, stderr bytes.Buffer
		code := run(ctx, env{stdout: &stdout, stderr: &stderr}, c.args)
		if code != 1 || !strings.Contains(stderr.String(), c.want) || strings.Contains(stderr.String(), "context canceled") {
			t.Errorf("%s, interrupted: exit %d, want 1 and %q\n%s", c.args[0], code, c.want, stderr.String())
		}
	}
}

const atomicChildEnv = "KSPIDER_ATOMIC_CHILD"

// TestAtomicWriteChild is the process TestKilledExportLeavesNoStrayFile
// kills: it starts writing $KSPIDER_ATOMIC_CHILD atomically, says so and
// waits to be killed. It does nothing in a normal run.
func TestAtomicWriteChild(t *testing.T) {
	path := os.Getenv(atomicChildEnv)
	if path == "" {
		t.Skip("only run as TestKilledExportLeavesNoStrayFile's child process")
	}
	writeFileAtomic(path, func(w io.Writer) error {
		w.Write(bytes.Repeat([]byte("x"), 2<<20)) // past the buffer: on disk
		fmt.Println("writing")
		select {} // until killed
	})
}

// An export killed with kill -9 leaves its temporary file; the next run
// removes it, and a failed run leaves nothing either.
func TestKilledExportLeavesNoStrayFile(t *testing.T) {
	dir := t.TempDir()
	storetest.Build(t, []string{dir}, "lzo", storetest.Pages()[:2])
	outDir := t.TempDir()
	out := filepath.Join(outDir, "crawl.warc.gz")
	cmd := exec.Command(os.Args[0], "-test.run=^TestAtomicWriteChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), atomicChildEnv+"="+out)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	cmd.Process.Kill()
	cmd.Wait()
	if line != "writing\n" {
		t.Fatalf("child said %q", line)
	}
	if ents, _ := os.ReadDir(outDir); len(ents) != 1 || !strings.Contains(ents[0].Name(), ".kspider-tmp.") {
		t.Fatalf("the killed child left %v, want its one temporary file", ents)
	}
	// Another process's temporaries, still being written (flocked, as
	// createAtomic's are): this process's, and one of a PID that is no
	// process here (an export in another PID namespace, a container
	// sharing the directory). Both kept.
	mine := filepath.Join(outDir, tempPrefix(out)+strconv.Itoa(os.Getpid())+".1")
	elsewhere := filepath.Join(outDir, tempPrefix(out)+"2147483646.1")
	for _, name := range []string{mine, elsewhere} {
		f, err := os.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, errOut := runCmd(t, "", "export", "warc", "--data", dir, "--out", out); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	ents, _ := os.ReadDir(outDir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 3 || !slices.Contains(names, "crawl.warc.gz") || !slices.Contains(names, filepath.Base(mine)) || !slices.Contains(names, filepath.Base(elsewhere)) {
		t.Fatalf("after the next export: %v, want the export and the live processes' temporaries", names)
	}
}

// An output named inside the store being read (a slip of the shell: --out
// DIR/00000001.seg, --html DIR/url.idx) was renamed over the store's file
// once the scan was done: the segment's pages were gone, replaced by the
// WARC. An output in a --data directory, or in the store it stands for,
// is now refused before anything is read or written.
func TestOutputIntoTheStoreIsRefused(t *testing.T) {
	node := t.TempDir()
	for _, sub := range []string{"sched", "urls"} {
		if err := os.Mkdir(filepath.Join(node, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	store := filepath.Join(node, "pages")
	storetest.Build(t, []string{store}, "lzo", storetest.Pages()[:3])
	seg := filepath.Join(store, "00000001.seg")
	before, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"export", "warc", "--data", store, "--out", seg},
		{"export", "warc", "--data", node, "--out", seg},
		{"export", "warc", "--data", node, "--out", filepath.Join(node, "IDENTITY")},
		{"stats", "--data", store, "--html", filepath.Join(store, "url.idx")},
		{"stats", "--data", node, "--html", filepath.Join(node, "sched", "sched.meta")},
		{"export", "warc", "--data", node, "--out", filepath.Join(node, "urls", "tree.meta")},
	} {
		code, _, errOut := runCmd(t, "", args...)
		if code != 2 || !strings.Contains(errOut, "would be written into the data directory") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and the output refused", args, code, errOut)
		}
	}
	if after, err := os.ReadFile(seg); err != nil || !bytes.Equal(after, before) {
		t.Fatalf("%s changed: %d bytes, %v", seg, len(after), err)
	}
	if _, err := os.Stat(filepath.Join(node, "IDENTITY")); err == nil {
		t.Fatal("an IDENTITY file was written into the node's directory")
	}
	if code, _, errOut := runCmd(t, "", "check", "--data", store); code != 0 {
		t.Fatalf("check after the refused outputs: exit %d: %s", code, errOut)
	}
}
