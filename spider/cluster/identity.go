package cluster

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// Identify returns this node's id: flag when it is >= 0 (`--node`),
// otherwise the one member whose UDP address is an address of this
// machine (local, as LocalAddrs lists them, and all of 127.0.0.0/8 with
// 127.0.0.1; a host name resolved as Addrs resolves it, to the address
// the node binds), otherwise configured (the
// config's cluster.node). how says which rule decided, for the log.
// Several members on local addresses (a test on one machine) need --node.
func Identify(members []Member, flag, configured int, local []netip.Addr) (id int, how string, err error) {
	if flag >= 0 {
		for _, m := range members {
			if m.ID == flag {
				return flag, "--node", nil
			}
		}
		return 0, "", fmt.Errorf("--node %d is not in cluster.nodes", flag)
	}
	listed, loopback := map[netip.Addr]bool{}, false
	for _, a := range local {
		listed[a.Unmap()] = true
		loopback = loopback || a.Unmap().Is4() && a.IsLoopback()
	}
	// The loopback interface lists 127.0.0.1, but the machine has all of
	// 127.0.0.0/8: a cluster on one machine may give its nodes 127.0.0.2,
	// 127.0.0.3... (one port for all), which are as local.
	isLocal := func(a netip.Addr) bool {
		a = a.Unmap()
		return listed[a] || loopback && a.Is4() && a.IsLoopback()
	}
	var match []int
	for _, m := range members {
		host, _, err := net.SplitHostPort(m.UDP)
		if err != nil {
			continue
		}
		a, err := netip.ParseAddr(host)
		if err != nil {
			// A name: Addrs resolves it at start the same way, and a
			// name that does not resolve is reported there.
			ua, rerr := net.ResolveUDPAddr("udp", m.UDP)
			if rerr != nil {
				continue
			}
			a = ua.AddrPort().Addr()
		}
		if isLocal(a) {
			match = append(match, m.ID)
		}
	}
	switch len(match) {
	case 1:
		return match[0], "its UDP address is local", nil
	case 0:
		return configured, "cluster.node (no node's UDP address is local)", nil
	}
	ids := make([]string, len(match))
	for i, m := range match {
		ids[i] = fmt.Sprint(m)
	}
	if flag < 0 {
		for _, m := range match {
			if m == configured {
				return configured, "cluster.node (nodes " + strings.Join(ids, ", ") + " all have local addresses)", nil
			}
		}
	}
	return 0, "", fmt.Errorf("nodes %s all have local UDP addresses and cluster.node is none of them: say which with --node", strings.Join(ids, ", "))
}

// LocalAddrs lists the addresses of this machine's interfaces.
func LocalAddrs() ([]netip.Addr, error) {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, a := range as {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr().Unmap())
		}
	}
	return out, nil
}
