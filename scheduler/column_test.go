package scheduler

import (
	"fmt"
	"testing"
	"time"
)

// TestColumnCollisions: a host's column was HostHash mod Columns, the same
// for everybody, so a hostile web could name its hosts (a few dozen tries
// each) to all take one column: they had Rows rows between them, and the
// other hosts of that column waited behind them all. Now the column comes
// from a hash with a seed of the scheduler's own, and such names spread
// over the columns as any do.
func TestColumnCollisions(t *testing.T) {
	const cols = 31
	var names []string
	for i := 0; len(names) < 2*cols; i++ {
		n := fmt.Sprintf("h%d.evil.example", i)
		if HostHash(n)%cols == 0 {
			names = append(names, n)
		}
	}
	clk := newFakeClock(1, time.Hour, 0)
	s := mustOpen(t, t.TempDir(), Config{Clock: clk, Columns: cols, Rows: 1, ListLen: 1})
	defer s.Close()
	for i, n := range names {
		if _, err := s.Add(uint32(i), n, 0); err != nil {
			t.Fatal(err)
		}
	}
	// 62 names over 31 columns at random take about 27; five or fewer
	// has odds far below one in a billion.
	if got := len(drain(t, s)); got <= 5 {
		t.Fatalf("%d hosts named to share a column: %d lists out at once with one row per column, want them spread", len(names), got)
	}
}
