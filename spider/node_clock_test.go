package spider

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestNodeClockSteppedBack: the system clock is stepped back an hour (by
// hand, a VM restored, an NTP daemon's step) while the one host of a solo
// crawl waits out its politeness delay between two lists. Its wait ended
// at an instant an hour ahead of the clock then, and the host waited that
// hour; the solo clock carries on by the monotonic clock instead, and the
// crawl ends after the delay.
func TestNodeClockSteppedBack(t *testing.T) {
	const pages = 40
	var back atomic.Int64 // how far the system clock is stepped back
	var once sync.Once
	seeds := streamWeb(t, pages, 1000, func(path string) {
		if path == "/p0" { // the first list: stepped back while the host waits after it
			once.Do(func() {
				time.AfterFunc(time.Second, func() { back.Store(int64(time.Hour)) })
			})
		}
	})
	cfg := streamConfig(t, seeds)
	cfg.Scheduler.MinDelay = 2 * time.Second
	start := time.Now()
	cfg.Scheduler.Clock = newSoloClock(func() (time.Time, time.Duration) {
		t := time.Now()
		return t.Add(-time.Duration(back.Load())), t.Sub(start)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sum, err := runNode(t, ctx, cfg)
	if err != nil {
		t.Fatalf("crawl: %v (the host waited out the clock's step)", err)
	}
	if back.Load() == 0 {
		t.Fatal("the clock was never stepped back: the test proves nothing")
	}
	if !sum.Finished || sum.Stored != pages+1 {
		t.Errorf("stored %d pages (finished %v), want %d", sum.Stored, sum.Finished, pages+1)
	}
}

// TestSoloClockSlewsBack: the system clock stepped back 10 s. The solo
// clock never goes back, goes on at half pace while ahead, and is the
// system clock again once that caught up (20 s after the step): a clock
// kept ahead for good had every wait of the run in the scheduler end up
// to MaxWait late, and stored each host's next start ahead of the next
// run's clock.
func TestSoloClockSlewsBack(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mono, back time.Duration
	c := newSoloClock(func() (time.Time, time.Duration) { return base.Add(mono - back), mono })
	prev := c.Phase().Now
	for mono < 30*time.Second {
		mono += 100 * time.Millisecond
		if mono == 5*time.Second {
			back = 10 * time.Second
		}
		now := c.Phase().Now
		if now.Before(prev) {
			t.Fatalf("at %v on the monotonic clock the solo clock went back from %v to %v", mono, prev, now)
		}
		if mono == 10*time.Second && !now.After(base.Add(mono-back)) {
			t.Fatalf("5 s after the step the solo clock is %v, the system clock's time: it went back", now)
		}
		prev = now
	}
	if want := base.Add(mono - back); !prev.Equal(want) {
		t.Errorf("25 s after the step the solo clock is %v, the system clock %v: it never caught up", prev, want)
	}
}
