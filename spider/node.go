package spider

// The node: the crawl path built on the scheduler, the collector, the
// checksummed store and the URL tree (issue 14). Data flows one way:
//
//	scheduler.Next → collector.Fetch → page processing (links, depth, scope,
//	robots) → store.Put, and new URLs → the writer → URL tree + scheduler.Add
//
// # Durability order
//
// A URL id must be durable in the URL tree, and its record in the
// scheduler, before any page stored under that id can become durable;
// otherwise a crash could leave pages whose ids a later run hands to other
// URLs. The node enforces this with one writer goroutine, the only one that
// adds to the tree and the scheduler: it syncs the tree, then the scheduler,
// every NodeConfig.SyncInterval while it has unsynced additions, on
// demand, and at once when no list is fetching (node_idle.go), and then
// publishes the tree length it synced. A page is handed to the store only
// once that length is above its id (Node.waitSynced), so the store, which
// syncs pages some time after they are put, can never make a page durable
// before its id.
//
// A list's links go the same way, one step earlier: they are sent to the
// writer with a channel it closes after the next sync, and the list's pages
// are stored only then. So a page that survives a crash has its links durable
// too, and OpenNode, after a crash, reports the stored pages whose URLs the
// scheduler still has unfinished as fetched instead of fetching them again
// (Node.stored). The other way round, a URL is reported fetched to the
// scheduler only once its page is durable (the store's OnDurable), so a
// crash never leaves a URL completed without its page. A failed store write, or a failed tree or scheduler sync,
// stops the crawl with an error.

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kspider/kspider/collector"
	"github.com/kspider/kspider/resolver"
	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/spider/robots"
	"github.com/kspider/kspider/spider/scope"
	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/urltree"
)

// NodeConfig configures a Node. Dir is required.
type NodeConfig struct {
	Dir         string   // DIR/urls (URL tree), DIR/sched (scheduler), DIR/LOCK
	StorageDirs []string // page store directories (default DIR/pages)
	Codec       string   // page codec (storage default when empty)
	Seeds       []string // canonical-able absolute http(s) URLs, depth 0

	UserAgent string // default DefaultUserAgent
	MaxDepth  int    // link depth limit, 0..scope.MaxLimit (253; seeds only at 0)
	MaxLinks  int    // distinct links kept per page (links.Options.MaxLinks)
	MaxPages  int64  // pages fetched over all runs before the crawl ends (limits.max_pages); 0: none

	// RobotsTTL is how long a fetched robots.txt is used (robots.DefaultTTL
	// when 0); RobotsStaleFor how long past that an older copy stands in
	// for an unreachable one (politeness.robots_stale_for; robots'
	// DefaultStaleFor when 0, never when < 0).
	RobotsTTL, RobotsStaleFor time.Duration
	Scope                     *scope.Config

	// Collector configures the fetchers; the node fills in UserAgent,
	// Lookup and RootCAs from the fields above when they are unset.
	Collector collector.Config
	// Scheduler configures the scheduler; a nil Clock is SoloClock().
	Scheduler scheduler.Config

	Lookup  LookupFunc
	RootCAs *x509.CertPool

	// SyncInterval is how often the writer syncs tree and scheduler while
	// it has unsynced additions (default 100 ms).
	SyncInterval time.Duration
	// StopGrace is how long the lists out when the crawl stops may go on
	// receiving the responses they asked for before they are cut (default
	// 3 s): a stop then costs no page fetched twice, unless a response
	// takes longer than that.
	StopGrace time.Duration
	// Logf receives the node's log lines, one call at a time (the node
	// serialises its goroutines' calls: a logger writing to a plain
	// buffer or file needs no lock of its own).
	Logf func(string, ...any)
	// URLLogf receives the lines about one URL or host (a fetch that
	// failed, a link refused, a robots.txt unreachable), serialised with
	// Logf's. A large crawl has many, and an operator who reads Logf's
	// (damage found, a resume, the cluster's state) would lose those in
	// them. Nil: they go to Logf.
	URLLogf func(string, ...any)

	// Status hooks (node_status.go), all optional: the NTP clock's view of
	// itself (also the reason a cluster node logs when its clock is
	// unsafe), the resolver's counters, the cluster's peers.
	ClockStatus func() scheduler.Status
	DNSStats    func() resolver.Stats
	Peers       func() []PeerStatus

	// Cluster, when set, makes the node one of a cluster (node_cluster.go).
	Cluster *NodeCluster
}

