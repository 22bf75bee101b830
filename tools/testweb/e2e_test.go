package testweb

import (
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestPoliteCrawlAudit is the way later issues use the test web: crawl what
// Truth says a polite crawler may fetch, resolving names through the web's
// DNS, then audit the log and find nothing impolite.
func TestPoliteCrawlAudit(t *testing.T) {
	srv, logBuf := startTest(t, Config{Hosts: 40, Seed: 12, MaxPages: 200, Plain: true}, ServeConfig{})
	client := &http.Client{
		Transport: &http.Transport{DialContext: dnsDial(srv), TLSClientConfig: &tls.Config{RootCAs: srv.CertPool()},
			MaxConnsPerHost: 1, DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       10 * time.Second,
	}
	docs := srv.Truth().Crawlable("kspider", 2, 300)
	for _, d := range docs {
		if d.Kind == "dns-failure" {
			continue
		}
		req, _ := http.NewRequest("GET", d.URL, nil)
		req.Header.Set("User-Agent", "Mozilla/5.0 (compatible; kspider/1.0)")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", d.URL, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != d.Status {
			t.Errorf("%s: %d, truth %d", d.URL, resp.StatusCode, d.Status)
		}
	}
	srv.Close()
	rep, err := Audit(strings.NewReader(logBuf.String()), AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests != len(docs) || rep.DuplicateFetches != 0 || rep.Forbidden != 0 || rep.Misdirected != 0 || rep.MaxConnsPerHost != 1 {
		t.Errorf("polite crawl of %d URLs audited as %+v", len(docs), rep)
	}
}
