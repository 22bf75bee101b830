package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/urltree"
)

// getTestStore stores pages 1..n over two directories.
func getTestStore(t *testing.T, n int) []string {
	t.Helper()
	dirs := []string{t.TempDir(), t.TempDir()}
	s, err := storage.Open(storage.Config{Dirs: dirs})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		err := s.Put(context.Background(), &storage.Page{
			URLID:     uint64(i),
			URL:       fmt.Sprintf("http://example.test/%d.html", i),
			FetchTime: time.Date(2026, 11, 21, 10, 0, i, 0, time.UTC),
			Status:    200 + i%2*204, // 200 or 404
			Header:    []byte(fmt.Sprintf("Content-Type: text/html\r\nX-Page: %d\r\n", i)),
			ServerIP:  netip.MustParseAddr("127.0.0.1"),
			Body:      []byte(fmt.Sprintf("<html><body>page %d</body></html>\n", i)),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dirs
}

func TestGetByIDAndURL(t *testing.T) {
	dirs := getTestStore(t, 30)
	code, out, errOut := runCmd(t, "", "get", "--data", dirs[0], "--data", dirs[1], "7")
	if code != 0 || out != "<html><body>page 7</body></html>\n" {
		t.Fatalf("get 7: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = runCmd(t, "", "get", "--data", dirs[0], "--data", dirs[1], "-i", "http://example.test/8.html")
	want := "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Page: 8\r\n\r\n<html><body>page 8</body></html>\n"
	if code != 0 || out != want {
		t.Fatalf("get -i URL: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, _ = runCmd(t, "", "get", "-i", "--data", dirs[0], "--data", dirs[1], "9")
	if code != 0 || !strings.HasPrefix(out, "HTTP/1.1 404 Not Found\r\n") {
		t.Fatalf("get -i 9: exit %d, stdout %q", code, out)
	}
}

func TestGetErrors(t *testing.T) {
	dirs := getTestStore(t, 3)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"get", "7"}, 2, "--data"},
		{[]string{"get", "--data", dirs[0]}, 2, "exactly one"},
		{[]string{"get", "--data", dirs[0], "--data", dirs[1], "99"}, 1, "no stored page with URL id 99"},
		{[]string{"get", "--data", dirs[0], "--data", dirs[1], "http://example.test/none"}, 1, "no stored page for URL"},
		{[]string{"get", "--data", "/nonexistent/kspider", "1"}, 1, "/nonexistent/kspider"},
		{[]string{"get", "--data", t.TempDir(), "1"}, 1, "no page store"},
	} {
		code, _, errOut := runCmd(t, "", tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, errOut, tc.code, tc.want)
		}
		if strings.Contains(errOut, "get: get:") {
			t.Errorf("%v: prefix printed twice: %q", tc.args, errOut)
		}
	}
}

// A damaged index: get still finds the page (the index is rebuilt from the
// segments in memory) but says so, with exit status 1 unless
// --allow-damage.
func TestGetReportsDamage(t *testing.T) {
	dirs := getTestStore(t, 5)
	for _, d := range dirs {
		ix := filepath.Join(d, "url.idx")
		b, err := os.ReadFile(ix)
		if err != nil {
			t.Fatal(err)
		}
		b[40] ^= 1 // in the header page: its CRC fails
		if err := os.WriteFile(ix, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runCmd(t, "", "get", "--data", dirs[0], "--data", dirs[1], "3")
	if code != 1 || out != "<html><body>page 3</body></html>\n" || !strings.Contains(errOut, "url.idx") || !strings.Contains(errOut, "store damaged") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = runCmd(t, "", "get", "--allow-damage", "--data", dirs[0], "--data", dirs[1], "3")
	if code != 0 || !strings.Contains(errOut, "allowed by --allow-damage") {
		t.Fatalf("--allow-damage: exit %d, stderr %q", code, errOut)
	}
}

// A page lost to damage: get fails and shows the damage, without calling
// it allowed (before, the failure's report said "allowed by
// --allow-damage" though the flag was not given).
func TestGetOfALostPageDoesNotSayAllowed(t *testing.T) {
	dirs := getTestStore(t, 5)
	for _, d := range dirs {
		if err := os.Truncate(filepath.Join(d, "00000001.seg"), 100); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runCmd(t, "", "get", "--data", dirs[0], "--data", dirs[1], "3")
	if code != 1 || out != "" || !strings.Contains(errOut, "store damaged") || strings.Contains(errOut, "allowed") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// getNode makes a node data directory holding pages 1..n in its pages/,
// their URLs in its URL tree (ids as stored), and returns it.
func getNode(t *testing.T, n int) string {
	t.Helper()
	node := t.TempDir()
	tr, err := urltree.Open(filepath.Join(node, "urls"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tr.AddString("http://example.test/"); err != nil { // id 0, never stored
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if id, _, err := tr.AddString(fmt.Sprintf("http://example.test/%d.html", i)); err != nil || id != uint32(i) {
			t.Fatalf("URL %d: id %d, %v", i, id, err)
		}
	}
	s, err := storage.Open(storage.Config{Dirs: []string{filepath.Join(node, "pages")}, TreeID: tr.ID()})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if err := s.Put(context.Background(), &storage.Page{URLID: uint64(i), URL: fmt.Sprintf("http://example.test/%d.html", i),
			Status: 200, Body: []byte(fmt.Sprintf("page %d\n", i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return node
}

// TestGetURLThroughTheTree: 'get URL' scanned the whole store for it (a
// node's store of millions of pages read through for one), and so met,
// and failed on, damage anywhere in it, where 'get ID' of the same page
// is one lookup. Given a node's data directory it now asks the URL tree
// for the URL's id and reads that page alone; store directories given
// bare are still scanned.
func TestGetURLThroughTheTree(t *testing.T) {
	const n = 20
	node := getNode(t, n)
	// Another page's record damaged: a scan meets it, a lookup does not.
	pages := filepath.Join(node, "pages")
	r, err := storage.OpenReader([]string{pages})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	seg := filepath.Join(pages, "00000001.seg")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	at := strings.Index(string(b), "page 15\n")
	if at < 0 {
		t.Fatal("page 15's body is not in the segment")
	}
	b[at] ^= 1
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{"7", "http://example.test/7.html"} {
		if code, out, errOut := runCmd(t, "", "get", "--data", node, arg); code != 0 || out != "page 7\n" || errOut != "" {
			t.Errorf("get %s: exit %d, stdout %q, stderr %q", arg, code, out, errOut)
		}
	}
	for _, c := range []struct{ url, want string }{
		{"http://example.test/", "no stored page for URL"},     // in the tree, not stored
		{"http://example.test/99.html", "not in the URL tree"}, // not in the tree
		{"http://example.test/15.html", "at offset"},           // its record damaged
	} {
		if code, out, errOut := runCmd(t, "", "get", "--data", node, c.url); code != 1 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("get %s: exit %d, stdout %q, stderr %q; want 1 and %q", c.url, code, out, errOut, c.want)
		}
	}
	if code, out, errOut := runCmd(t, "", "get", "--data", pages, "http://example.test/99.html"); code != 1 || out != "" || !strings.Contains(errOut, "store damaged") {
		t.Errorf("get URL of a bare store: exit %d, stdout %q, stderr %q; want the scan's damage report", code, out, errOut)
	}
}

// fullFile fails writes as a file on a full disk does: one of no bytes
// succeeds (os.File.Write makes no system call for it).
type fullFile struct{}

func (fullFile) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return 0, errors.New("no space left on device")
}

// get -i of a page with no body (a 500, a 204, a redirect) with stdout on
// a full disk: the status line and headers were written without looking
// at the error, the empty body's write could not fail, and get exited 0
// having printed nothing.
func TestGetWithHeadersOnAFullDisk(t *testing.T) {
	_, args := buildTestStore(t, 1, "lzo")
	var errb bytes.Buffer
	code := run(context.Background(), env{stdout: fullFile{}, stderr: &errb}, append(append([]string{"get", "-i"}, args...), "http://shop.co.th/catalog.htm"))
	if code != 1 || !strings.Contains(errb.String(), "no space left on device") {
		t.Errorf("get -i of a page with no body, stdout failing: exit %d, stderr %q; want 1 and the write's error", code, errb.String())
	}
}

// A stored page printed to a terminal went out byte for byte, so a
// hostile page's escape sequences (retitle the window, clear what was
// printed, on some terminals answer with typed keys) reached the
// operator's terminal; curl refuses binary output to one. Now get refuses
// a page with control bytes on a terminal, naming the first, and prints
// it as stored when redirected.
func TestGetRefusesControlBytesOnATerminal(t *testing.T) {
	pages := []struct {
		body string
		bad  string // what the error names; "" when printed
	}{
		{"<html>\x1b]0;owned\x07</html>", "0x1b at offset 6 of its body"},
		{"caf\u00e9 \u0085 next", "0x85 at offset 6 of its body"},
		{"<html>\ttab\r\nlines\n</html>", ""},
	}
	dir := t.TempDir()
	s, err := storage.Open(storage.Config{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pages {
		if err := s.Put(context.Background(), &storage.Page{URLID: uint64(i + 1), URL: fmt.Sprintf("http://example.test/%d", i+1),
			FetchTime: time.Date(2026, 11, 25, 10, 0, i, 0, time.UTC), Status: 200, Header: []byte("Content-Type: text/html\r\n"),
			ServerIP: netip.MustParseAddr("127.0.0.1"), Body: []byte(p.body)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for i, p := range pages {
		id := fmt.Sprint(i + 1)
		tty, output := openPTY(t)
		var errb bytes.Buffer
		code := run(context.Background(), env{stdout: tty, stderr: &errb}, []string{"get", "--data", dir, id})
		got := output()
		switch {
		case p.bad != "" && (code != 1 || !strings.Contains(errb.String(), p.bad) || strings.Contains(got, "html")):
			t.Errorf("page %s on a terminal: exit %d, stderr %q, printed %q; want exit 1 naming %q, nothing printed", id, code, errb.String(), got, p.bad)
		case p.bad == "" && (code != 0 || !strings.Contains(got, "lines")):
			t.Errorf("page %s (tab, CR, LF only) on a terminal: exit %d, stderr %q, printed %q; want it printed", id, code, errb.String(), got)
		}
		code, out, errOut := runCmd(t, "", "get", "--data", dir, id)
		if code != 0 || out != p.body {
			t.Errorf("page %s redirected: exit %d, %q (%s); want its bytes as stored", id, code, out, errOut)
		}
	}
}
