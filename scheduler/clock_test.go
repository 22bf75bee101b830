package scheduler

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beevik/ntp"
	"github.com/kspider/kspider/scheduler/ntptest"
)

// settable is an injected system clock.
type settable struct {
	mu  sync.Mutex
	now time.Time
}

func (s *settable) Now() time.Time          { s.mu.Lock(); defer s.mu.Unlock(); return s.now }
func (s *settable) Advance(d time.Duration) { s.mu.Lock(); s.now = s.now.Add(d); s.mu.Unlock() }

func within(got, want, tol time.Duration) bool { return got > want-tol && got < want+tol }

// closeTo reports whether a sample's offset is want up to what its round
// trip allows: an offset measured over a round trip of r is off by at most
// r/2 (the rest is slack for timer and scheduling noise on a busy machine).
func closeTo(s Sample, want time.Duration) bool {
	return within(s.Offset, want, s.RTT/2+5*time.Millisecond)
}

// fixedQuery answers every query with a valid response whose offset is
// exactly offset, without the network: for tests about what the clock does
// with a known offset.
func fixedQuery(offset time.Duration) func(context.Context, string) (*ntp.Response, error) {
	return func(context.Context, string) (*ntp.Response, error) {
		now := time.Now()
		return &ntp.Response{
			ClockOffset: offset, RTT: time.Millisecond, Stratum: 2, Version: 4,
			ReferenceTime: now.Add(-time.Second), Time: now,
			RootDelay: time.Millisecond, RootDispersion: time.Millisecond,
		}, nil
	}
}

