package scheduler

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"strconv"
	"testing"
	"time"
)

// modelURL is the reference model's view of one URL.
type modelURL struct {
	st      State
	host    string
	depth   uint8
	retries uint8
}

// model is the in-memory reference the scheduler is checked against.
type model struct {
	urls      map[uint32]*modelURL
	out       map[string][]uint32 // host → ids of its list out
	released  map[uint32]bool     // ids of released lists (Release), not reported yet
	notBefore map[string]time.Time
	crawl     map[string]time.Duration
}

// TestModel drives the scheduler with random adds, takes, outcomes,
// releases, clock moves across slots and guard intervals and back, host
// addresses set with every list as the node does (and changing), and
// restarts (clean and not), and checks it against the model after every
// step.
func TestModel(t *testing.T) {
	seeds := uint64(6)
	if n, err := strconv.ParseUint(os.Getenv("KSPIDER_SCHED_SEEDS"), 10, 64); err == nil {
		seeds = n // soak: KSPIDER_SCHED_SEEDS=200 go test -run TestModel
	}
	for seed := range seeds {
		if one := os.Getenv("KSPIDER_SCHED_SEED"); one != "" && one != fmt.Sprint(seed) {
			continue
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runModel(t, seed) })
	}
}

func runModel(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 7))
	phases := 1 + r.IntN(4)
	clk := newFakeClock(phases, 10*time.Second, 500*time.Millisecond)
	cfg := Config{
		Clock:       clk,
		Phases:      phases,
		Window:      20 + r.IntN(100),
		Columns:     []int{2, 3, 7}[r.IntN(3)],
		Rows:        1 + r.IntN(3),
		ListLen:     1 + r.IntN(6),
		PartialWait: time.Duration(r.IntN(3)) * time.Second,
		MinDelay:    time.Duration(r.IntN(3)) * 100 * time.Millisecond,
		ErrorDelay:  time.Second,
		MaxBackoff:  4 * time.Second,
		MaxRetries:  2,
	}
	if r.IntN(2) == 0 {
		cfg.MaxHostsPerIP = 1 + r.IntN(2)
	}
	ipOf := map[string]netip.Addr{} // set once per host, kept across restarts by the test
	nHosts := 3 + r.IntN(20)
	hostName := func(i int) string { return fmt.Sprintf("host%d.example", i) }
	dir := t.TempDir()
	s := mustOpen(t, dir, cfg)
	defer func() { s.Close() }()
	m := &model{urls: map[uint32]*modelURL{}, out: map[string][]uint32{}, released: map[uint32]bool{}, notBefore: map[string]time.Time{}, crawl: map[string]time.Duration{}}
	var nextID uint32

	check := func(step int, what string) {
		t.Helper()
		s.mu.Lock() // one lock for the whole comparison: it runs every step
		defer s.mu.Unlock()
		for id, u := range m.urls {
			got := s.recs[id]
			if got.state() != u.st || got.depth() != u.depth || got.retries() != u.retries || s.names[got.host()] != u.host {
				t.Fatalf("step %d (%s): URL %d is %v depth %d retries %d host %s, model %v depth %d retries %d host %s",
					step, what, id, got.state(), got.depth(), got.retries(), s.names[got.host()], u.st, u.depth, u.retries, u.host)
			}
		}
		if err := checkInvariants(s); err != nil {
			t.Fatalf("step %d (%s): %v", step, what, err)
		}
		if s.count != uint64(nextID) {
			t.Fatalf("step %d: Len %d, want %d", step, s.count, nextID)
		}
	}
	take := func(step int) {
		p := clk.Phase()
		for {
			l, ok, _, err := s.TryNext()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				return
			}
			switch {
			case !p.MayStart:
				t.Fatalf("step %d: list handed out at %v, in a guard interval", step, p.Now)
			case HostPhase(l.Name, phases) != p.Active:
				t.Fatalf("step %d: host %s (phase %d) handed out in phase %d", step, l.Name, HostPhase(l.Name, phases), p.Active)
			case m.out[l.Name] != nil:
				t.Fatalf("step %d: second list of %s while %v is out", step, l.Name, m.out[l.Name])
			case p.Now.Before(m.notBefore[l.Name]):
				t.Fatalf("step %d: list of %s at %v, not before %v", step, l.Name, p.Now, m.notBefore[l.Name])
			case len(l.IDs) == 0 || len(l.IDs) > cfg.ListLen:
				t.Fatalf("step %d: list of %d ids", step, len(l.IDs))
			}
			if ip, ok := ipOf[l.Name]; ok && cfg.MaxHostsPerIP > 0 {
				n := 0
				for h := range m.out {
					if ipOf[h] == ip {
						n++
					}
				}
				if n >= cfg.MaxHostsPerIP {
					t.Fatalf("step %d: list of %s while %d hosts of %v are out", step, l.Name, n, ip)
				}
			}
			for _, id := range l.IDs {
				u := m.urls[id]
				if u == nil || u.host != l.Name || (u.st != InList && u.st != Stalled) {
					t.Fatalf("step %d: id %d (%+v) in list of %s", step, id, u, l.Name)
				}
				u.st = InProgress
			}
			m.out[l.Name] = l.IDs
			// The node sets the address with every list; now and then
			// the name resolves to another one.
			ip, known := ipOf[l.Name]
			if !known || r.IntN(8) == 0 {
				ip = netip.AddrFrom4([4]byte{127, 0, 0, byte(1 + r.IntN(3))})
				ipOf[l.Name] = ip
			}
			over, err := s.SetIP(l.Host, ip)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for o := range m.out {
				if ipOf[o] == ip {
					n++
				}
			}
			if want := cfg.MaxHostsPerIP > 0 && n > cfg.MaxHostsPerIP; over != want {
				t.Fatalf("step %d: SetIP(%s, %v) with its list out: over = %v with %d hosts of it out, want %v", step, l.Name, ip, over, n, want)
			}
			if over { // given back untried, as the node does
				now := clk.Now()
				for _, id := range l.IDs {
					m.urls[id].st = InList
					if err := s.Report(id, Outcome{Kind: NotTried}); err != nil {
						t.Fatalf("step %d: Report(%d, NotTried): %v", step, id, err)
					}
				}
				delete(m.out, l.Name)
				m.notBefore[l.Name] = later(m.notBefore[l.Name], now.Add(max(cfg.MinDelay, m.crawl[l.Name])))
			}
		}
	}
	// outcome reports a random outcome of id, of host name, to the
	// scheduler and the model; it says whether it was a temporary failure.
	outcome := func(step int, name string, id uint32, now time.Time) bool {
		u := m.urls[id]
		o := Outcome{Kind: Kind(r.IntN(int(numKinds)))}
		if o.Kind == FailedTemp && r.IntN(2) == 0 {
			o.Status, o.RetryAfter = 429, time.Duration(1+r.IntN(5))*time.Second
			m.notBefore[name] = later(m.notBefore[name], now.Add(o.RetryAfter))
		}
		errs := false
		switch o.Kind {
		case Fetched:
			u.st = Completed
		case Redirect:
			u.st = Redirected
		case Denied:
			u.st = RobotsDenied
		case Dropped:
			u.st = Filtered
		case FailedPerm:
			u.st = Failed
		case FailedTemp:
			errs = true
			if int(u.retries) >= cfg.MaxRetries {
				u.st = Failed
			} else {
				u.st, u.retries = Stalled, u.retries+1
			}
		case NotTried:
			u.st = InList
		}
		if err := s.Report(id, o); err != nil {
			t.Fatalf("step %d: Report(%d, %+v): %v", step, id, o, err)
		}
		return errs
	}
	report := func(step int, name string, all bool) {
		ids := m.out[name]
		n := len(ids)
		if !all {
			n = 1 + r.IntN(len(ids))
		}
		now := clk.Now()
		var errs bool
		for _, id := range ids[:n] {
			errs = outcome(step, name, id, now) || errs
		}
		m.out[name] = ids[n:]
		if n == len(ids) {
			delete(m.out, name)
			d := max(cfg.MinDelay, m.crawl[name])
			if errs {
				d = max(d, cfg.ErrorDelay)
			}
			m.notBefore[name] = later(m.notBefore[name], now.Add(d))
			if os.Getenv("KSPIDER_SCHED_SEED") != "" {
				t.Logf("step %d: %s list over at %v errs %v d %v: not before %v", step, name, now, errs, d, m.notBefore[name])
			}
		}
	}
	restart := func(clean bool) {
		if clean {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		} else {
			// What kill -9 leaves: the mappings' pages, no commit.
			killed(s)
		}
		s = mustOpen(t, dir, cfg)
		m.boundWaits(clk.Now(), cfg) // stored waits are cut so at Open (hostWait)
		for h, ip := range ipOf {
			num, _ := s.Host(h)
			s.SetIP(num, ip)
		}
		for _, ids := range m.out {
			for _, id := range ids {
				m.urls[id].st = InList
			}
		}
		clear(m.out)
		for id := range m.released {
			m.urls[id].st = InList
		}
		clear(m.released)
	}

	steps := 3000
	for step := range steps {
		switch op := r.IntN(100); {
		case op < 25:
			for range 1 + r.IntN(8) {
				id := nextID
				if r.IntN(10) == 0 && nextID > 0 {
					id = uint32(r.IntN(int(nextID))) // a known id: lowers the depth only
				}
				h := hostName(r.IntN(nHosts))
				d := uint8(r.IntN(6))
				st := InList
				if r.IntN(10) == 0 {
					st = []State{Filtered, RobotsDenied, Completed}[r.IntN(3)]
				}
				added, err := s.Mark(id, h, d, st)
				if err != nil {
					t.Fatal(err)
				}
				if u := m.urls[id]; u != nil {
					if added {
						t.Fatalf("step %d: re-add of %d reported new", step, id)
					}
					u.depth = min(u.depth, d)
					continue
				}
				if !added {
					t.Fatalf("step %d: add of new id %d not reported new", step, id)
				}
				m.urls[id] = &modelURL{st: st, host: h, depth: d}
				nextID++
			}
		case op < 50:
			take(step)
		case op < 64:
			for name := range m.out {
				report(step, name, r.IntN(2) == 0)
				if r.IntN(2) == 0 {
					break
				}
			}
		case op < 67:
			// The node releases a host whose connection is done; the
			// ids are reported once their pages are durable.
			for name, ids := range m.out {
				num, _ := s.Host(name)
				if err := s.Release(num); err != nil {
					t.Fatalf("step %d: Release(%s): %v", step, name, err)
				}
				for _, id := range ids {
					m.released[id] = true
				}
				delete(m.out, name)
				m.notBefore[name] = later(m.notBefore[name], clk.Now().Add(max(cfg.MinDelay, m.crawl[name])))
				break
			}
		case op < 70:
			for id := range m.released {
				outcome(step, m.urls[id].host, id, clk.Now())
				delete(m.released, id)
				if r.IntN(3) == 0 {
					break
				}
			}
		case op < 88:
			clk.advance(time.Duration(r.IntN(1500)) * time.Millisecond)
		case op < 90:
			// The clock steps back (by hand, an NTP step): a wait still
			// holds for what was left of it, by the clock now, but never
			// longer than the wait the config imposes from now (clockBack).
			back := []time.Duration{300 * time.Millisecond, 3 * time.Second, 40 * time.Second}[r.IntN(3)]
			clk.advance(-back)
			for h, nb := range m.notBefore {
				m.notBefore[h] = nb.Add(-back)
			}
			m.boundWaits(clk.Now(), cfg)
		case op < 93:
			// Jump to just before, into or just after a slot boundary.
			p := clk.Phase()
			clk.advance(p.Left + time.Duration(r.IntN(1200)-600)*time.Millisecond)
		case op < 95:
			h := hostName(r.IntN(nHosts))
			if num, err := s.Host(h); err == nil {
				cd := time.Duration(r.IntN(3)) * time.Second
				s.SetRobots(num, RobotsOK, cd)
				m.crawl[h] = cd
				m.boundWait(h, clk.Now(), cfg)
				if _, ok := ipOf[h]; !ok {
					ip := netip.AddrFrom4([4]byte{127, 0, 0, byte(1 + r.IntN(3))})
					ipOf[h] = ip
					over, err := s.SetIP(num, ip)
					if err != nil {
						t.Fatal(err)
					}
					// Over: h's list is out, and with it more than the
					// limit of ip's hosts.
					n := 0
					for o := range m.out {
						if ipOf[o] == ip {
							n++
						}
					}
					if want := m.out[h] != nil && cfg.MaxHostsPerIP > 0 && n > cfg.MaxHostsPerIP; over != want {
						t.Fatalf("step %d: SetIP(%s, %v) over = %v with %d hosts of it out, want %v", step, h, ip, over, n, want)
					}
				}
			}
		case op < 97:
			restart(r.IntN(2) == 0)
		default:
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		check(step, "")
	}

	// Drain: report everything out as fetched and let time run; every
	// in-list URL must be handed out within a bounded number of slots.
	// With Crawl-delays of up to 2 s and one-id lists a host of 40 ids
	// takes 4 × 80 s; 20,000 s is ample.
	for id := range m.released {
		m.urls[id].st = Completed
		if err := s.Report(id, Outcome{Kind: Fetched}); err != nil {
			t.Fatal(err)
		}
	}
	clear(m.released)
	for round := 0; round < 20000; round++ {
		for more := true; more; {
			take(steps + round)
			more = len(m.out) > 0
			for name := range m.out {
				for _, id := range m.out[name] {
					m.urls[id].st = Completed
					if err := s.Report(id, Outcome{Kind: Fetched}); err != nil {
						t.Fatal(err)
					}
				}
				delete(m.out, name)
				m.notBefore[name] = later(m.notBefore[name], clk.Now().Add(max(cfg.MinDelay, m.crawl[name])))
			}
		}
		clk.advance(time.Second)
		if round%50 != 0 {
			continue
		}
		left := 0
		for _, u := range m.urls {
			if u.st.Unfinished() {
				left++
			}
		}
		if left == 0 {
			check(steps+round, "drained")
			return
		}
	}
	p := clk.Phase()
	t.Logf("cfg %+v; lo %d scan %d count %d active %d (clock %d) ready %d queuing %d events %d", cfg, s.rt.lo, s.rt.scan, s.count, s.rt.active, p.Active, s.rt.ready.len(), s.rt.queuing.len(), len(s.rt.events))
	for h := range s.hosts {
		if i := s.runIdx[h]; i != 0 {
			r := s.rt.runs[i-1]
			t.Logf("host %s phase %d: %v slotted %v waiting %v ready %v queued %d inflight %d until %v", s.names[h], s.phase[h], r.state, r.slotted, r.waiting, r.ready, r.queued(), len(r.inflight), r.until)
		}
	}
	t.Logf("colUsed %v colHead %v", s.rt.colUsed, s.rt.colHead)
	for id, u := range m.urls {
		if u.st.Unfinished() {
			t.Errorf("URL %d of %s (phase %d) still %v", id, u.host, HostPhase(u.host, phases), u.st)
		}
	}
}

// boundWaits cuts each host's wait to the longest the config imposes on it
// from now: the scheduler cuts a wait so (hostWait) whenever it looks at it
// anew, after a restart, a step of the clock back, or a Crawl-delay lowered
// since the list ended. The error back-off can only make its wait longer.
func (m *model) boundWaits(now time.Time, cfg Config) {
	for h := range m.notBefore {
		m.boundWait(h, now, cfg)
	}
}

func (m *model) boundWait(h string, now time.Time, cfg Config) {
	if cut := now.Add(max(cfg.MinDelay, m.crawl[h], cfg.ErrorDelay)); cut.Before(m.notBefore[h]) {
		m.notBefore[h] = cut
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
