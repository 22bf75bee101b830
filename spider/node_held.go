package spider

import "github.com/kspider/kspider/collector"

// A page goes to the store without a copy: its collector result keeps the
// buffers behind Head and WireBody until the page is durable, when
// Node.durable hands them back to the collector; the other results of a
// list go back when the list is done.

// holdResult records that the store will read r's buffers for page id; the
// caller holds n.awaitMu.
func (n *Node) holdResult(id uint32, r *collector.Result) {
	if n.held == nil {
		n.held = map[uint32]*collector.Result{}
	}
	n.held[id] = r
}

// releaseUnkept returns the buffers of b's results not handed to the store,
// and of its robots.txt result.
func (n *Node) releaseUnkept(b *collector.Batch, kept []bool) {
	for i := range b.Results {
		if !kept[i] {
			n.coll.ReleaseResult(&b.Results[i])
		}
	}
	if b.Robots != nil {
		n.coll.ReleaseResult(b.Robots)
	}
}
