package warc

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/tools/warccheck"
)

var fetched = time.Date(2026, 11, 21, 9, 30, 15, 123456789, time.UTC)

// testPages covers what a crawl stores: chunked bodies, matching and
// mismatching Content-Length, empty bodies, unknown statuses, folded
// headers, binary and content-encoded bodies, IPv4, IPv6 and unknown IPs.
func testPages() []*storage.Page {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("<html>compressed</html>"))
	zw.Close()
	return []*storage.Page{
		{URLID: 1, URL: "http://www.ku.ac.th/", FetchTime: fetched, Status: 200,
			Header:   []byte("Server: Apache/1.3.9 (Unix)\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n"),
			ServerIP: netip.MustParseAddr("158.108.2.71"), Body: []byte("<html><a href=/a>a</a></html>")},
		{URLID: 2, URL: "http://www.ku.ac.th/a", FetchTime: fetched.Add(time.Second), Status: 200,
			Header:   []byte("Content-Type: text/plain\r\nContent-Length: 5\r\n"),
			ServerIP: netip.MustParseAddr("158.108.2.71"), Body: []byte("hello")},
		{URLID: 3, URL: "http://example.co.th/b?q=1", FetchTime: fetched, Status: 200,
			Header: []byte("Content-Length: 999\r\nContent-Type: text/html; charset=tis-620\r\n"),
			Body:   []byte("truncated")},
		{URLID: 4, URL: "http://[2001:db8::1]/missing", FetchTime: fetched, Status: 404,
			Header:   []byte("Content-Type: text/html\r\n"),
			ServerIP: netip.MustParseAddr("2001:db8::1")},
		{URLID: 5, URL: "https://odd.example/", FetchTime: fetched, Status: 599,
			Header: []byte("X-Folded: one\r\n  two\r\nContent-Encoding: gzip\r\n"),
			Body:   gz.Bytes(), ServerIP: netip.MustParseAddr("::ffff:10.1.2.3")},
		{URLID: 6, URL: "http://bin.example/x.bin", FetchTime: fetched, Status: 200,
			Body: []byte{0, 1, 2, '\r', '\n', '\r', '\n', 0xff, 0xfe}},
	}
}

