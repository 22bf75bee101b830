package collector

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"testing"
	"time"
)

// TestTLSExtraCAs: with ExtraCAs (and the system's roots) a server signed
// by an extra CA is trusted under its names only, on a new and on a
// resumed session, and one signed by a CA that is neither is refused.
func TestTLSExtraCAs(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	srv := httptest.NewTLSServer(h)
	other := httptest.NewUnstartedServer(h) // a certificate of its own
	other.TLS = &tls.Config{Certificates: []tls.Certificate{selfSigned(t, "example.com")}}
	other.StartTLS()
	defer srv.Close()
	defer other.Close()
	lookup := func(ctx context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	port := func(s *httptest.Server) string { u, _ := url.Parse(s.URL); return u.Port() }
	c, err := New(Config{UserAgent: testUA, Lookup: lookup, ExtraCAs: []*x509.Certificate{srv.Certificate()}})
	if err != nil {
		t.Fatal(err)
	}
	fetch := func(rawURL string) Result {
		b := c.Fetch(context.Background(), &List{Requests: []Request{{URL: rawURL}}})
		defer c.Release(b)
		r := b.Results[0]
		r.Body = nil
		return r
	}
	for i := range 2 { // the second resumes the session
		if r := fetch("https://example.com:" + port(srv) + "/x"); r.Kind != OK || r.Status != 200 {
			t.Errorf("extra CA, good name, %d: %s (%v) %d", i, r.Kind, r.Err, r.Status)
		}
	}
	if r := fetch("https://wrong.example.org:" + port(srv) + "/x"); r.Kind != TLS {
		t.Errorf("extra CA, wrong name: %s (%v)", r.Kind, r.Err)
	}
	if r := fetch("https://example.com:" + port(other) + "/x"); r.Kind != TLS {
		t.Errorf("neither an extra CA nor a system root: %s (%v)", r.Kind, r.Err)
	}
	if r := fetch("https://127.0.0.1:" + port(srv) + "/ip"); r.Kind != OK {
		t.Errorf("extra CA, IP address in the certificate: %s (%v)", r.Kind, r.Err)
	}
	// An IP address sends no SNI: its name must still be checked.
	c, err = New(Config{UserAgent: testUA, Lookup: lookup, ExtraCAs: []*x509.Certificate{x509Of(t, other)}})
	if err != nil {
		t.Fatal(err)
	}
	if r := fetch("https://example.com:" + port(other) + "/x"); r.Kind != OK {
		t.Errorf("the other server trusted, good name: %s (%v)", r.Kind, r.Err)
	}
	if r := fetch("https://127.0.0.1:" + port(other) + "/ip"); r.Kind != TLS {
		t.Errorf("the other server trusted, an IP address its certificate does not name: %s (%v)", r.Kind, r.Err)
	}
}

// x509Of is the certificate a TLS test server serves.
func x509Of(t *testing.T, s *httptest.Server) *x509.Certificate {
	c, err := x509.ParseCertificate(s.TLS.Certificates[0].Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// selfSigned is a self-signed certificate and key for name.
func selfSigned(t *testing.T, name string) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
