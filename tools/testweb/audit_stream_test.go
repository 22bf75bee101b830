package testweb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
)

// syntheticLog is a log as the server writes it: conns connections at a
// time, each to one of hosts hosts from one of two clients, serving a few
// requests one after another (some slow, so that requests of one host
// overlap) and closing; each entry is logged at its end. Those open at
// the end have no record, as in a log cut short. n requests in all.
func syntheticLog(seed uint64, n, hosts, conns int) []Entry {
	rng := rand.New(rand.NewPCG(seed, seed))
	type lane struct {
		id   uint64
		t    int64
		host int
		left int
		open int64
		cip  string
		nreq int
	}
	var out []Entry
	var id uint64
	lanes := make([]*lane, conns)
	var next func(l *lane, t int64)
	closeConn := func(l *lane) {
		out = append(out, Entry{Kind: "conn", Conn: l.id, Scheme: "http", Server: fmt.Sprintf("127.1.0.%d:80", 1+l.host%7),
			Client: l.cip + ":40000", Start: l.open, End: l.t, Requests: l.nreq})
		next(l, l.t)
	}
	next = func(l *lane, t int64) {
		id++
		*l = lane{id: id, t: t + int64(rng.IntN(5000)), host: rng.IntN(hosts), left: rng.IntN(9),
			cip: fmt.Sprintf("127.0.0.%d", 2+rng.IntN(2))}
		l.open = l.t
		l.t += int64(1 + rng.IntN(1000))
		if l.left == 0 { // a connection closed without a request
			closeConn(l)
		}
	}
	for i := range lanes {
		lanes[i] = &lane{}
		next(lanes[i], int64(i)*7919)
	}
	for made := 0; made < n; {
		l := lanes[rng.IntN(len(lanes))]
		host := fmt.Sprintf("h%d.test", l.host)
		start := l.t
		end := start + int64(1+rng.IntN(3000))
		if rng.IntN(50) == 0 {
			end += 200000 // slow: others overlap it
		}
		out = append(out, Entry{Kind: "req", Conn: l.id, Scheme: "http", Server: fmt.Sprintf("127.1.0.%d:80", 1+l.host%7),
			Client: l.cip + ":40000", Start: start, End: end, Host: host, Method: "GET",
			Target: fmt.Sprintf("/p%d.html", rng.IntN(400)), Status: 200, Disallowed: rng.IntN(40) == 0})
		made++
		l.nreq++
		l.t = end + int64(1+rng.IntN(2000))
		if l.left--; l.left == 0 {
			closeConn(l)
		}
	}
	// The log's order is that of ends; a connection's record comes after
	// its requests, its end being later.
	sort.SliceStable(out, func(i, j int) bool { return out[i].End < out[j].End })
	return out
}

func encodeLog(t *testing.T, es []Entry) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for i := range es {
		if err := enc.Encode(&es[i]); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// auditChunked audits log with sorters of chunk bytes.
func auditChunked(t *testing.T, log []byte, opt AuditOptions, chunk int) (*Report, *auditor) {
	t.Helper()
	opt.TempDir = t.TempDir()
	a := newAuditor(opt, chunk)
	defer a.close()
	if err := scanLog(bytes.NewReader(log), a.add); err != nil {
		t.Fatal(err)
	}
	rep, err := a.finish()
	if err != nil {
		t.Fatal(err)
	}
	return rep, a
}

// sameReport compares two reports, overlaps found at one moment being in
// no particular order in the reference.
func sameReport(t *testing.T, name string, got, want *Report) {
	t.Helper()
	for _, r := range []*Report{got, want} {
		sort.Slice(r.Overlaps, func(i, j int) bool {
			x, y := r.Overlaps[i], r.Overlaps[j]
			return x.At < y.At || x.At == y.At && fmt.Sprint(x) < fmt.Sprint(y)
		})
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("%s: report differs\n got %s\nwant %s", name, g, w)
	}
}

// TestAuditStreamsLikeReference: the audit that sorts through temporary
// files reports exactly what the one holding every entry did, on logs
// with hosts shared by clients, overlapping requests and connections, and
// connections without a record.
func TestAuditStreamsLikeReference(t *testing.T) {
	for seed := range uint64(6) {
		es := syntheticLog(seed, 3000, 1+int(seed)*9, 2+int(seed)*3)
		log := encodeLog(t, es)
		opt := AuditOptions{MaxList: 100000}
		want := auditReference(es, opt)
		got, a := auditChunked(t, log, opt, 4<<10)
		if a.reqs.spills == 0 || a.urls.spills == 0 {
			t.Fatalf("seed %d: nothing written to disk (%d, %d spills): the test does not test the merge", seed, a.reqs.spills, a.urls.spills)
		}
		sameReport(t, fmt.Sprintf("seed %d, sorted on disk", seed), got, want)
		sameReport(t, fmt.Sprintf("seed %d, in memory", seed), AuditEntries(es, opt), want)
	}
}

// TestAuditMemoryBounded: auditing a log eight times as long holds no
// more: the sorters never hold more than their chunk, the connections kept
// are those open at once, and a host's sweep keeps only what is in flight.
// (The audit held every entry: 2.7 GB for a 400 MB log.)
func TestAuditMemoryBounded(t *testing.T) {
	const chunk, conns = 16 << 10, 12
	var held [2]int
	for i, n := range []int{2500, 20000} {
		es := syntheticLog(99, n, 40, conns)
		log := encodeLog(t, es)
		rep, a := auditChunked(t, log, AuditOptions{}, chunk)
		sameReport(t, fmt.Sprintf("%d requests", n), rep, AuditEntries(es, AuditOptions{}))
		if rep.Requests != n {
			t.Fatalf("%d requests audited, want %d", rep.Requests, n)
		}
		for _, s := range []*extSorter{a.reqs, a.connHosts, a.connIPs, a.urls} {
			if s.held > chunk {
				t.Errorf("%d requests: a sorter held %d bytes, over its %d", n, s.held, chunk)
			}
			held[i] = max(held[i], s.held)
		}
		if a.peakOpen > conns {
			t.Errorf("%d requests: %d connections kept at once, want at most %d", n, a.peakOpen, conns)
		}
		if len(a.hosts) > 40 || len(a.clients) > 2 || len(a.ipNames) > 7 {
			t.Errorf("%d requests: %d hosts, %d clients, %d addresses kept", n, len(a.hosts), len(a.clients), len(a.ipNames))
		}
		t.Logf("%d requests, %d KB of log: sorters held at most %d bytes, %d runs written for requests", n, len(log)>>10, held[i], a.reqs.spills)
	}
	if held[1] > chunk || held[1] < held[0]/2 {
		t.Errorf("held %v bytes for the short and the long log", held)
	}
}

// TestPeakSweepLikeMaxSimultaneous: the sweep over starts keeping only the
// open ends finds the peak counting every interval did.
func TestPeakSweepLikeMaxSimultaneous(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for round := range 300 {
		ivs := make([]interval, 1+rng.IntN(40))
		for i := range ivs {
			s := int64(rng.IntN(50))
			ivs[i] = interval{s, s + int64(rng.IntN(15)), ""}
		}
		sort.Slice(ivs, func(i, j int) bool { return ivs[i].start < ivs[j].start })
		var p peakSweep
		for _, iv := range ivs {
			p.add(iv.start, iv.end)
		}
		if want := maxSimultaneous(ivs); p.max != want {
			t.Fatalf("round %d: peak %d, want %d: %v", round, p.max, want, ivs)
		}
	}
}
