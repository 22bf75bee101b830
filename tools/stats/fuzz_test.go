package stats

import (
	"bytes"
	"testing"

	"github.com/kspider/kspider/storage"
)

// FuzzCollector feeds pages with arbitrary URLs, header blocks and bodies
// through the collector and every writer: nothing may panic, and the text
// output must stay free of control characters.
func FuzzCollector(f *testing.F) {
	for _, p := range testPages() {
		f.Add(p.URL, p.Header, p.Body, p.Status)
	}
	f.Add("http://[::1/", []byte("Server: \xff\xfe\r\n"), []byte("<a href=\"http://%zz/\">"), 999)
	f.Add("", []byte{}, []byte{0xef, 0xbb, 0xbf}, -5)
	f.Fuzz(func(t *testing.T, url string, header, body []byte, status int) {
		c := New(Options{NewLinkFunc: CrawlerLinks, Limit: 3, MatrixSize: 2})
		c.Add(&storage.Page{URL: url, Header: header, Body: body, Status: status})
		c.Add(&storage.Page{URL: "http://www.ku.ac.th/", Status: 200, Header: []byte("Content-Type: text/html\r\n"), Body: body})
		r := c.Report()
		var text bytes.Buffer
		if err := r.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		for _, b := range text.Bytes() {
			if b < ' ' && b != '\n' || b == 0x7f {
				t.Fatalf("control byte %#x in the text output", b)
			}
		}
		if err := r.WriteJSON(&bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteHTML(&bytes.Buffer{}, url); err != nil {
			t.Fatal(err)
		}
	})
}
