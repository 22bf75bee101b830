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
package cluster