// TestMedianOfLyingServers: three servers off by +1 s, +2 s and +60 s;
// the median is the +2 s one, whatever the outlier says.
func TestMedianOfLyingServers(t *testing.T) {
	a := ntptest.NewServer(t, time.Second)
	b := ntptest.NewServer(t, 2*time.Second)
	c := ntptest.NewServer(t, time.Minute)
	clk, err := NewClock(ClockConfig{NTP: NTPConfig{Servers: []string{a.Addr, b.Addr, c.Addr}, MaxRTT: time.Second}, MaxOffset: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if clk.Safe() {
		t.Error("a clock that never measured claims to be safe")
	}
	m, err := clk.Measure(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if m.Good != 3 || m.Offset != m.Samples[1].Offset || !closeTo(m.Samples[1], 2*time.Second) {
		t.Errorf("median of +1s, +2s, +60s = %v from %d samples (%+v); want the +2s one", m.Offset, m.Good, m.Samples)
	}
	if !clk.Safe() {
		t.Errorf("2 s offset with a 5 s bound: unsafe: %s", clk.Status().Reason)
	}
	if d := clk.Now().Sub(time.Now()); !within(d, m.Offset, 50*time.Millisecond) {
		t.Errorf("corrected clock is %v ahead, want the offset %v", d, m.Offset)
	}
	// An even count takes the mean of the middle two.
	if got := median([]time.Duration{4, 1, 3, 2}); got != 2 {
		t.Errorf("median(1,2,3,4) = %v", got)
	}
}

// TestSkewDetected: a consistent skew beyond the bound makes the clock
// unsafe, and it recovers when the servers agree again.
func TestSkewDetected(t *testing.T) {
	a := ntptest.NewServer(t, 3*time.Second)
	b := ntptest.NewServer(t, 3*time.Second)
	clk, err := NewClock(ClockConfig{NTP: NTPConfig{Servers: []string{a.Addr, b.Addr}, MaxRTT: time.Second}, MaxOffset: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := clk.Measure(context.Background())
	st := clk.Status()
	if st.Safe || !strings.Contains(st.Reason, "exceeds the bound") || m.Good != 2 || !closeTo(m.Samples[0], 3*time.Second) {
		t.Errorf("3 s skew: %+v", st)
	}
	cl := Cluster{Epoch: time.Unix(0, 0), PhaseLength: time.Hour, Phases: 2, Nodes: 2}
	if p := clk.Phase(cl, 0); p.MayStart || p.Safe {
		t.Errorf("unsafe clock lets fetches start: %+v", p)
	}
	a.SetOffset(0)
	b.SetOffset(0)
	clk.Measure(context.Background())
	if !clk.Safe() {
		t.Errorf("after the servers agree: %s", clk.Status().Reason)
	}
}

// TestRejectedSamples: bad answers (unsynchronised, kiss-of-death, high
// stratum, slow, silent) are left out of the median.
func TestRejectedSamples(t *testing.T) {
	good := ntptest.NewServer(t, 20*time.Millisecond)
	unsync := ntptest.NewServer(t, time.Hour)
	unsync.SetUnsynchronized(true)
	kod := ntptest.NewServer(t, time.Hour)
	kod.SetStratum(0)
	high := ntptest.NewServer(t, time.Hour)
	high.SetStratum(12)
	slow := ntptest.NewServer(t, time.Hour)
	slow.SetDelay(time.Second)
	silent := ntptest.NewServer(t, time.Hour)
	silent.SetSilent(true)
	clk, err := NewClock(ClockConfig{NTP: NTPConfig{
		Servers:    []string{good.Addr, unsync.Addr, kod.Addr, high.Addr, slow.Addr, silent.Addr},
		Timeout:    2 * time.Second,
		MaxStratum: 10,
		MaxRTT:     500 * time.Millisecond,
	}, MaxOffset: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	m, err := clk.Measure(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if m.Good != 1 || m.Offset != m.Samples[0].Offset || !closeTo(m.Samples[0], 20*time.Millisecond) {
		t.Errorf("offset %v from %d good samples; want ~20ms from 1", m.Offset, m.Good)
	}
	for i, want := range []string{"", "invalid answer", "invalid answer", "stratum 12", "round trip", "timeout"} {
		err := m.Samples[i].Err
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("sample %d: %v, want %q", i, err, want)
		}
	}
}

// TestSilenceMakesUnsafe: with an injected system clock, no good answer
// for longer than MaxSilence turns the clock unsafe.
func TestSilenceMakesUnsafe(t *testing.T) {
	sys := &settable{now: time.Now()}
	var silent atomic.Bool
	answer := fixedQuery(0)
	query := func(ctx context.Context, server string) (*ntp.Response, error) {
		if silent.Load() {
			return nil, errors.New("i/o timeout")
		}
		return answer(ctx, server)
	}
	clk, err := NewClock(ClockConfig{NTP: NTPConfig{Servers: []string{"a", "b"}, Query: query}, MaxSilence: time.Minute, Now: sys.Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clk.Measure(context.Background()); err != nil {
		t.Fatal(err)
	}
	silent.Store(true)
	sys.Advance(30 * time.Second)
	if _, err := clk.Measure(context.Background()); !errors.Is(err, ErrNoGoodSample) {
		t.Errorf("silent servers: %v", err)
	}
	if !clk.Safe() {
		t.Error("unsafe 30 s after the last good answer, limit 1 min")
	}
	sys.Advance(31 * time.Second)
	if st := clk.Status(); st.Safe || !strings.Contains(st.Reason, "no good NTP answer") {
		t.Errorf("61 s of silence: %+v", st)
	}
	silent.Store(false)
	clk.Measure(context.Background())
	if !clk.Safe() {
		t.Errorf("after an answer again: %s", clk.Status().Reason)
	}
}

// TestClockStepMakesUnsafe: the offset a round measured holds for the
// system clock as it was then. Stepped by 5 s since (by hand, or by an NTP
// daemon), the corrected time was 5 s off while the clock still called
// itself safe, so two nodes could be in one phase until the next round.
// Now the clock is unsafe from the step until a round measures again.
func TestClockStepMakesUnsafe(t *testing.T) {
	sys := &settable{now: time.Now()}
	var mono atomic.Int64
	clk, err := NewClock(ClockConfig{NTP: NTPConfig{Servers: []string{"a"}, Query: fixedQuery(0)}, MaxSilence: time.Hour,
		Now: sys.Now, Mono: func() time.Duration { return time.Duration(mono.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clk.Measure(context.Background()); err != nil {
		t.Fatal(err)
	}
	sys.Advance(10 * time.Second)
	mono.Add(int64(10 * time.Second))
	if st := clk.Status(); !st.Safe {
		t.Fatalf("unsafe 10 s after a good round, the clock not stepped: %s", st.Reason)
	}
	sys.Advance(5 * time.Second) // the step: the system clock alone moves
	if st := clk.Status(); st.Safe || !strings.Contains(st.Reason, "stepped by 5s") {
		t.Errorf("after a 5 s step: %+v", st)
	}
	if _, err := clk.Measure(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := clk.Status(); !st.Safe {
		t.Errorf("unsafe after a round measured again: %s", st.Reason)
	}
}

// TestGuardAroundBoundary walks the injected clock across a slot boundary,
// with an exactly known offset of +50 ms.
func TestGuardAroundBoundary(t *testing.T) {
	epoch := time.Now().Truncate(time.Hour)
	// System time 50 ms behind, so corrected time starts 500 ms before the
	// boundary at epoch + 1 min.
	sys := &settable{now: epoch.Add(time.Minute - 550*time.Millisecond)}
	cfg := ClockConfig{NTP: NTPConfig{Servers: []string{"a"}, Query: fixedQuery(50 * time.Millisecond)}, Now: sys.Now}
	clk, err := NewClock(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if clk.Guard() != 200*time.Millisecond {
		t.Errorf("default guard = %v, want 2 x the 100 ms bound", clk.Guard())
	}
	if _, err := clk.Measure(context.Background()); err != nil {
		t.Fatal(err)
	}
	cl := Cluster{Epoch: epoch, PhaseLength: time.Minute, Phases: 3, Nodes: 3}
	var got []bool
	var slots []int64
	for range 10 {
		p := clk.Phase(cl, 1)
		got = append(got, p.MayStart)
		slots = append(slots, p.Slot)
		sys.Advance(100*time.Millisecond + time.Millisecond) // 1 ms off the grid: no ties
	}
	// Corrected time -500 -399 -298 -197 -96 | +5 +106 +207 +308 +409 ms
	// around the boundary; the guard is 200 ms on each side.
	want := []bool{true, true, true, false, false, false, false, true, true, true}
	if !slices.Equal(got, want) {
		t.Errorf("MayStart around the boundary = %v, want %v", got, want)
	}
	if slots[4] != 0 || slots[5] != 1 {
		t.Errorf("slots %v: the swap is not between steps 4 and 5", slots)
	}
}

func TestChrony(t *testing.T) {
	addr := ntptest.StartChrony(t)
	clk, err := NewClock(ClockConfig{NTP: NTPConfig{Servers: []string{addr}}, MaxOffset: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	m, err := clk.Measure(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// chronyd serves this machine's own clock: the offset is ~0.
	if m.Good != 1 || !closeTo(m.Samples[0], 0) || m.Samples[0].Stratum != 8 {
		t.Errorf("chrony: %+v", m)
	}
	if !clk.Safe() {
		t.Errorf("unsafe against chrony: %s", clk.Status().Reason)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	clk2, _ := NewClock(ClockConfig{NTP: NTPConfig{Servers: []string{addr}, Interval: 20 * time.Millisecond}, MaxOffset: time.Second})
	go func() { clk2.Run(ctx); close(done) }()
	deadline := time.Now().Add(5 * time.Second)
	for !clk2.Safe() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if !clk2.Safe() {
		t.Errorf("Run never synced: %+v", clk2.Status())
	}
}
