package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/tools/testweb"
)

// slotLate bounds how far into a slot the test web may log a request of
// the previous slot's node: the slot's opening guard, before which the
// rightful node starts nothing, so that such a request cannot meet one of
// its. The log's time is when the request's head reached the web's socket
// (the kernel's stamp, testweb's arrival.go), so a request there was sent
// at least a guard past its list's Until (the closing guard), the node
// having stalled between its clock check and its write. It was a second
// when the log's time was when the web read the head: a loaded web (a
// -race child on a shared machine) read a whole burst of one node's
// requests up to a second after they came (0.5 s seen with three busy
// loops on two cores; TestClusterCrawl/4-nodes-url, "host served to two
// nodes in one slot", the late node's requests 0.4 s into the slot, the
// rightful node's 1.3 s); by arrival, in runs whose reads came up to
// 0.26 s late, the latest request came 11 ms past its node's Until.
const slotLate = cluster.Guard

// slotAudit checks turns (partition "url"): every request for a host is
// from the node whose phase the host is in when it reached the server, or
// arrived at most slotLate into the slot from the node whose phase it was
// in the slot before, and then answered before the rightful node's first
// request for the host in that slot (no overlap). clients maps a
// request's client address (ip) to its node. It returns the violations,
// the late arrivals it let pass, and how many requests it checked.
func slotAudit(entries []testweb.Entry, sch scheduler.Cluster, clients map[string]int) (bad, late []string, checked int) {
	type hs struct {
		host string
		slot int64
	}
	owner := func(host string, at time.Time) (node int, slot int64, into time.Duration) {
		ph := int(scheduler.HostHash(host) % uint64(sch.Phases))
		p := sch.At(at, 0, 0)
		// Node i works on phase (i + slot) mod P.
		return int(((int64(ph)-p.Slot)%int64(sch.Phases) + int64(sch.Phases)) % int64(sch.Phases)), p.Slot, at.Sub(p.Start)
	}
	first := map[hs]int64{} // the rightful node's first request read in the slot
	for _, e := range entries {
		if e.Kind != "req" {
			continue
		}
		node, ok := clients[clientIP(e.Client)]
		if !ok {
			continue
		}
		o, slot, _ := owner(e.Host, time.Unix(0, e.Start))
		if o == node {
			k := hs{e.Host, slot}
			if f, ok := first[k]; !ok || e.Start < f {
				first[k] = e.Start
			}
		}
	}
	for _, e := range entries {
		if e.Kind != "req" {
			continue
		}
		node, ok := clients[clientIP(e.Client)]
		if !ok {
			continue
		}
		checked++
		at := time.Unix(0, e.Start)
		o, slot, into := owner(e.Host, at)
		if o == node {
			continue
		}
		prev, _, _ := owner(e.Host, at.Add(-into-time.Nanosecond))
		f, rightful := first[hs{e.Host, slot}]
		line := fmt.Sprintf("host %s served to node %d %v into slot %d, node %d's turn (node %d's before)", e.Host, node, into, slot, o, prev)
		switch {
		case prev != node || into > slotLate:
			bad = append(bad, line)
		case rightful && e.End > f:
			bad = append(bad, line+fmt.Sprintf(", still answering when node %d's request came", o))
		default:
			late = append(late, line)
		}
	}
	return bad, late, checked
}

func clientIP(client string) string {
	for i := len(client) - 1; i >= 0; i-- {
		if client[i] == ':' {
			return client[:i]
		}
	}
	return client
}

// TestSlotAudit: a request of the node of the slot before arriving within
// the slot's opening guard is let pass, as long as it came first; any other
// node, a request arriving later into the slot (0.4 s, the flake's when
// logged as read), or one that overlaps the rightful node's, is a
// violation.
func TestSlotAudit(t *testing.T) {
	epoch := time.Unix(1767225600, 0)
	cc := cluster.Config{Phases: 4, PhaseLength: 2 * time.Second, Epoch: epoch, Members: make([]cluster.Member, 4)}
	sch := cc.Schedule()
	clients := map[string]int{"10.0.0.0": 0, "10.0.0.1": 1, "10.0.0.2": 2, "10.0.0.3": 3}
	const host = "h1.test"
	ph := int64(scheduler.HostHash(host) % 4)
	const slot = 100
	// Node i has the host's phase in slot s when (i + s) mod 4 == ph.
	nodeIn := func(s int64) int { return int(((ph-s)%4 + 4) % 4) }
	req := func(node int, into, took time.Duration) testweb.Entry {
		start := epoch.Add(slot*2*time.Second + into)
		return testweb.Entry{Kind: "req", Host: host, Client: fmt.Sprintf("10.0.0.%d:5000", node), Start: start.UnixNano(), End: start.Add(took).UnixNano()}
	}
	rightful, before := nodeIn(slot), nodeIn(slot-1)
	other := 6 - rightful - before - nodeIn(slot+1) // the fourth node
	for _, c := range []struct {
		name     string
		es       []testweb.Entry
		bad      int
		latePass int
	}{
		{"late within the guard, first", []testweb.Entry{req(before, 150*time.Millisecond, 10*time.Millisecond), req(rightful, 1300*time.Millisecond, 10*time.Millisecond)}, 0, 1},
		{"rightful only", []testweb.Entry{req(rightful, 300*time.Millisecond, 10*time.Millisecond)}, 0, 0},
		{"past the guard", []testweb.Entry{req(before, 400*time.Millisecond, 10*time.Millisecond), req(rightful, 1300*time.Millisecond, 10*time.Millisecond)}, 1, 0},
		{"overlapping", []testweb.Entry{req(before, 100*time.Millisecond, time.Second), req(rightful, 500*time.Millisecond, 10*time.Millisecond)}, 1, 0},
		{"another node", []testweb.Entry{req(other, 100*time.Millisecond, 10*time.Millisecond)}, 1, 0},
	} {
		bad, late, checked := slotAudit(c.es, sch, clients)
		if len(bad) != c.bad || len(late) != c.latePass || checked != len(c.es) {
			t.Errorf("%s: bad %q, late %q; want %d and %d", c.name, bad, late, c.bad, c.latePass)
		}
	}
}
