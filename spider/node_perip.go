package spider

import (
	"context"
	"net/netip"
	"strings"

	"github.com/kspider/kspider/scheduler"
)

// overIPLimit tells the scheduler the address of l's host before anything
// of it is fetched, for politeness.per_ip (scheduler.Config.MaxHostsPerIP):
// the scheduler holds a host's list back while as many hosts of its
// address fetch, but learns the address only from the node. It resolves
// the name through the node's caching resolver, whose answer the
// collector's own lookup then finds in the cache. True: the list went out
// before its address was known and is one too many there; the caller gives
// it back unfetched, and the host's next list waits its turn. A lookup
// that fails says nothing here: the collector's lookup fails the list as
// before.
func (n *Node) overIPLimit(ctx context.Context, l scheduler.List) bool {
	if n.cfg.Scheduler.MaxHostsPerIP <= 0 {
		return false
	}
	name := strings.Trim(hostName(l.Name), "[]") // the host key's name
	ip, err := netip.ParseAddr(name)
	if err != nil {
		if n.cfg.Lookup == nil {
			return false
		}
		addrs, err := n.cfg.Lookup(ctx, name)
		if err != nil || len(addrs) == 0 {
			return false
		}
		ip = addrs[0] // the collector dials them in order
	}
	over, err := n.sched.SetIP(l.Host, ip)
	if err != nil {
		n.fail(err)
		return true
	}
	return over
}
