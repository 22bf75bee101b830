package spider

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kspider/kspider/collector"
	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/storage"
)

// A list's pages are processed as they arrive. The collector calls the
// list's Each (listResults.each) with every result as soon as it is final,
// on the goroutine that called Fetch (processList's) while the rest of the
// list is fetched: the result is classified and a page's links are
// extracted; a page to store goes to the list's encoder goroutine, which
// makes its store record and gives its buffers back to the collector's
// pool (any other result's go back at once). Processed only once the whole
// list was back, every fetcher held up to a list of raw bodies, about half
// a node's live heap at its peak. What waits for the list's end is small:
// the outcome, the links and the compressed record (which then waits for
// its links' sync, node_held.go).
//
// Each does CPU work only: no scheduler, no writer, nothing that can wait
// on a sync, since the list's connection stays open meanwhile (it may wait
// for the encoder, a page or two behind, which is CPU work). Everything
// with an effect beyond the list (counters, the page's depth, reports,
// the writer, the store) happens after Fetch, in list order, exactly as
// when the list was processed at its end: a list that is then dropped
// (robots.txt redirects, a Crawl-delay, the crawl stopping) only wasted
// the work.
//
// A list's requests carry the index of their URL in the list plus one
// (listResults.reqID): the robots.txt result, which also goes through Each,
// has ID 0 and is left to the batch's Release.

// pageResult is what became of one URL of a list.
type pageResult struct {
	seen   bool // classified (by Each, or after Fetch for a result it never saw)
	o      scheduler.Outcome
	store  bool            // the page is stored (o reported once it is durable)
	links  *pageLinks      // its links, if any (depth set after Fetch)
	nlinks int             // how many
	enc    storage.Encoded // its record, when store
	size   int             // its body's bytes on the wire
	err    error           // encoding the record failed
}

// listResults is one list's results as they are processed.
type listResults struct {
	n    *Node
	ids  []uint32 // the list's ids
	res  []pageResult
	held int64 // bytes of the records made (node_held.go), by the encoder

	// The records are made on a goroutine of the list's own (encoder),
	// a few pages behind Each: made in Each, they lengthened the chain
	// a one-host crawl waits on (fetch, links, the host released, its
	// next list), which before took the encoding after the host's
	// release (pages/s 0.64-0.89x on the documentation crawls). The queue
	// is short, so that a slow encoder holds the fetch back rather than
	// the list's bodies.
	queue chan encodeJob // nil while no encoder runs
	wg    sync.WaitGroup
}

// encodeJob is one page for the encoder: the list's i-th URL, result r.
type encodeJob struct {
	i int
	r *collector.Result
}

// encodeQueue is how many pages may wait for the encoder.
const encodeQueue = 2

func newListResults(n *Node, ids []uint32) *listResults {
	return &listResults{n: n, ids: ids, res: make([]pageResult, len(ids))}
}

// wait waits for the encoder to be done with every page handed to it;
// then their records (and errors) are in res, and held is final. Called
// on the list's goroutine before its batch is released or forgotten.
func (lr *listResults) wait() {
	if lr.queue == nil {
		return
	}
	close(lr.queue)
	lr.wg.Wait()
	lr.queue = nil
}

// encoder encodes the pages queued, each result's buffers going back to
// the collector at once.
func (lr *listResults) encoder(q <-chan encodeJob) {
	defer lr.wg.Done()
	for j := range q {
		p := &lr.res[j.i]
		p.enc, p.err = lr.n.encodePage(lr.ids[j.i], j.r)
		lr.held += int64(p.enc.Len())
	}
}

// reset forgets the results seen so far (a batch dropped).
func (lr *listResults) reset() {
	lr.wait()
	clear(lr.res)
	lr.held = 0
}

// reqID is the collector request ID of the list's i-th URL.
func reqID(i int) uint64 { return uint64(i) + 1 }

// each is the list's collector.List.Each: it processes result r and gives
// its buffers back, or hands it to the encoder, which does. A result seen
// before is left alone.
func (lr *listResults) each(r *collector.Result) {
	if r.ID == 0 || r.ID > uint64(len(lr.res)) {
		return // robots.txt (released with the batch)
	}
	p := &lr.res[r.ID-1]
	if p.seen {
		return
	}
	p.seen = true
	n := lr.n
	var extract bool
	p.o, p.store, extract = classify(r)
	if extract {
		body := r.Body
		if p.o.Kind == scheduler.Redirect {
			body = nil // only the Location, Link and Refresh headers count
		}
		// The page's depth is the scheduler's, read after Fetch.
		pl := n.extractLinks(lr.ids[r.ID-1], 0, r.URL, body, r.Header, p.o.Kind == scheduler.Redirect)
		if p.nlinks = len(pl.links) + len(pl.same); p.nlinks > 0 {
			p.links = &pl
		}
	}
	if !p.store {
		n.coll.ReleaseResult(r)
		return
	}
	p.size = len(r.WireBody)
	if lr.queue == nil {
		lr.queue = make(chan encodeJob, encodeQueue)
		lr.wg.Add(1)
		go lr.encoder(lr.queue)
	}
	lr.queue <- encodeJob{i: int(r.ID - 1), r: r}
}

