package testweb

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// dnsServer answers for the whole web and for nothing else: it is
// authoritative for every name, never recurses and never forwards.
type dnsServer struct {
	udp, tcp *dns.Server
	addr     string
}

// dnsAnswerer holds the lookup tables.
type dnsAnswerer struct {
	web     *Web
	aliases map[string]aliasRef // CNAME target name -> host and its place in the chain
	ipv6    bool
}

type aliasRef struct {
	host *Host
	pos  int
}

func startDNS(web *Web, addr string, ipv6 bool) (*dnsServer, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().IsLoopback() {
		return nil, fmt.Errorf("testweb: DNS address %q: want a loopback ip:port", addr)
	}
	a := &dnsAnswerer{web: web, aliases: map[string]aliasRef{}, ipv6: ipv6}
	for _, h := range web.hosts {
		for i, c := range h.CNAMEs {
			a.aliases[c] = aliasRef{host: h, pos: i}
		}
	}
	for attempt := 0; attempt < 20; attempt++ {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return nil, fmt.Errorf("testweb: DNS: %w", err)
		}
		bound := pc.LocalAddr().String()
		ln, err := net.Listen("tcp", bound)
		if err != nil {
			pc.Close()
			if ap.Port() != 0 {
				return nil, fmt.Errorf("testweb: DNS over TCP: %w", err)
			}
			continue
		}
		d := &dnsServer{addr: bound,
			udp: &dns.Server{PacketConn: pc, Handler: a},
			tcp: &dns.Server{Listener: ln, Handler: a, ReadTimeout: 5 * time.Second}}
		udpUp, tcpUp := make(chan struct{}), make(chan struct{})
		d.udp.NotifyStartedFunc = func() { close(udpUp) }
		d.tcp.NotifyStartedFunc = func() { close(tcpUp) }
		go d.udp.ActivateAndServe()
		go d.tcp.ActivateAndServe()
		<-udpUp
		<-tcpUp
		return d, nil
	}
	return nil, fmt.Errorf("testweb: DNS: no port free for both UDP and TCP on %s", ap.Addr())
}

func (d *dnsServer) close() {
	d.udp.Shutdown()
	d.tcp.Shutdown()
}

const cnameTTL = 300

func (a *dnsAnswerer) ServeDNS(w dns.ResponseWriter, q *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(q)
	m.Authoritative = true
	m.RecursionAvailable = false
	if q.Opcode != dns.OpcodeQuery {
		m.Rcode = dns.RcodeNotImplemented
		w.WriteMsg(m)
		return
	}
	if len(q.Question) != 1 || q.Question[0].Qclass != dns.ClassINET {
		m.Rcode = dns.RcodeRefused
		w.WriteMsg(m)
		return
	}
	qn := q.Question[0]
	if !a.answer(m, strings.ToLower(qn.Name), qn.Qtype) {
		return // the host times out: no answer at all
	}
	w.WriteMsg(m)
}

// answer fills m; false means send nothing.
func (a *dnsAnswerer) answer(m *dns.Msg, fqdn string, qtype uint16) bool {
	name := strings.TrimSuffix(fqdn, ".")
	var h *Host
	chain := []string{}
	if ref, ok := a.aliases[name]; ok {
		h = ref.host
		chain = h.CNAMEs[ref.pos:]
	} else if hh, ok := a.web.Host(name); ok {
		h = hh
		switch h.DNS {
		case DNSServFail:
			m.Rcode = dns.RcodeServerFailure
			return true
		case DNSTimeout:
			return false
		case DNSNXDomain:
			m.Rcode = dns.RcodeNameError
			m.Ns = append(m.Ns, soa(name))
			return true
		case DNSCNAME:
			chain = append([]string{name}, h.CNAMEs...)
		}
	} else {
		m.Rcode = dns.RcodeNameError
		m.Ns = append(m.Ns, soa(name))
		return true
	}
	owner := fqdn
	for i := 0; i+1 < len(chain); i++ {
		m.Answer = append(m.Answer, &dns.CNAME{
			Hdr:    dns.RR_Header{Name: dns.Fqdn(chain[i]), Rrtype: dns.TypeCNAME, Class: dns.ClassINET, Ttl: cnameTTL},
			Target: dns.Fqdn(chain[i+1])})
		owner = dns.Fqdn(chain[i+1])
	}
	if qtype == dns.TypeCNAME && len(m.Answer) > 0 {
		m.Answer = m.Answer[:1]
		return true
	}
	switch qtype {
	case dns.TypeA, dns.TypeANY:
		m.Answer = append(m.Answer, &dns.A{
			Hdr: dns.RR_Header{Name: owner, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: h.TTL},
			A:   net.IP(h.Addr.AsSlice())})
	case dns.TypeAAAA:
		if h.IPv6 && a.ipv6 {
			m.Answer = append(m.Answer, &dns.AAAA{
				Hdr:  dns.RR_Header{Name: owner, Rrtype: dns.TypeAAAA, Class: dns.ClassINET, Ttl: h.TTL},
				AAAA: net.IPv6loopback})
		}
	}
	if len(m.Answer) == 0 {
		m.Ns = append(m.Ns, soa(name)) // NODATA
	}
	return true
}

// soa is the negative-caching SOA of a name's top-level zone.
func soa(name string) dns.RR {
	zone := name[strings.LastIndexByte(name, '.')+1:]
	return &dns.SOA{
		Hdr: dns.RR_Header{Name: dns.Fqdn(zone), Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 60},
		Ns:  "ns.testweb.invalid.", Mbox: "hostmaster.testweb.invalid.",
		Serial: 1, Refresh: 3600, Retry: 600, Expire: 86400, Minttl: 60,
	}
}
