package testweb

import (
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func TestDNS(t *testing.T) {
	srv, _ := startTest(t, Config{Hosts: 120, Seed: 9, MaxPages: 30}, ServeConfig{})
	web := srv.Web()
	query := func(name string, qtype uint16, netw string) (*dns.Msg, error) {
		c := &dns.Client{Net: netw, Timeout: 300 * time.Millisecond}
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), qtype)
		m.RecursionDesired = true
		in, _, err := c.Exchange(m, srv.DNSAddr())
		return in, err
	}
	byKind := map[DNSKind]*Host{}
	var v6, wild *Host
	for _, h := range web.Hosts() {
		if h.Wildcard {
			wild = h
			continue
		}
		if byKind[h.DNS] == nil {
			byKind[h.DNS] = h
		}
		if h.IPv6 && h.DNS == DNSNormal && v6 == nil {
			v6 = h
		}
	}
	for _, netw := range []string{"udp", "tcp"} {
		h := byKind[DNSNormal]
		in, err := query(h.Name, dns.TypeA, netw)
		if err != nil || in.Rcode != dns.RcodeSuccess || len(in.Answer) != 1 {
			t.Fatalf("%s A %s: %v %v", netw, h.Name, err, in)
		}
		a := in.Answer[0].(*dns.A)
		if a.A.String() != h.Addr.String() || a.Hdr.Ttl != h.TTL || !in.Authoritative || in.RecursionAvailable {
			t.Errorf("%s A %s: %v", netw, h.Name, in)
		}
	}
	h := byKind[DNSCNAME]
	in, err := query(h.Name, dns.TypeA, "udp")
	if err != nil || len(in.Answer) != len(h.CNAMEs)+1 {
		t.Fatalf("CNAME host %s: %v %v", h.Name, err, in)
	}
	if last := in.Answer[len(in.Answer)-1].(*dns.A); last.Hdr.Name != dns.Fqdn(h.CNAMEs[len(h.CNAMEs)-1]) || last.A.String() != h.Addr.String() {
		t.Errorf("CNAME chain ends with %v", last)
	}
	in, err = query(h.CNAMEs[len(h.CNAMEs)-1], dns.TypeA, "udp")
	if err != nil || len(in.Answer) != 1 {
		t.Errorf("alias lookup: %v %v", err, in)
	}
	if in, err := query(byKind[DNSServFail].Name, dns.TypeA, "udp"); err != nil || in.Rcode != dns.RcodeServerFailure {
		t.Errorf("servfail host: %v %v", err, in)
	}
	if _, err := query(byKind[DNSTimeout].Name, dns.TypeA, "udp"); err == nil {
		t.Errorf("timeout host answered")
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Errorf("timeout host: %v", err)
	}
	for _, name := range []string{byKind[DNSNXDomain].Name, "www.google.com", "nothing.invalid"} {
		if in, err := query(name, dns.TypeA, "udp"); err != nil || in.Rcode != dns.RcodeNameError || len(in.Ns) != 1 {
			t.Errorf("%s: want NXDOMAIN with SOA: %v %v", name, err, in)
		}
	}
	if in, err := query("x7k2q."+wild.Name, dns.TypeA, "udp"); err != nil || len(in.Answer) != 1 {
		t.Errorf("wildcard %s: %v %v", wild.Name, err, in)
	}
	if v6 != nil && srv.ipv6 {
		in, err := query(v6.Name, dns.TypeAAAA, "udp")
		if err != nil || len(in.Answer) != 1 || in.Answer[0].(*dns.AAAA).AAAA.String() != "::1" {
			t.Errorf("AAAA %s: %v %v", v6.Name, err, in)
		}
	}
	hn := byKind[DNSNormal]
	if !hn.IPv6 {
		if in, err := query(hn.Name, dns.TypeAAAA, "udp"); err != nil || in.Rcode != dns.RcodeSuccess || len(in.Answer) != 0 {
			t.Errorf("AAAA of an IPv4-only host: want NODATA: %v %v", err, in)
		}
	}
}