// Node is one crawling node on a data directory.
type Node struct {
	cfg    NodeConfig
	lock   *DirLock
	dirs   dirWatch   // node_dirs.go
	stores *storeDirs // node_stores.go
	tree   *urltree.Tree
	sched  *scheduler.Scheduler
	store  *storage.Store
	coll   *collector.Collector
	filter *scope.Filter
	depth  scope.Depth
	dstore treeDepth // depth.Store
	agent  string
	budget budgets // node_budget.go
	// freshDir: the URL tree did not exist when the node opened (a new
	// directory; a cluster node's hellos say so, node_cluster_hello.go).
	freshDir bool

	robots nodeRobots // node_robots.go

	// Done detection: the crawl ends when no URL is unfinished, no message
	// waits for the writer and no list is out.
	unfinished atomic.Int64
	pending    atomic.Int64
	inflight   atomic.Int64
	fetchMu    sync.Mutex    // node_idle.go
	fetching   int           // lists between their start and the end of their fetch
	fetchGen   uint64        // counts the times fetching rose from 0
	idleSync   atomic.Bool   // no list fetching for idleAfter: sync at once
	fetchIdle  chan struct{} // poked when idleSync is set
	idle       chan struct{} // poked when one of the three may have reached 0

	syncMu     sync.Mutex
	syncCond   *sync.Cond
	syncedLen  int   // tree ids below this are durable in tree and scheduler
	syncErr    error // the writer's fatal error
	syncReq    chan struct{}
	prunes     atomic.Uint64 // passes of pruneOutlinks (node_outlinks.go)
	held       atomic.Int64  // bytes of records waiting for their links' sync (node_held.go)
	syncFailed chan struct{} // closed when syncErr is set

	// stored holds the ids a crash left stored but unfinished in the
	// scheduler (found at OpenNode), each with the outcome its stored
	// response reports (storedOutcome) when handed out, not fetched again.
	// Read-only after OpenNode.
	stored map[uint32]scheduler.Outcome
	// recovered: recover has looked for them (node_recover.go).
	recovered bool

	// raiseFrom is the depth limit the directory was crawled to when this
	// run's is higher (node_depthlimit.go), else -1. Read-only after
	// OpenNode.
	raiseFrom int
	// scopeChanged: the directory was crawled under another scope
	// (node_scopechange.go): Run follows every stored page's links again.
	scopeChanged bool
	// pastUnknown names DIR/DEPTH or DIR/SCOPE missing from a directory
	// that holds a crawl (deleted as a damage message advises, or from
	// before the files): what it was crawled to is unknown, so Run's pass
	// follows every stored page's links again.
	pastUnknown []string
	raiseCut    atomic.Bool // the pass for them was cut short: nothing recorded

	reader *storage.Reader // the writer's, for storedLinks; opened on first use

	extractors sync.Pool // *links.Extractor, reused between pages

	// deepDrops are the ids lists drop beyond the depth limit (presets),
	// until reported.
	deepMu    sync.Mutex
	deepDrops map[uint32]bool

	awaitMu  sync.Mutex
	awaiting map[uint32]awaited // stored pages waiting to be durable, then reported

	errMu sync.Mutex
	err   error // first fatal error
	stop  context.CancelFunc

	st  nodeStats
	ss  statusState // node_status.go
	ctl control     // node_control.go

	cl *nodeCluster // nil alone
}

type nodeStats struct {
	pages, bytes, errors, fetched, denied, tooDeep, admitted, links atomic.Uint64
	rejected                                                        atomic.Uint64
	deniedOverBudget                                                atomic.Uint64 // of denied: robots.txt too costly to check (robots.Rules.CheckURL)
	durable                                                         atomic.Uint64 // pages made durable (Durable)
	durableBytes                                                    atomic.Uint64 // their bodies' bytes (DurableBytes)
	unreadable                                                      atomic.Uint64 // stored pages whose links could not be read back (noteUnreadable)
}

// awaited is a page handed to the store, waiting to be durable: the
// outcome to report then, and its body's size to count.
type awaited struct {
	o    scheduler.Outcome
	size int
}