func writeTestWARC(t testing.TB, pages []*storage.Page) (data []byte, infoID string) {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	infoID, err := w.WriteInfo("test.warc.gz", fetched, []Field{{"software", "kspider-test"}, {"format", "WARC File Format 1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		if dropped, err := w.WriteResponse(p, infoID); err != nil || dropped != nil {
			t.Fatalf("WriteResponse(%s): %v (dropped %q)", p.URL, err, dropped)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if w.Count() != len(pages)+1 {
		t.Fatalf("Count() = %d, want %d", w.Count(), len(pages)+1)
	}
	return buf.Bytes(), infoID
}

func b32sha1(b []byte) string {
	sum := sha1.Sum(b)
	return "sha1:" + base32.StdEncoding.EncodeToString(sum[:])
}

func TestRoundTrip(t *testing.T) {
	pages := testPages()
	data, infoID := writeTestWARC(t, pages)
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	info, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if info.Version != "WARC/1.1" || info.Get("WARC-Type") != "warcinfo" || info.Get("WARC-Record-ID") != infoID ||
		info.Get("Content-Type") != "application/warc-fields" || !bytes.Contains(info.Block, []byte("software: kspider-test\r\n")) {
		t.Fatalf("warcinfo record: %+v", info)
	}
	seen := map[string]bool{}
	for _, p := range pages {
		rec, err := r.Next()
		if err != nil {
			t.Fatalf("%s: %v", p.URL, err)
		}
		checkResponse(t, p, rec, infoID)
		id := rec.Get("WARC-Record-ID")
		if seen[id] {
			t.Errorf("duplicate record id %s", id)
		}
		seen[id] = true
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after the last record: %v, want io.EOF", err)
	}
}

func checkResponse(t *testing.T, p *storage.Page, rec *Record, infoID string) {
	t.Helper()
	want := map[string]string{
		"WARC-Type":           "response",
		"WARC-Target-URI":     p.URL,
		"WARC-Date":           p.FetchTime.UTC().Format(time.RFC3339)[:19] + "Z",
		"WARC-Warcinfo-ID":    infoID,
		"WARC-Payload-Digest": b32sha1(p.Body),
		"WARC-Block-Digest":   b32sha1(rec.Block),
		"Content-Type":        "application/http; msgtype=response",
		"Content-Length":      strconv.Itoa(len(rec.Block)),
		"WARC-Record-ID":      ResponseRecordID(p.URLID, p.URL, p.FetchTime),
	}
	if p.ServerIP.IsValid() {
		want["WARC-IP-Address"] = p.ServerIP.Unmap().String()
	}
	for name, v := range want {
		if got := rec.Get(name); got != v {
			t.Errorf("%s: %s = %q, want %q", p.URL, name, got, v)
		}
	}
	if !p.ServerIP.IsValid() && rec.Get("WARC-IP-Address") != "" {
		t.Errorf("%s: WARC-IP-Address %q for a page without IP", p.URL, rec.Get("WARC-IP-Address"))
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(rec.Block)), nil)
	if err != nil {
		t.Fatalf("%s: block is not an HTTP response: %v", p.URL, err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: body: %v", p.URL, err)
	}
	if resp.StatusCode != p.Status || !bytes.Equal(body, p.Body) {
		t.Errorf("%s: status %d body %q, want %d %q", p.URL, resp.StatusCode, body, p.Status, p.Body)
	}
	if resp.ContentLength != int64(len(p.Body)) || len(resp.TransferEncoding) != 0 {
		t.Errorf("%s: Content-Length %d Transfer-Encoding %v, want %d and none", p.URL, resp.ContentLength, resp.TransferEncoding, len(p.Body))
	}
	stored, err := p.ParseHeader()
	if err != nil {
		t.Fatal(err)
	}
	for name, vs := range stored {
		switch name {
		case "Transfer-Encoding":
			if got := resp.Header.Get("X-Crawler-Transfer-Encoding"); got != vs[0] {
				t.Errorf("%s: X-Crawler-Transfer-Encoding %q, want %q", p.URL, got, vs[0])
			}
		case "Content-Length":
			if vs[0] != strconv.Itoa(len(p.Body)) && resp.Header.Get("X-Crawler-Content-Length") != vs[0] {
				t.Errorf("%s: mismatching Content-Length %q not kept as X-Crawler-Content-Length", p.URL, vs[0])
			}
		default:
			if got := resp.Header.Values(name); strings.Join(got, "|") != strings.Join(vs, "|") {
				t.Errorf("%s: header %s = %q, want %q", p.URL, name, got, vs)
			}
		}
	}
}

// TestOneGzipMemberPerRecord checks that every record is its own gzip member,
// so tools can seek to a record's offset and decompress it alone.
func TestOneGzipMemberPerRecord(t *testing.T) {
	pages := testPages()
	data, _ := writeTestWARC(t, pages)
	br := bufio.NewReader(bytes.NewReader(data))
	zr, err := gzip.NewReader(br)
	if err != nil {
		t.Fatal(err)
	}
	members := 0
	for {
		zr.Multistream(false)
		member, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		members++
		r, err := NewReader(bytes.NewReader(member))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Next(); err != nil {
			t.Fatalf("member %d: %v", members, err)
		}
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("member %d holds more than one record: %v", members, err)
		}
		if err := zr.Reset(br); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if members != len(pages)+1 {
		t.Fatalf("%d gzip members, want %d", members, len(pages)+1)
	}
}

func TestBadPagesAreSkipped(t *testing.T) {
	good := testPages()[1]
	bad := []struct {
		page *storage.Page
		want string
	}{
		{&storage.Page{URLID: 10, URL: "", Status: 200}, "empty URL"},
		{&storage.Page{URLID: 11, URL: "http://x/a b", Status: 200}, "space or control"},
		{&storage.Page{URLID: 12, URL: "http://x/\r\nWARC-Type: evil", Status: 200}, "space or control"},
		{&storage.Page{URLID: 13, URL: "http://x/", Status: 0}, "three digits"},
		{&storage.Page{URLID: 14, URL: "http://x/", Status: 1000}, "three digits"},
	}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, b := range bad {
		_, err := w.WriteResponse(b.page, "")
		var pe *PageError
		if !errors.As(err, &pe) || pe.URLID != b.page.URLID || !strings.Contains(err.Error(), b.want) {
			t.Errorf("page %d: error %v, want a PageError containing %q", b.page.URLID, err, b.want)
		}
	}
	if _, err := w.WriteResponse(good, ""); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	r, _ := NewReader(&buf)
	rec, err := r.Next()
	if err != nil || rec.Get("WARC-Target-URI") != good.URL {
		t.Fatalf("after bad pages: %v %+v", err, rec)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("bad pages left records behind: %v", err)
	}
}

// A stored URL that is not UTF-8 (a damaged or foreign store: a crawl's
// URLs are ASCII) was written raw into WARC-Target-URI, a header neither a
// URI nor an IRI, which warcio reads with U+FFFD in place of the bytes.
// Now the stray bytes are percent-encoded; a UTF-8 IRI stays as it is.
func TestTargetURIIsNeverInvalidUTF8(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"http://x.example/caf\xe9?q=\xff\xfe", "http://x.example/caf%E9?q=%FF%FE"},
		{"http://x.example/\xe0\xb8", "http://x.example/%E0%B8"},
		{"http://x.example/caf\u00e9", "http://x.example/caf\u00e9"},
	} {
		var buf bytes.Buffer
		w := NewWriter(&buf)
		if _, err := w.WriteResponse(&storage.Page{URLID: 1, URL: c.url, Status: 200, FetchTime: fetched}, ""); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		r, _ := NewReader(&buf)
		rec, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if got := rec.Get("WARC-Target-URI"); got != c.want || !utf8.ValidString(got) {
			t.Errorf("URL %q: WARC-Target-URI %q, want %q", c.url, got, c.want)
		}
	}
}

// The longest URL a store holds (64 KiB) with bytes that are not UTF-8,
// each percent-encoded into three, makes a WARC-Target-URI line of about
// 192 KiB, which warcio reads; the package's own Reader refused it, 'header
// line longer than 65536 bytes', so a test reading an export back failed on
// a record the writer wrote.
func TestReaderTakesTheLongestTargetURI(t *testing.T) {
	u := "http://x.example/" + strings.Repeat("\xff", 64<<10-len("http://x.example/"))
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if _, err := w.WriteResponse(&storage.Page{URLID: 1, URL: u, Status: 200, FetchTime: fetched}, ""); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	r, _ := NewReader(&buf)
	rec, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.Get("WARC-Target-URI"); got != targetURI(u) {
		t.Errorf("WARC-Target-URI of %d bytes read back as %d bytes", len(targetURI(u)), len(got))
	}
}

// TestMalformedHeaderLinesAreDropped checks that a page whose stored header
// block has broken lines is still written, without them, and that they are
// reported.
func TestMalformedHeaderLinesAreDropped(t *testing.T) {
	for _, c := range []struct {
		header, want, dropped string
	}{
		{"A: b\r\n\r\nC: d\r\n", "A: b\r\nC: d\r\n", "line 2: blank line inside"},
		{"no colon here\r\nA: b\r\n", "A: b\r\n", `line 1: not "Name: value"`},
		{"A: b\rc\r\nD: e\r\n", "D: e\r\n", "line 1: control character 0x0d"},
		{" folded: first\r\nA: b\r\n", "A: b\r\n", "line 1: continuation of no field"},
		{"Bad Name: x\r\n folded\r\nA: b\r\n", "A: b\r\n", `line 1: not "Name: value"`},
		{"A: b\r\n folded\r\n", "A: b\r\n folded\r\n", ""},
		{"A: b\n\n", "A: b\r\n", ""},
	} {
		head, dropped := appendHTTPHead(nil, 200, []byte(c.header), 0)
		want := "HTTP/1.1 200 OK\r\n" + c.want + "Content-Length: 0\r\n\r\n"
		if string(head) != want {
			t.Errorf("%q: head %q, want %q", c.header, head, want)
		}
		if c.dropped == "" && dropped != nil || c.dropped != "" && (len(dropped) == 0 || !strings.Contains(dropped[0], c.dropped)) {
			t.Errorf("%q: dropped %q, want %q", c.header, dropped, c.dropped)
		}
	}
}

func TestRecordIDs(t *testing.T) {
	a := ResponseRecordID(1, "http://a/", fetched)
	if a != ResponseRecordID(1, "http://a/", fetched) {
		t.Fatal("record ids are not deterministic")
	}
	for _, other := range []string{
		ResponseRecordID(2, "http://a/", fetched),
		ResponseRecordID(1, "http://b/", fetched),
		ResponseRecordID(1, "http://a/", fetched.Add(time.Nanosecond)),
	} {
		if other == a {
			t.Fatalf("different pages share record id %s", a)
		}
	}
	r, err := RandomRecordID()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{a, r} {
		if len(id) != len("<urn:uuid:>")+36 || !strings.HasPrefix(id, "<urn:uuid:") || !strings.HasSuffix(id, ">") {
			t.Fatalf("record id %q is not <urn:uuid:...>", id)
		}
	}
	if a[10+14] != '5' || r[10+14] != '4' {
		t.Errorf("UUID versions: %s %s", a, r)
	}
}

// TestWarcioReadsOutput reads the writer's output with the warcio npm
// package, an implementation kspider did not write.
func TestWarcioReadsOutput(t *testing.T) {
	pages := testPages()
	data, infoID := writeTestWARC(t, pages)
	path := filepath.Join(t.TempDir(), "test.warc.gz")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	recs := warccheck.Read(t, path, true)
	if len(recs) != len(pages)+1 {
		t.Fatalf("warcio read %d records, want %d", len(recs), len(pages)+1)
	}
	if recs[0].Type != "warcinfo" || recs[0].WARCHeader("WARC-Record-ID") != infoID || recs[0].Offset != 0 {
		t.Errorf("warcinfo as warcio read it: %+v", recs[0])
	}
	for i, p := range pages {
		checkWarcioRecord(t, p, &recs[i+1])
		if recs[i+1].Offset <= recs[i].Offset {
			t.Errorf("record %d offset %d not after %d", i+1, recs[i+1].Offset, recs[i].Offset)
		}
	}
}

func checkWarcioRecord(t *testing.T, p *storage.Page, rec *warccheck.Record) {
	t.Helper()
	sum := sha1.Sum(p.Body)
	if rec.Type != "response" || rec.TargetURI != p.URL || rec.Status != p.Status ||
		!strings.HasPrefix(rec.StatusLine, "HTTP/1.1 "+strconv.Itoa(p.Status)) ||
		rec.PayloadLength != len(p.Body) || rec.PayloadSHA1 != hex.EncodeToString(sum[:]) ||
		!bytes.Equal(rec.Payload, p.Body) {
		t.Errorf("%s: warcio read type %q uri %q status %d (%q) payload %d bytes sha1 %s",
			p.URL, rec.Type, rec.TargetURI, rec.Status, rec.StatusLine, rec.PayloadLength, rec.PayloadSHA1)
	}
	if got := rec.WARCHeader("WARC-Payload-Digest"); got != b32sha1(p.Body) {
		t.Errorf("%s: WARC-Payload-Digest %q", p.URL, got)
	}
	if got := rec.WARCHeader("Content-Type"); got != ContentTypeHTTPResponse {
		t.Errorf("%s: Content-Type %q", p.URL, got)
	}
	if got := rec.HTTPHeader("Content-Length"); got != strconv.Itoa(len(p.Body)) {
		t.Errorf("%s: HTTP Content-Length %q, want %d", p.URL, got, len(p.Body))
	}
	stored, _ := p.ParseHeader()
	for name, vs := range stored {
		if name == "Transfer-Encoding" || name == "Content-Length" {
			continue
		}
		// Readers unfold obs-fold lines differently; compare words.
		if got := rec.HTTPHeader(name); strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(vs[0]), " ") {
			t.Errorf("%s: HTTP header %s = %q, want %q", p.URL, name, got, vs[0])
		}
	}
	if p.ServerIP.IsValid() && rec.WARCHeader("WARC-IP-Address") != p.ServerIP.Unmap().String() {
		t.Errorf("%s: WARC-IP-Address %q", p.URL, rec.WARCHeader("WARC-IP-Address"))
	}
}

