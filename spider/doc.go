// Package spider is one kspider node and its page processing: link
// extraction (spider/links), URL normalisation (spider/urlnorm), scope and
// trap filters (spider/scope) and robots.txt (spider/robots).
//
// There is one crawl path, the Node (node.go): the scheduler hands out a
// host's list of URL ids, the collector fetches it over one connection,
// each page is stored and its links go to the one writer goroutine, which
// applies the depth limit, the scope filters and the budgets and adds new
// URLs to the URL tree and the scheduler. `kspider run` and `kspider demo`
// both run on it.
package spider

import (
	"context"
	"net/netip"
)

// DefaultUserAgent is what a node sends unless configured otherwise.
const DefaultUserAgent = "KSpider/0.1 (+https://github.com/kspider/kspider)"

// LookupFunc resolves a host name to addresses. The node passes its caching
// resolver's Lookup; nil means the operating system's resolver.
type LookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)
