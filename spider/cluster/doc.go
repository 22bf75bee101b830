// Package cluster holds what the nodes of a kspider cluster must agree on
// and how they agree: the cluster block of the config (Config), this node's
// identity (Identify), the shared secret (ReadSecret), the partition of
// URLs over nodes (Partitioner) and the comparison of the cluster block
// between nodes (Canonical, Diff).
//
// # Partitioning
//
// Every URL has one owner node: Reduce(OwnerHash(key), N), where key is the
// whole canonical URL (partition = "url", the default, as in the thesis),
// its host name without port (partition = "host") or the host's
// registrable domain (partition = "domain", scope.Registrable). The hash is
// FNV-1a 64 over the key with ASCII letters lower-cased, started from a
// fixed domain-separation state and finished with SplitMix64; Reduce takes
// the high 32 bits times N. Both are fixed: a change would send every URL to
// another node, so they are pinned by tests. A node fetches only the URLs it
// owns; links it finds to URLs of other nodes go to their owner through the
// communicator.
//
// With "host" and "domain" every host sits on one node, so only links that
// leave the site are exchanged; with "url" most links are, but pages and
// bytes spread evenly however uneven the sites are.
//
// # Agreeing on the cluster block
//
// At start every node sends each peer a hello (control.go) carrying its
// Canonical block: phases, phase_length, epoch, partition and the node list
// (as a hash, and node by node while that fits one datagram). A node that
// receives a block that differs names the keys (Diff) on stderr and on its
// status, and fetches nothing until it is restarted with the same block.
// A hello also carries the sender's phase clock (and goes again every
// 10 s, so a clock that moves later is seen too): one read before it was
// written by our clock, by more than Guard, shows the two clocks too far
// apart for the slots to keep the nodes off each other's hosts
// (ClockAhead), and the node behind fetches nothing too, until a later
// hello finds them within it.
// The secret is not in the block: a node with another secret cannot be
// heard at all (its datagrams fail the MAC and are counted as bad_mac).
//
// # The end of the crawl
//
// A node alone is done when nothing is unfinished, no list is out and the
// writer is idle. In a cluster it must also know that no peer will send it
// more, so node 0 coordinates: while it is idle it sends every peer a probe
// (round r); each answers with its State: Idle (done as above, and every
// item it ever sent acknowledged, so none is in flight), Gen (how many
// batches of URLs its run has admitted) and Epoch (its communicator
// epoch: which run). A round is complete when every peer answered. The
// crawl is over when two complete rounds in a row found every node, node 0
// included, idle with the same Gen and Epoch (Detector). Node 0 starts a
// round when it turns idle, when a node that answered busy tells it it
// turned idle, and right after a round that found every node idle; a
// timer only backs these up (spider/node_cluster_end.go).
//
// Why that is enough: node 0 sends the probes of round r+1 only after all
// answers of round r arrived, so at that instant T every node j is between
// its two answers. (Its answers to this run's probes: one to a probe of
// node 0's run before a restart, sent again from a spill file, was given
// before T, and taken for round r+1 it broke this; probes carry node 0's
// communicator epoch and answers echo it, so node 0 ignores such.) An
// idle node becomes busy only by admitting a batch of URLs, which raises
// its Gen, or by a restart, which changes its Epoch (and counts Gen from
// 0 again: equal Gens of two runs say nothing); j's Gen and Epoch did not
// change, so j was idle all the way from its first answer to its second,
// T included. (An answer of j's run before a restart, sent again from its
// spill file after it, is taken for a busy one: node 0 heard j's newer
// epoch in the datagram that brought it.) At T no item is in
// flight either: each node's items were all acknowledged when it answered,
// and an idle node sends no URLs. So at T no node has work and none can get
// any: the crawl is over. (An acknowledgement means the receiver's tree and
// scheduler hold the URL, so "acknowledged" items are counted in the
// receiver's unfinished work.) Node 0 then sends "finished"; each peer
// answers "bye" and stops; node 0 stops when every bye arrived (or after
// 10 s, naming the peers that did not answer: should one run on, it waits
// for peers that are gone). Each node keeps the end in its data
// directory, and one started after it stops once it has had nothing to
// do and its peers said the same in their hellos (Hello.Over) or stayed
// silent a while (spider/node_cluster_late.go). A node down keeps its peers' items unacknowledged, so the crawl
// does not end without it; a node whose config differs never says idle.
package cluster
