package cluster

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestControlCodec(t *testing.T) {
	c := testConfig()
	fs := c.Canonical()
	for _, want := range []bool{true, false} {
		for _, sent := range []time.Time{{}, time.Unix(1767225600, 123456789)} {
			for _, fresh := range []bool{false, true} {
				for _, epoch := range []uint64{0, 1 << 60} {
					for _, over := range []bool{false, true} {
						h := Hello{Want: want, Fields: fs, Epoch: epoch, Fresh: fresh, Sent: sent, Over: over}
						got, err := DecodeHello(EncodeHello(h, 0x0123456789abcdef))
						if err != nil || got.Want != want || !slices.Equal(got.Fields, fs) || !got.Sent.Equal(sent) || got.Fresh != fresh || got.Epoch != epoch || got.Over != over {
							t.Fatalf("hello round trip: %+v %v; want %+v", got, err, h)
						}
					}
				}
			}
		}
	}
	now := time.Unix(1767225600, 0)
	for _, c := range []struct {
		sent time.Time
		want time.Duration
	}{{time.Time{}, 0}, {now.Add(-time.Hour), 0}, {now.Add(Guard), 0}, {now.Add(time.Hour), time.Hour}} {
		if got := ClockAhead(Hello{Sent: c.sent}, now); got != c.want {
			t.Errorf("ClockAhead(sent %v, now %v) = %v, want %v", c.sent, now, got, c.want)
		}
	}
	if _, err := DecodeHello([]byte("kspider-hello 1 0123456789abcdef 1\nclock=soon\n")); err == nil {
		t.Error("DecodeHello: a clock that is no number accepted")
	}
	if _, err := DecodeHello([]byte("kspider-hello 1 0123456789abcdef 1\nover=yes\n")); err == nil {
		t.Error("DecodeHello: over other than 1 accepted")
	}
	if _, err := DecodeHello([]byte("kspider-hello 1 0123456789abcdef 1\nfresh=yes\n")); err == nil {
		t.Error("DecodeHello: fresh other than 1 accepted")
	}
	if _, err := DecodeHello([]byte("kspider-hello 1 0123456789abcdef 1\nepoch_of_sender=0\n")); err == nil {
		t.Error("DecodeHello: epoch 0 accepted")
	}
	for _, bad := range []string{"", "kspider-hello 1 ", "kspider-hello 1 0123456789abcdeg 1\n", "kspider-hello 1 0123456789abcdef 2\n",
		"kspider-hello 1 0123456789abcdef 1\nnoequals", "kspider-hello 2 0123456789abcdef 1\n"} {
		if _, err := DecodeHello([]byte(bad)); err == nil {
			t.Errorf("DecodeHello(%q): no error", bad)
		}
	}
	for _, r := range []uint64{0, 1, 300, 1 << 40} {
		if got, err := DecodeRound(EncodeRound(r)); err != nil || got != r {
			t.Errorf("round %d: %d %v", r, got, err)
		}
		// A state echoes the coordinator's epoch of the probe it
		// answers and says its sender's; protocol 4's, without them,
		// reads as of epochs 0.
		for _, ep := range []uint64{0, 1, 1 << 40} {
			for _, s := range []State{{true, 0, 1}, {false, 7, 1 << 40}, {true, 1 << 50, 3}} {
				if ep == 0 {
					s.Epoch = 0
				}
				gr, ge, gs, err := DecodeState(EncodeState(r, ep, s))
				if err != nil || gr != r || ge != ep || gs != s {
					t.Errorf("state %d %d %+v: %d %d %+v %v", r, ep, s, gr, ge, gs, err)
				}
			}
		}
		if gr, ge, err := DecodeProbe(EncodeProbe(r, 1<<40)); err != nil || gr != r || ge != 1<<40 {
			t.Errorf("probe %d: %d %d %v", r, gr, ge, err)
		}
		if gr, ge, err := DecodeProbe(EncodeRound(r)); err != nil || gr != r || ge != 0 {
			t.Errorf("protocol 4's probe %d: %d %d %v", r, gr, ge, err)
		}
	}
	for _, bad := range [][]byte{nil, {0x80}, {1, 2}, {1, 1}, {1, 1, 0x80}, {1, 0, 1, 0}, {1, 0, 1, 1}, {1, 0, 1, 1, 0}, {1, 0, 1, 1, 1, 1}, {1, 0, 1, 0x80}, {1, 0, 1, 1, 0x80}} {
		if _, _, _, err := DecodeState(bad); err == nil {
			t.Errorf("DecodeState(%x): no error", bad)
		}
	}
	for _, bad := range [][]byte{nil, {0x80}, {9, 0}, {9, 1, 2}} {
		if _, _, err := DecodeProbe(bad); err == nil || !strings.Contains(err.Error(), "probe") {
			t.Errorf("DecodeProbe(%x): %v", bad, err)
		}
	}
	if _, err := DecodeRound([]byte{1, 2}); err == nil {
		t.Error("DecodeRound: trailing byte accepted")
	}
	// "finished" carries the coordinator's epoch; protocol 2's, the round
	// alone, reads as of epoch 0.
	if r, ep, err := DecodeFinished(EncodeFinished(9, 1<<40)); err != nil || r != 9 || ep != 1<<40 {
		t.Errorf("finished: %d %d %v", r, ep, err)
	}
	if r, ep, err := DecodeFinished(EncodeRound(9)); err != nil || r != 9 || ep != 0 {
		t.Errorf("protocol 2's finished: %d %d %v", r, ep, err)
	}
	for _, bad := range [][]byte{nil, {0x80}, {9, 0}, {9, 1, 2}, {9, 0x80}} {
		if _, _, err := DecodeFinished(bad); err == nil {
			t.Errorf("DecodeFinished(%x): no error", bad)
		}
		if _, _, err := DecodeBye(bad); err == nil || !strings.Contains(err.Error(), "bye") {
			t.Errorf("DecodeBye(%x): %v", bad, err)
		}
	}
	// "bye" echoes the epoch of the "finished" it answers; protocol 3's,
	// the round alone, reads as of epoch 0.
	if r, ep, err := DecodeBye(EncodeBye(9, 1<<40)); err != nil || r != 9 || ep != 1<<40 {
		t.Errorf("bye: %d %d %v", r, ep, err)
	}
	if r, ep, err := DecodeBye(EncodeRound(9)); err != nil || r != 9 || ep != 0 {
		t.Errorf("protocol 3's bye: %d %d %v", r, ep, err)
	}
}

