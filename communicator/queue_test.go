package communicator

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestQueueSlabBounded: long items taken from the head while many short
// ones stay queued left their bytes in the slab (it compacted by count
// only), so it grew without bound but that of the 32-bit offsets; now it
// holds at most twice the queued bytes and 1 MiB, and every item reads
// back as queued.
func TestQueueSlabBounded(t *testing.T) {
	var q queue
	long := strings.Repeat("l", 1100)
	next, want := 0, []string{}
	push := func(s string) {
		s = fmt.Sprintf("%s%d", s, next)
		next++
		q.push(uint64(next), []byte(s))
		want = append(want, s)
	}
	for round := range 8 {
		for range 1000 {
			push(long)
		}
		for range 2500 {
			push("s")
		}
		// Everything but the short items of this round goes.
		n := q.len() - 2500
		q.drop(n)
		want = want[n:]
		if dead := len(q.slab) - q.bytes; dead > max(q.bytes, 1<<20)+1200 {
			t.Fatalf("round %d: slab of %d bytes for %d queued", round, len(q.slab), q.bytes)
		}
		for i, it := range q.items[q.head:] {
			if !bytes.Equal(q.bytesOf(it), []byte(want[i])) {
				t.Fatalf("round %d: item %d reads %q, want %q", round, i, q.bytesOf(it), want[i])
			}
		}
	}
}
