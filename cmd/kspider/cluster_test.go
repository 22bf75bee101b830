package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/tools/testweb"
)

// labCluster is an n-node cluster on a netLab: its config files and data
// directories.
type labCluster struct {
	lab       *netLab
	web       *labWeb
	n         int
	epoch     time.Time
	slot      time.Duration
	partition string
	depth     int
	confs     []string
	dirs      []string
	nodes     []*labNode
	ref       string // the reference node's config, data directory and process
	refDir    string
	refNode   *labNode
	extraArgs [][]string // per node, after the config
}

const labUDPPort = 7410

func newLabCluster(t *testing.T, n int, web testweb.Config, partition string, depth int, slot time.Duration) *labCluster {
	t.Helper()
	lab := newNetLab(t, n+1) // the last one runs the one-node reference crawl
	c := &labCluster{lab: lab, n: n, slot: slot, partition: partition, depth: depth,
		epoch: time.Now().Truncate(time.Second).UTC(), extraArgs: make([][]string, n)}
	c.web = lab.startWeb(web)
	tmp := t.TempDir()
	secret := filepath.Join(tmp, "secret")
	if err := os.WriteFile(secret, []byte("lab-secret-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	seeds := testweb.Generate(web).SeedURLs(c.web.ports)
	for i := range n + 1 {
		dir := filepath.Join(tmp, fmt.Sprintf("node%d", i))
		var b strings.Builder
		fmt.Fprintf(&b, "seeds = [%s]\ndata_dir = %q\nfetchers = 16\ndns_servers = [%q]\ncontact = \"https://example.org/bot\"\nstatus = \"\"\n",
			quoteStrings(seeds), dir, c.web.dns)
		fmt.Fprintf(&b, "[politeness]\ndelay = \"100ms\"\n[limits]\nmax_depth = %d\nconnect_timeout = \"5s\"\nfirst_byte_timeout = \"5s\"\n", depth)
		if i == n { // the reference: one node alone
			c.ref = writeConf(t, tmp, i, b.String())
			c.refDir = dir
			continue
		}
		fmt.Fprintf(&b, "[cluster]\nnode = 0\nphases = %d\nphase_length = %q\nepoch = %s\nsecret_file = %q\npartition = %q\n",
			n, slot.String(), c.epoch.Format(time.RFC3339), secret, partition)
		for j := range n {
			fmt.Fprintf(&b, "[[cluster.nodes]]\nid = %d\nudp = \"%s:%d\"\n", j, lab.ips[j], labUDPPort)
		}
		c.confs, c.dirs = append(c.confs, writeConf(t, tmp, i, b.String())), append(c.dirs, dir)
	}
	c.nodes = make([]*labNode, n)
	return c
}

func writeConf(t *testing.T, dir string, i int, body string) string {
	conf := filepath.Join(dir, fmt.Sprintf("node%d.toml", i))
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return conf
}

// startRef starts the one-node reference crawl of the same web.
func (c *labCluster) startRef() {
	args := []string{"run", "--config", c.ref, "--ca", c.web.cas[c.n], "--quiet"}
	c.refNode = c.lab.startNode(c.n, args)
}

// start starts node i's `kspider run`.
func (c *labCluster) start(i int) *labNode {
	args := []string{"run", "--config", c.confs[i], "--ca", c.web.cas[i]}
	if c.lab.ns == nil { // one loopback for all: say who is who
		args = append(args, "--node", fmt.Sprint(i))
	}
	c.nodes[i] = c.lab.startNode(i, append(args, c.extraArgs[i]...))
	return c.nodes[i]
}

// wait waits for every node to exit 0 within d.
func (c *labCluster) wait(t *testing.T, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	all := c.nodes
	if c.refNode != nil {
		all = append(all[:len(all):len(all)], c.refNode)
	}
	for i, n := range all {
		select {
		case <-n.done:
		case <-deadline:
			for j, m := range c.nodes {
				t.Logf("node %d:\n%s", j, m.stderr.String())
			}
			t.Fatalf("node %d still running after %v", i, d)
		}
		if n.err != nil {
			t.Errorf("node %d: %v\n%s", i, n.err, n.stderr.String())
		} else {
			t.Logf("node %d: %s", i, lastLines(n.stderr.String(), 4))
		}
	}
}

func lastLines(s string, k int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(0, len(l)-k):], "\n")
}

