package collector

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"testing"
)

// TestTLS fetches from a TLS server that offers HTTP/2 (we must get
// HTTP/1.1), trusting its CA as an extra CA, and checks that a wrong name
// and an unknown CA fail as tls.
func TestTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s %s", r.Proto, r.Host, r.URL.Path)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	port := u.Port()
	lookup := func(ctx context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	ca := srv.Certificate()
	fetch := func(cfg Config, rawURL string) Result {
		cfg.UserAgent, cfg.Lookup = testUA, lookup
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		b := c.Fetch(context.Background(), &List{Requests: []Request{{URL: rawURL}, {URL: rawURL + "again"}}})
		defer c.Release(b)
		r := b.Results[0]
		r.Body = append([]byte(nil), r.Body...)
		return r
	}
	// httptest's certificate names example.com and 127.0.0.1.
	r := fetch(Config{ExtraCAs: []*x509.Certificate{ca}}, "https://example.com:"+port+"/x")
	if r.Kind != OK || r.Status != 200 || string(r.Body) != "HTTP/1.1 example.com:"+port+" /x" || r.Timings.TLS == 0 {
		t.Errorf("good name: %s (%v) %d %q, TLS %v", r.Kind, r.Err, r.Status, r.Body, r.Timings.TLS)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	if r := fetch(Config{RootCAs: pool}, "https://127.0.0.1:"+port+"/ip"); r.Kind != OK {
		t.Errorf("IP literal: %s (%v)", r.Kind, r.Err)
	}
	if r := fetch(Config{RootCAs: pool}, "https://wrong.example.org:"+port+"/x"); r.Kind != TLS {
		t.Errorf("wrong name: %s (%v)", r.Kind, r.Err)
	}
	if r := fetch(Config{RootCAs: x509.NewCertPool()}, "https://example.com:"+port+"/x"); r.Kind != TLS {
		t.Errorf("unknown CA: %s (%v)", r.Kind, r.Err)
	}
}