func TestDetector(t *testing.T) {
	d := NewDetector([]int{1, 2})
	round := func(own State, s1, s2 State) (complete, over bool) {
		r := d.Start(own)
		if c, _, _ := d.Reply(1, r, s1); c {
			t.Fatal("complete after one of two")
		}
		if c, _, _ := d.Reply(1, r-1, s2); c { // stale round: ignored
			t.Fatal("stale answer counted")
		}
		c, o, err := d.Reply(2, r, s2)
		if err != nil {
			t.Fatal(err)
		}
		return c, o
	}
	idle := func(g uint64) State { return State{Idle: true, Gen: g} }
	if c, o := round(idle(1), idle(1), idle(1)); !c || o {
		t.Fatal("first all-idle round must not end the crawl")
	}
	if !d.AllIdle() {
		t.Fatal("AllIdle false after an all-idle round")
	}
	if _, o := round(idle(1), idle(2), idle(1)); o {
		t.Fatal("a generation moved: not over")
	}
	if _, o := round(idle(1), idle(2), State{Gen: 1}); o {
		t.Fatal("a busy node: not over")
	}
	if d.AllIdle() {
		t.Fatal("AllIdle true after a round that found a node busy")
	}
	if _, o := round(idle(1), idle(2), idle(1)); o {
		t.Fatal("first idle round after a busy one: not over")
	}
	if _, o := round(idle(1), idle(2), idle(1)); !o {
		t.Fatal("two identical all-idle rounds: over")
	}
	if _, _, err := d.Reply(5, d.Start(idle(1)), idle(1)); err == nil {
		t.Error("answer from a stranger accepted")
	}
	// The coordinator's own state counts too.
	d = NewDetector([]int{1})
	d.Start(idle(1))
	d.Reply(1, 1, idle(1))
	d.Start(idle(2))
	if _, o, _ := d.Reply(1, 2, idle(1)); o {
		t.Error("coordinator's generation moved: not over")
	}
}

// TestDetectorRestart: a peer restarted between two rounds counts its Gen
// from 0 again; equal by chance, its new run's state must not match its
// run before's.
func TestDetectorRestart(t *testing.T) {
	d := NewDetector([]int{1})
	for i, epoch := range []uint64{7, 8, 8} {
		r := d.Start(State{Idle: true, Epoch: 1})
		complete, over, err := d.Reply(1, r, State{Idle: true, Gen: 3, Epoch: epoch})
		if err != nil || !complete {
			t.Fatalf("round %d: complete %v, %v", r, complete, err)
		}
		if want := i == 2; over != want {
			t.Fatalf("round %d (peer's epoch %d): over %v, want %v", r, epoch, over, want)
		}
	}
}