// classify says what result r is: the outcome to report, whether its page
// is stored, and whether its links are extracted.
func classify(r *collector.Result) (o scheduler.Outcome, store, links bool) {
	if r.Status == 0 || r.Kind == collector.Canceled {
		switch {
		case r.Kind == collector.NotTried, r.Kind == collector.Canceled,
			r.Attempts == 0 && r.Kind != collector.BadURL && !hostDown(r.Kind):
			// Never sent (the list's connection failed before its turn):
			// not a failure of this URL, so no retry spent on it.
			return scheduler.Outcome{Kind: scheduler.NotTried}, false, false
		case r.Kind == collector.BadURL:
			return scheduler.Outcome{Kind: scheduler.FailedPerm}, false, false
		}
		return scheduler.Outcome{Kind: scheduler.FailedTemp}, false, false
	}
	if r.Status == 429 || r.Status/100 == 5 {
		// Fetched again after the back-off; not stored, so that a page is
		// stored once.
		return scheduler.Outcome{Kind: scheduler.FailedTemp, Status: r.Status, RetryAfter: retryAfter(r.RetryAfter, time.Now())}, false, false
	}
	o = storedOutcome(r.Status)
	html := r.Status/100 == 2 && strings.Contains(strings.ToLower(r.ContentType), "html")
	return o, true, o.Kind == scheduler.Redirect || html
}

// cutShort makes a page whose body ended early (the server hung up before
// its Content-Length, or the response timed out) a temporary failure, so
// that it is fetched again, unless this was the URL's last try: then what
// arrived is stored, as the server keeps sending it. Stored as fetched at
// once, a cut page stood for the page for good and the links of its
// missing part were never seen. Decided after Fetch, since Each must not
// ask the scheduler (the record Each had made is dropped).
func (n *Node) cutShort(id uint32, r *collector.Result, p *pageResult) {
	if !r.Short || !p.store || p.o.Kind != scheduler.Fetched {
		return
	}
	if int(n.sched.URL(id).Retries) >= cmp.Or(n.cfg.Scheduler.MaxRetries, 3) { // the scheduler's default
		return
	}
	p.o = scheduler.Outcome{Kind: scheduler.FailedTemp, Status: r.Status}
	p.store, p.links, p.nlinks = false, nil, 0
}

// hostDown tells a result whose URL was never sent because no connection
// to the host could be made (its name, a connection, a handshake). That
// is the host failing, not the list cut short: reported NotTried, a host
// gone down after its robots.txt was cached had its list handed out again
// at the politeness delay forever, with no back-off and no retry spent.
func hostDown(k collector.Kind) bool {
	return k == collector.DNS || k == collector.Connect || k == collector.TLS
}

// outOfFiles stops the crawl when r failed for want of a file descriptor
// (this process's open-files limit, or the system's): not the host's
// failure. Counted as one, the crawl went on spending every URL's retries
// on it and "finished" (exit 0) without the pages, which no later run
// fetched; stopped at once, a URL spends one retry and the next run,
// with the limit raised, fetches it.
func (n *Node) outOfFiles(r *collector.Result) {
	if r.Status != 0 || !errors.Is(r.Err, syscall.EMFILE) && !errors.Is(r.Err, syscall.ENFILE) {
		return
	}
	var lim syscall.Rlimit
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	n.fail(fmt.Errorf("spider: fetching %s: %v: the open-files limit (%d) is too low for %d fetchers (they need %d); raise it (ulimit -n, LimitNOFILE=) or lower fetchers, and run again",
		r.URL, r.Err, lim.Cur, n.maxFetchers(), FilesNeeded(n.maxFetchers())))
}

// count counts result r, processed into p, in the node's figures, after
// Fetch and in list order.
func (n *Node) count(r *collector.Result, p *pageResult) {
	n.ss.countResult(r, p.o.Kind)
	n.outOfFiles(r)
	if r.Status == 0 || r.Kind == collector.Canceled {
		switch p.o.Kind {
		case scheduler.FailedPerm:
			n.st.errors.Add(1)
		case scheduler.FailedTemp:
			n.st.errors.Add(1)
			n.cfg.URLLogf("fetch %s: %v: %v", r.URL, r.Kind, r.Err)
		}
		return
	}
	n.st.fetched.Add(1)
	if p.o.Kind == scheduler.FailedTemp {
		// Answered, but to be fetched again (a 5xx, a 429, a body cut
		// short): said as a failure without an answer is, so that a
		// second request for the URL is seen to be a retry.
		n.st.errors.Add(1)
		n.cfg.URLLogf("fetch %s: status %d (%v): fetched again later", r.URL, r.Status, r.Kind)
	}
	n.st.links.Add(uint64(p.nlinks))
}
