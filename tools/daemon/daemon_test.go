package daemon

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func TestStartDnsmasq(t *testing.T) {
	if _, ok := Look("dnsmasq"); !ok {
		if os.Getenv("KSPIDER_REQUIRE_SERVERS") == "1" {
			t.Fatal("dnsmasq not found: install the Debian package dnsmasq-base")
		}
		t.Skip("dnsmasq not found (Debian package dnsmasq-base)")
	}
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.9 www.example.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := StartDnsmasq(ctx, hosts, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	c := &dns.Client{Timeout: 2 * time.Second}
	ask := func(name string) *dns.Msg {
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		r, _, err := c.Exchange(m, d.Addr.String())
		if err != nil {
			t.Fatalf("asking %s: %v", name, err)
		}
		return r
	}
	r := ask("www.example.test.")
	if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "127.0.0.9" || r.Answer[0].Header().Ttl != 3600 {
		t.Errorf("www.example.test: %v", r.Answer)
	}
	if r := ask("nothing.test."); r.Rcode != dns.RcodeNameError {
		t.Errorf("nothing.test: rcode %s, want NXDOMAIN (and no forwarding)", dns.RcodeToString[r.Rcode])
	}
}
