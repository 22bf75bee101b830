package testweb

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"strings"
	"sync"
	"time"
)

// authority is the throw-away certificate authority of one running server:
// generated at start, it signs a leaf per host name on first use (SNI).
type authority struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	leafKey *ecdsa.PrivateKey // one key for all leaves: keys are the slow part
	pool    *x509.CertPool
	pem     []byte

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
	serial int64
}

func newAuthority() (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("testweb: CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kspider testweb CA", Organization: []string{"kspider testweb"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("testweb: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("testweb: leaf key: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &authority{
		cert: cert, key: key, leafKey: leafKey, pool: pool,
		pem:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		leaves: map[string]*tls.Certificate{}, serial: 1,
	}, nil
}

// leaf returns the certificate for a DNS name, or for an IP when name is empty.
func (a *authority) leaf(name string, ip net.IP) (*tls.Certificate, error) {
	id := name
	if id == "" {
		id = ip.String()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.leaves[id]; ok {
		return c, nil
	}
	a.serial++
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(a.serial),
		Subject:      pkix.Name{CommonName: id},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if name != "" {
		tmpl.DNSNames = []string{name}
		// Spam subdomains share a wildcard certificate of their domain.
		if i := strings.IndexByte(name, '.'); i > 0 && strings.Count(name, ".") >= 2 {
			tmpl.DNSNames = append(tmpl.DNSNames, "*."+name[i+1:])
		}
	} else {
		tmpl.IPAddresses = []net.IP{ip}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &a.leafKey.PublicKey, a.key)
	if err != nil {
		return nil, fmt.Errorf("testweb: certificate for %q: %w", id, err)
	}
	c := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: a.leafKey}
	a.leaves[id] = c
	return c, nil
}

func (a *authority) config(web *Web) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			name := strings.ToLower(strings.TrimSuffix(hello.ServerName, "."))
			if name != "" {
				h, ok := web.Host(name)
				if !ok {
					return nil, fmt.Errorf("testweb: TLS: no host %q in the web", name)
				}
				if h.Wildcard && name != h.Name {
					name = "x." + h.Name // one wildcard leaf for all subdomains
				}
				return a.leaf(name, nil)
			}
			ip := net.IPv4(127, 0, 0, 1)
			if ta, ok := hello.Conn.LocalAddr().(*net.TCPAddr); ok {
				ip = ta.IP
			}
			return a.leaf("", ip)
		},
	}
}