// TestRecordIDIsStable pins one id: changing the namespace or the name
// layout would give every exported record a new id.
func TestRecordIDIsStable(t *testing.T) {
	if got, want := ResponseRecordID(1, "http://www.ku.ac.th/", fetched), "<urn:uuid:ebfdf4e6-54e5-5a5f-a3e2-e9e886057e05>"; got != want {
		t.Fatalf("ResponseRecordID = %s, want %s", got, want)
	}
}

// TestEncodersInParallel encodes on several goroutines and writes the
// members through one Writer, as kspider export does.
func TestEncodersInParallel(t *testing.T) {
	pages := testPages()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			enc := NewEncoder()
			for i := g; i < 40; i += 4 {
				member, _, err := enc.Response(pages[i%len(pages)], "")
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				err = w.WriteMember(member)
				mu.Unlock()
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	w.Flush()
	r, _ := NewReader(&buf)
	n := 0
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		if rec.Get("WARC-Payload-Digest") != b32sha1(bodyOf(rec)) {
			t.Errorf("record %d: payload digest does not match its body", n)
		}
	}
	if n != 40 || w.Count() != 40 {
		t.Fatalf("%d records read, %d written; want 40", n, w.Count())
	}
}

func bodyOf(rec *Record) []byte {
	_, body, _ := bytes.Cut(rec.Block, []byte("\r\n\r\n"))
	return body
}

func TestEncoderLevel(t *testing.T) {
	for _, level := range []int{0, 10, -2} {
		if _, err := NewEncoderLevel(level); err == nil {
			t.Errorf("NewEncoderLevel(%d) accepted", level)
		}
	}
	enc, err := NewEncoderLevel(9)
	if err != nil {
		t.Fatal(err)
	}
	member, _, err := enc.Response(testPages()[0], "")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := NewReader(bytes.NewReader(member))
	if rec, err := r.Next(); err != nil || rec.Get("WARC-Target-URI") != testPages()[0].URL {
		t.Fatalf("level 9 member: %v", err)
	}
}
