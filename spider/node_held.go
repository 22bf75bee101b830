package spider

import (
	"fmt"
	"time"

	"github.com/kspider/kspider/collector"
	"github.com/kspider/kspider/storage"
)

// A page to store waits, after it is fetched, until its links are durable
// (the durability order, node.go); at crawl rates that is hundreds of
// pages. It waits compressed: encodePage turns the result into its store
// record (storage.Store.Encode) before the wait and gives the result's
// buffers back to the collector at once; storeResult later hands the
// record to the store (PutEncoded). Kept raw until the pages were durable,
// the waiting pages were about half of the heap crawling the PostgreSQL
// documentation and made the node's peak RSS 1.6x colly's. A page is
// encoded and its buffers given back soon after it arrives (a page or two
// behind, on a goroutine of its list's own) while the rest of its list is
// fetched (node_result.go), and every other result's buffers go back then
// too; the records' bytes count in n.held once the list's links go to the
// writer.

// encodePage encodes the collector's faithful record of one response for
// the store, without a copy: the header block as received (without the
// status line) and the body with its content coding. r's buffers go back
// to the collector either way. It runs on the list's encoder goroutine
// (node_result.go).
func (n *Node) encodePage(id uint32, r *collector.Result) (storage.Encoded, error) {
	p := &storage.Page{URLID: uint64(id), URL: r.URL, FetchTime: time.Now().Add(-r.Timings.Total).UTC(),
		Duration: r.Timings.Total, Status: r.Status, Header: headerLines(r.Head), Body: r.WireBody}
	if r.Addr.IsValid() {
		p.ServerIP = r.Addr.Addr()
	}
	e, err := n.store.Encode(p)
	n.coll.ReleaseResult(r)
	if err != nil {
		return e, fmt.Errorf("spider: storing %s (id %d): %w", r.URL, id, err)
	}
	return e, nil
}

// heldSyncBytes bounds the encoded records waiting for their links' sync:
// past it, a list's links ask the writer for a sync as soon as they are
// in the tree instead of waiting for the sync interval. At 4,000 pages a
// second, 100 ms of the PostgreSQL documentation's records made 2.7 MB
// of a 9 MB live heap, which the garbage collector's target doubles. A
// cluster node's bound is clusterHeldSyncBytes (node_sync.go).
const heldSyncBytes = 512 << 10
