// Package storetest builds small stores of known pages for the tests of the
// offline tools (stats, WARC export): every page's URL, status, server, IP
// and links are chosen so the expected tables can be worked out by hand.
package storetest

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kspider/kspider/storage"
)

// Fetched returns the fetch time of the first page; page i was fetched i
// seconds later.
func Fetched() time.Time { return time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC) }

const (
	apache = "Server: Apache/1.3.9 (Unix)\r\n"
	iis    = "Server: Microsoft-IIS/4.0\r\n"
	html   = "Content-Type: text/html\r\n"
	tis620 = "Content-Type: text/html; charset=TIS-620\r\n"
)

// Pages returns the test pages: a small Thai web of universities, companies
// and foreign sites, with the defects a crawl meets (an unparseable header
// block, non-UTF-8 HTML, chunked and mislabelled bodies, error statuses).
func Pages() []*storage.Page {
	ps := []*storage.Page{
		{URL: "http://www.ku.ac.th/", Status: 200, ServerIP: ip("158.108.2.71"),
			Header: []byte(apache + html + "Transfer-Encoding: chunked\r\n"),
			Body: []byte(`<html><head><title>KU</title><link rel=stylesheet href=/s.css></head><body>
<a href="/faculty/index.html">Faculties</a> <a href="http://cpe.ku.ac.th/">CPE</a>
<a href="http://www.chula.ac.th/">Chula</a> <a href="http://www.thaigov.go.th/">Gov</a>
<a href="http://shop.co.th/">Shop</a> <a href="http://www.w3.org/">W3C</a>
<img src="/logo.gif"><a href="/faculty/index.html">again</a></body></html>`)},
		{URL: "http://www.ku.ac.th/faculty/index.html", Status: 200, ServerIP: ip("158.108.2.71"),
			Header: []byte(apache + tis620 + "Content-Length: 74\r\n"),
			Body:   []byte("<html><body><a href=\"/\">\xcb\xb9\xe9\xd2\xcb\xc5\xd1\xa1</a> <a href=\"../old/\">old</a></body></html>")},
		{URL: "http://www.ku.ac.th/logo.gif", Status: 200, ServerIP: ip("158.108.2.71"),
			Header: []byte(apache + "Content-Type: image/gif\r\n"), Body: []byte("GIF89a\x01\x00\x01\x00")},
		{URL: "http://www.ku.ac.th/old/", Status: 404, ServerIP: ip("158.108.2.71"),
			Header: []byte(apache + html), Body: []byte("<html><body>Not Found</body></html>")},
		{URL: "http://cpe.ku.ac.th/", Status: 200, ServerIP: ip("158.108.2.72"),
			Header: []byte(apache + html),
			Body:   []byte(`<frameset><frame src="menu.php"><frame src="main.php?id=1"></frameset>`)},
		{URL: "http://www.chula.ac.th/", Status: 301, ServerIP: ip("161.200.1.1"),
			Header: []byte(iis + "Location: http://www.chula.ac.th/home.asp\r\n" + html), Body: []byte("moved")},
		{URL: "http://www.chula.ac.th/home.asp", Status: 200, ServerIP: ip("161.200.1.1"),
			Header: []byte(iis + html + "Content-Length: 9999\r\n"),
			Body:   []byte(`<a href="http://www.ku.ac.th/">KU</a><a href="http://www.mit.edu/">MIT</a>`)},
		{URL: "http://shop.co.th/", Status: 200, ServerIP: ip("203.150.1.1"),
			Header: []byte("Server: Netscape-Enterprise/3.6\r\n" + html),
			Body:   []byte(`<a href="catalog.htm">catalog</a><a href="http://www.ku.ac.th/">KU</a><meta http-equiv=refresh content="0; url=/sale.htm">`)},
		{URL: "http://shop.co.th/catalog.htm", Status: 500, ServerIP: ip("203.150.1.1"),
			Header: []byte("Server: Netscape-Enterprise/3.6\r\n" + html)},
		{URL: "http://www.thaigov.go.th/", Status: 200, ServerIP: ip("203.150.1.1"),
			Header: []byte("no colon: is fine\r\nthis line has none\r\n"), Body: []byte("<a href=\"/x\">x</a>")},
		{URL: "http://www.w3.org/", Status: 200, ServerIP: ip("2001:db8::80"),
			Header: []byte("Server: Jigsaw/2.2\r\n" + "Content-Type: application/xhtml+xml; charset=utf-8\r\n"),
			Body:   []byte(`<html xmlns="http://www.w3.org/1999/xhtml"><a href="/TR/">TR</a><a href="http://www.mit.edu/">MIT</a></html>`)},
		{URL: "http://www.mit.edu/report.pdf", Status: 200,
			Header: []byte("Content-Type: application/pdf\r\n"), Body: []byte("%PDF-1.4 ...")},
	}
	for i, p := range ps {
		p.URLID = uint64(i + 1)
		p.FetchTime = Fetched().Add(time.Duration(i) * time.Second)
		p.Duration = time.Duration(i*i*7) * time.Millisecond
	}
	return ps
}

func ip(s string) netip.Addr { return netip.MustParseAddr(s) }

// Build stores pages in a new store over dirs with codec and returns the
// directories.
func Build(t testing.TB, dirs []string, codec string, pages []*storage.Page) []string {
	t.Helper()
	s, err := storage.Open(storage.Config{Dirs: dirs, Codec: codec})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		if err := s.Put(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dirs
}

// Corrupt flips one byte of the stored URL of the page with URL url in the
// segment files of dirs (the store must use codec "none" or keep URLs
// uncompressed, as format version 1 does), so that record fails its CRC.
func Corrupt(t testing.TB, dirs []string, url string) {
	t.Helper()
	for _, dir := range dirs {
		segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
		for _, seg := range segs {
			data, err := os.ReadFile(seg)
			if err != nil {
				t.Fatal(err)
			}
			i := bytes.Index(data, []byte(url))
			if i < 0 {
				continue
			}
			data[i+len(url)-1] ^= 0x20
			if err := os.WriteFile(seg, data, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("URL %s not found in the segments of %v", url, dirs)
}

// PostgresDocHTML is the HTML of the Debian package postgresql-doc-15, the
// benchmarks' corpus of real pages.
const PostgresDocHTML = "/usr/share/doc/postgresql-doc-15/html"

// DocPages returns a page for every HTML file of PostgresDocHTML, with the
// URL it has on www.postgresql.org (so its relative links resolve), or skips
// when the package is not installed.
func DocPages(tb testing.TB) []*storage.Page {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(PostgresDocHTML, "*.htm*"))
	if err != nil || len(files) == 0 {
		tb.Skipf("no HTML under %s (install postgresql-doc-15)", PostgresDocHTML)
	}
	pages := make([]*storage.Page, 0, len(files))
	for i, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		pages = append(pages, &storage.Page{
			URLID:     uint64(i + 1),
			URL:       "https://www.postgresql.org/docs/15/" + filepath.Base(f),
			FetchTime: Fetched().Add(time.Duration(i) * time.Millisecond),
			Duration:  time.Duration(i%700) * time.Millisecond,
			Status:    200,
			Header:    []byte("Server: nginx/1.22.1\r\nContent-Type: text/html; charset=utf-8\r\nTransfer-Encoding: chunked\r\n"),
			ServerIP:  netip.AddrFrom4([4]byte{127, 0, 0, 1}),
			Body:      body,
		})
	}
	return pages
}