// check compares the union of the nodes' stores with the web's truth, each
// URL stored once and by its owner, and audits the merged request logs:
// nothing forbidden, at most one connection and one request at a time per
// host, and no host served by two nodes in one slot.
func (c *labCluster) check(t *testing.T) {
	t.Helper()
	part, err := cluster.ParsePartition(c.partition)
	if err != nil {
		t.Fatal(err)
	}
	owner := cluster.Partitioner{By: part, Nodes: c.n}
	union := map[string]int{}
	for i, dir := range c.dirs {
		r, err := storage.OpenReader([]string{filepath.Join(dir, "pages")})
		if err != nil {
			t.Fatal(err)
		}
		err = r.Scan(context.Background(), func(p *storage.Page) error {
			if j, ok := union[p.URL]; ok {
				t.Errorf("%s stored by node %d and node %d", p.URL, j, i)
			}
			if o := owner.Owner(p.URL); o != i {
				t.Errorf("%s stored by node %d; its owner is %d", p.URL, i, o)
			}
			union[p.URL] = i
			return nil
		})
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	want := storeURLs(t, c.refDir)
	var missing, extra []string
	for u := range want {
		if _, ok := union[u]; !ok {
			missing = append(missing, u)
		}
	}
	for u := range union {
		if !want[u] {
			extra = append(extra, u)
		}
	}
	if len(missing)+len(extra) > 0 {
		t.Errorf("the union of the stores differs from the one node's store (%d URLs): missing %d %v, extra %d %v",
			len(want), len(missing), missing[:min(5, len(missing))], len(extra), extra[:min(5, len(extra))])
	}
	per := make([]int, c.n)
	for _, i := range union {
		per[i]++
	}
	t.Logf("%d pages stored, per node %v", len(union), per)

	c.web.stop()
	var all []testweb.Entry
	for i, lf := range c.web.logs[:c.n] {
		b, err := os.ReadFile(lf)
		if err != nil {
			t.Fatal(err)
		}
		es, err := testweb.ReadLog(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		for k := range es {
			if c.lab.ns != nil {
				// Each copy served one node: name the client by the node's
				// address and keep connection ids apart.
				_, port, _ := strings.Cut(es[k].Client, ":")
				es[k].Client = c.lab.ips[i].String() + ":" + port
				es[k].Conn += uint64(i) << 40
			}
		}
		all = append(all, es...)
	}
	rep := testweb.AuditEntries(all, testweb.AuditOptions{})
	if b, err := os.ReadFile(c.web.logs[c.n]); err == nil {
		if es, err := testweb.ReadLog(bytes.NewReader(b)); err == nil {
			r := testweb.AuditEntries(es, testweb.AuditOptions{})
			t.Logf("reference node's audit: max %d connections per host (%s), %d in flight, %d duplicate fetches", r.MaxConnsPerHost, r.MaxConnsHost, r.MaxInFlightPerHost, r.DuplicateFetches)
		}
	}
	if rep.Forbidden > 0 || rep.MaxInFlightPerHost > 1 || len(rep.Overlaps) > 0 {
		t.Errorf("impolite: %d forbidden, max %d in flight, overlaps %v",
			rep.Forbidden, rep.MaxInFlightPerHost, rep.Overlaps[:min(3, len(rep.Overlaps))])
	}
	if n := crossNodeConns(all); n > 0 {
		t.Errorf("%d times two nodes had a connection open to one host at once", n)
	}
	if rep.MaxConnsPerHost > 1 {
		// One node's robots.txt connection seen closing by the loaded
		// server after the node's next connection opened (the node's
		// ReconnectGap, not the cluster): logged, not failed.
		t.Logf("max %d connections per host (%s), from one node", rep.MaxConnsPerHost, rep.MaxConnsHost)
	}
	if c.lab.ns != nil {
		bad := 0
		if part == cluster.ByURL {
			// Turns: each request from the node whose turn it was on the
			// host (cluster_slot_test.go).
			clients := map[string]int{}
			for i, ip := range c.lab.ips[:c.n] {
				clients[ip.String()] = i
			}
			wrong, late, checked := slotAudit(all, scheduler.Cluster{Epoch: c.epoch, PhaseLength: c.slot, Phases: c.n, Nodes: c.n}, clients)
			if checked == 0 && rep.Requests > 0 {
				t.Errorf("the slot audit found no request from a node's address (%v) among %d", clients, rep.Requests)
			}
			t.Logf("slot audit: %d requests checked, %d wrong, %d arrived late", checked, len(wrong), len(late))
			bad += len(wrong)
			for _, l := range wrong[:min(3, len(wrong))] {
				t.Errorf("%s", l)
			}
			if len(late) > 0 {
				t.Logf("%d requests of the slot before arrived within %v of the next slot's start (its opening guard), before its node's: %q", len(late), slotLate, late[:min(3, len(late))])
			}
		}
		if part != cluster.ByURL {
			// No turns: a host has one owner, the only node it ever sees.
			first := map[string]string{}
			for _, e := range all {
				ip, _, _ := strings.Cut(e.Client, ":")
				if e.Kind != "req" {
					continue
				}
				if o, ok := first[e.Host]; ok && o != ip {
					bad++
					if bad <= 3 {
						t.Errorf("host %s (partition %s) served to %s and %s", e.Host, c.partition, o, ip)
					}
				}
				first[e.Host] = ip
			}
		}
	}
	t.Logf("audit: %d requests, %d connections, %d duplicate fetches (robots.txt per node included)", rep.Requests, rep.Connections, rep.DuplicateFetches)
}

// TestClusterCrawl: 3 and 4 `kspider run` processes, each in its own
// network namespace with its own data directory, crawl a 1,000-host test
// web together: 3 partitioned by host (no turns: each host served by its
// owner alone), 4 by URL (turns).
func TestClusterCrawl(t *testing.T) {
	for n, part := range map[int]string{3: "host", 4: "url"} {
		t.Run(fmt.Sprintf("%d-nodes-%s", n, part), func(t *testing.T) {
			c := newLabCluster(t, n, testweb.Config{Hosts: 1000, Seed: 3, MaxPages: 6, MinPages: 1, MeanPageSize: 1500, Seeds: 40, Plain: true},
				part, 2, 2*time.Second)
			c.startRef()
			for i := range n {
				c.start(i)
			}
			c.wait(t, 150*time.Second)
			c.check(t)
		})
	}
}

// storeURLs is the set of URLs in a node's page store.
func storeURLs(t *testing.T, dir string) map[string]bool {
	t.Helper()
	r, err := storage.OpenReader([]string{filepath.Join(dir, "pages")})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := map[string]bool{}
	if err := r.Scan(context.Background(), func(p *storage.Page) error {
		got[p.URL] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// crossNodeConns counts pairs of connections from different client
// addresses (nodes) open to one host at the same moment.
func crossNodeConns(all []testweb.Entry) int {
	host := map[uint64]string{}
	for _, e := range all {
		if e.Kind == "req" {
			host[e.Conn] = e.Host
		}
	}
	type iv struct {
		start, end int64
		ip         string
	}
	by := map[string][]iv{}
	for _, e := range all {
		if h, ok := host[e.Conn]; ok && e.Kind == "conn" {
			ip, _, _ := strings.Cut(e.Client, ":")
			by[h] = append(by[h], iv{e.Start, e.End, ip})
		}
	}
	bad := 0
	for _, l := range by {
		sort.Slice(l, func(i, j int) bool { return l[i].start < l[j].start })
		for i := range l {
			for j := i + 1; j < len(l) && l[j].start < l[i].end; j++ {
				if l[j].ip != l[i].ip {
					bad++
				}
			}
		}
	}
	return bad
}

// TestClusterFaults: a node killed with kill -9 mid-crawl and restarted,
// and 10 % datagram loss with reordering between the namespaces (tc
// netem): the crawl completes with the one node's result, nothing twice.
func TestClusterFaults(t *testing.T) {
	web := testweb.Config{Hosts: 1000, Seed: 4, MaxPages: 6, MinPages: 1, MeanPageSize: 1500, Seeds: 40, Plain: true}
	t.Run("kill-9", func(t *testing.T) {
		c := newLabCluster(t, 3, web, "url", 2, 2*time.Second)
		c.startRef()
		for i := range 3 {
			c.start(i)
		}
		// Kill node 1 once it has stored some pages (its progress line),
		// then start it again on the same directory.
		victim := c.nodes[1]
		if !waitFor(victim, 60*time.Second, func(s string) bool { return progressPages(s) >= 30 }) {
			t.Fatalf("node 1 did not get to 30 pages:\n%s", victim.stderr.String())
		}
		victim.cmd.Process.Kill()
		<-victim.done
		t.Logf("node 1 killed at: %s", lastLines(victim.stderr.String(), 1))
		c.start(1)
		c.wait(t, 150*time.Second)
		c.check(t)
	})
	t.Run("down-then-back", func(t *testing.T) {
		// Node 1 starts only after three slots: its peers spill what they
		// found for it, then deliver it; nothing else stalls meanwhile.
		c := newLabCluster(t, 3, web, "url", 2, 2*time.Second)
		c.startRef()
		c.start(0)
		c.start(2)
		if !waitFor(c.nodes[0], 60*time.Second, func(s string) bool { return strings.Count(s, " pages ") >= 6 && progressPages(s) > 0 }) {
			t.Fatalf("node 0 made no progress without node 1:\n%s", c.nodes[0].stderr.String())
		}
		t.Logf("node 1 starts; node 0 at: %s", lastLines(c.nodes[0].stderr.String(), 1))
		c.start(1)
		c.wait(t, 150*time.Second)
		c.check(t)
	})
	t.Run("loss-10pc-reorder", func(t *testing.T) {
		c := newLabCluster(t, 3, web, "host", 2, 2*time.Second)
		if c.lab.ns == nil {
			t.Skip("tc netem needs the network namespaces, which need root")
		}
		for i := range 3 {
			if err := c.lab.inNS(i, "tc", "qdisc", "add", "dev", c.lab.veth[i], "root", "netem",
				"loss", "10%", "delay", "4ms", "2ms", "reorder", "25%", "50%"); err != nil {
				t.Skipf("tc netem unavailable: %v", err)
			}
		}
		c.startRef()
		for i := range 3 {
			c.start(i)
		}
		c.wait(t, 150*time.Second)
		c.check(t)
		retrans := 0
		for _, n := range c.nodes {
			retrans += countAfter(n.stderr.String(), "retransmitted")
		}
		if retrans == 0 {
			t.Error("no retransmissions with 10 % loss")
		}
	})
}

// progressPages is the page count of the last progress line in s.
func progressPages(s string) int {
	i := strings.LastIndex(s, " pages ")
	if i < 0 {
		return 0
	}
	n := 0
	for _, ch := range s[i+7:] {
		switch {
		case ch >= '0' && ch <= '9':
			n = n*10 + int(ch-'0')
		case ch == ',':
		default:
			return n
		}
	}
	return n
}

// countAfter is the number before word in the summary ("4 retransmitted").
func countAfter(s, word string) int {
	i := strings.Index(s, " "+word)
	if i < 0 {
		return 0
	}
	j := strings.LastIndexByte(s[:i], ' ')
	n := 0
	fmt.Sscan(s[j+1:i], &n)
	return n
}

// waitFor polls a node's output until ok says yes, the node exits, or d
// passes.
func waitFor(n *labNode, d time.Duration, ok func(string) bool) bool {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(d)
	for {
		if ok(n.stderr.String()) {
			return true
		}
		select {
		case <-tick.C:
		case <-n.done:
			return ok(n.stderr.String())
		case <-deadline:
			return false
		}
	}
}