// OpenNode locks cfg.Dir and opens its URL tree, scheduler and page store.
func OpenNode(cfg NodeConfig) (*Node, error) {
	if cfg.Dir == "" {
		return nil, errors.New("spider: NodeConfig.Dir is required")
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	if cfg.MaxDepth < 0 || cfg.MaxDepth > scope.MaxLimit {
		return nil, fmt.Errorf("spider: MaxDepth %d is out of range 0..%d", cfg.MaxDepth, scope.MaxLimit)
	}
	if cfg.Scope == nil {
		d := scope.Default()
		cfg.Scope = &d
	}
	if cfg.SyncInterval <= 0 {
		cfg.SyncInterval = 100 * time.Millisecond
		if cfg.Cluster != nil {
			cfg.SyncInterval = clusterSyncInterval // node_cluster.go
		}
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 3 * time.Second
	}
	cfg.Logf, cfg.URLLogf = serialLogf(cfg.Logf, cfg.URLLogf)
	if len(cfg.StorageDirs) == 0 {
		cfg.StorageDirs = []string{filepath.Join(cfg.Dir, "pages")}
	}
	if cfg.Scheduler.Clock == nil {
		cfg.Scheduler.Clock = SoloClock()
		if cfg.Scheduler.MaxWait == 0 {
			cfg.Scheduler.MaxWait = soloMaxWait // node_idle.go
		}
	}
	var nodeRef *Node
	if cfg.Cluster != nil {
		cfg.Scheduler.Clock = gate{inner: cfg.Scheduler.Clock, n: &nodeRef}
		if cfg.Scheduler.MaxWait == 0 {
			cfg.Scheduler.MaxWait = clusterMaxWait
		}
		if cfg.Scheduler.PhaseKey == nil {
			// Every origin of one host (scheme, port) is in one phase, so
			// that in a slot only one node fetches from the host.
			cfg.Scheduler.PhaseKey = hostName
		}
	}
	cc := cfg.Collector
	if cc.UserAgent == "" {
		cc.UserAgent = cfg.UserAgent
	}
	if cc.Lookup == nil && cfg.Lookup != nil {
		cc.Lookup = collector.LookupFunc(cfg.Lookup)
	}
	if cc.RootCAs == nil {
		cc.RootCAs = cfg.RootCAs
	}
	if cc.KeepIdle == 0 {
		cc.KeepIdle = keepIdle(cfg) // node_keep.go
	}
	cc.KeepPerAddr = cc.KeepPerAddr || cfg.Scheduler.MaxHostsPerIP > 0
	filter, err := scope.New(*cfg.Scope)
	if err != nil {
		return nil, err
	}
	coll, err := collector.New(cc)
	if err != nil {
		return nil, err
	}
	lock, err := LockDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	absent := absentPaths(cfg.Dir, cfg.StorageDirs) // node_refused.go
	refuse := func(err error) (*Node, error) {
		if uerr := absent.undo(); uerr != nil {
			err = errors.Join(err, uerr)
		}
		lock.Release()
		return nil, err
	}
	if err := checkIdentity(cfg.Dir, cfg.identity(), cfg.Logf); err != nil {
		return refuse(err)
	}
	if err := checkNewTreeStore(cfg.Dir, cfg.StorageDirs); err != nil {
		return refuse(err)
	}
	// n.lock is set once the open succeeds: the Close of one refused
	// leaves the lock held for refuse.
	n := &Node{cfg: cfg, coll: coll, filter: filter, agent: robots.ProductToken(cfg.UserAgent), freshDir: newTree(cfg.Dir),
		depth: scope.Depth{Max: cfg.MaxDepth},
		idle:  make(chan struct{}, 1), syncReq: make(chan struct{}, 1), fetchIdle: make(chan struct{}, 1),
		syncFailed: make(chan struct{}), stored: map[uint32]scheduler.Outcome{}, awaiting: map[uint32]awaited{}, deepDrops: map[uint32]bool{}}
	n.syncCond = sync.NewCond(&n.syncMu)
	n.ss.clock = systemClock()
	nodeRef = n
	n.dstore.n = n
	n.robots = newNodeRobots(n)
	n.depth.Store = &n.dstore
	if n.tree, err = urltree.Open(filepath.Join(cfg.Dir, treeSubdir), nil); err != nil {
		return refuse(err)
	}
	// Scheduler records past its commit for ids the tree lost in a crash
	// are dropped: the tree will give those ids to other URLs.
	cfg.Scheduler.URLLimit, cfg.Scheduler.LimitURLs = uint64(n.tree.Len()), true
	// The scheduler's records are by this tree's ids: one of another
	// tree (a sched/ copied from another data directory) is refused.
	cfg.Scheduler.TreeID = n.tree.ID()
	// One from before the tree IDs (format 3) has no ID to compare: the
	// scheduler compares a sample of its records' hosts with the tree's,
	// and refuses one the tree has no URL of (beside a new tree).
	cfg.Scheduler.HostOf = SchedHostOf(n.tree) // schedhosts.go: kspider check gives the same
	if n.sched, err = scheduler.Open(filepath.Join(cfg.Dir, "sched"), cfg.Scheduler); err != nil {
		n.tree.Close()
		return refuse(err)
	}
	if err = checkStoreGone(cfg.Dir, cfg.StorageDirs, n.sched); err != nil { // identity.go
		n.closeSched()
		n.tree.Close()
		return refuse(err)
	}
	if n.stores, err = openStores(cfg.Dir, cfg.StorageDirs, n.freshDir, cfg.Logf); err != nil { // node_stores.go
		n.closeSched()
		n.tree.Close()
		return refuse(err)
	}
	// The store's records are by this tree's ids too: one of another
	// tree (storage directories swapped between nodes) is refused.
	if n.store, err = storage.Open(storage.Config{Dirs: cfg.StorageDirs, Codec: cfg.Codec, TreeID: n.tree.ID(), Logf: cfg.Logf, OnDurable: n.durable}); err != nil {
		n.closeSched()
		n.tree.Close()
		return refuse(err)
	}
	if err = n.stores.record(); err != nil { // node_stores.go
		n.store.Close()
		n.closeSched()
		n.tree.Close()
		return refuse(err)
	}
	watch := append([]string{filepath.Join(cfg.Dir, treeSubdir), filepath.Join(cfg.Dir, "sched")}, cfg.StorageDirs...)
	if n.dirs, err = watchPaths(append(watch, lock.Path())...); err != nil {
		n.Close()
		return refuse(err)
	}
	if err := n.recover(); err != nil {
		n.Close()
		return refuse(err)
	}
	if err := n.openBudgets(); err != nil {
		n.Close()
		return refuse(err)
	}
	depthRec, err := n.openDepthLimit() // node_depthlimit.go
	if err != nil {
		n.Close()
		return refuse(err)
	}
	scopeRec, err := n.openScope() // node_scopechange.go
	if err != nil {
		n.Close()
		return refuse(err)
	}
	if cfg.Cluster != nil {
		if err := n.openCluster(); err != nil {
			n.Close()
			return refuse(err)
		}
	}
	if err := recordAtStart(cfg.Dir, depthRec, scopeRec); err != nil { // node_refused.go
		n.Close()
		return refuse(err)
	}
	n.lock = lock
	return n, nil
}

// Close syncs and closes the store, the scheduler and the tree (in the
// durability order), and unlocks the directory.
func (n *Node) Close() error {
	if n.reader != nil {
		n.reader.Close()
	}
	errC := n.closeCluster()
	errT := n.tree.Sync()
	errR := n.stores.note(false) // before the scheduler commits (node_stores.go)
	errS := n.sched.Sync()
	errD := n.dirs.check()
	if errD != nil {
		errD = fmt.Errorf("spider: %w", errD)
	}
	errSt := n.store.Close()
	// Pages made durable as the store closed are done in the scheduler's
	// last commit.
	errR = errors.Join(errR, n.stores.note(false))
	return errors.Join(errC, errT, errR, errS, errSt, n.closeSched(), n.tree.Close(), errD, n.lock.Release())
}

// serialLogf returns logf and urlLogf behind one mutex (the two may write
// to one stream); a nil urlLogf is logf, a nil logf drops its lines.
func serialLogf(logf, urlLogf func(string, ...any)) (serialLog, serialURLLog func(string, ...any)) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if urlLogf == nil {
		urlLogf = logf
	}
	var mu sync.Mutex
	serial := func(log func(string, ...any)) func(string, ...any) {
		return func(format string, a ...any) {
			mu.Lock()
			defer mu.Unlock()
			log(format, a...)
		}
	}
	return serial(logf), serial(urlLogf)
}
