package scheduler

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestLongestHostKey: the node's host key for a valid URL is at most
// "https:", a DNS name of 253 characters with the root's dot, and
// ":65535". A limit of 255 refused such keys (ErrBadHost), so a valid URL
// could not be crawled; the key must be taken, survive a reopen, and one
// byte more still be refused.
func TestLongestHostKey(t *testing.T) {
	name := strings.Repeat(strings.Repeat("a", 63)+".", 3) + strings.Repeat("b", 61) + "."
	key := "https:" + name + ":65535"
	if len(key) != 266 {
		t.Fatalf("key of %d bytes, want 266", len(key))
	}
	clk := newFakeClock(1, time.Hour, time.Second)
	dir := t.TempDir()
	s := mustOpen(t, dir, basicConfig(clk))
	if _, err := s.Add(0, key, 0); err != nil {
		t.Fatalf("Add with a host key of %d bytes: %v", len(key), err)
	}
	if _, err := s.Add(1, "short.example", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Host(key + "x"); !errors.Is(err, ErrBadHost) {
		t.Errorf("Host of %d bytes: %v, want ErrBadHost", len(key)+1, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if rep, err := Check(dir, false); err != nil || rep.Damaged() {
		t.Errorf("Check: %v, %v", rep.Findings, err)
	}
	s = mustOpen(t, dir, basicConfig(clk))
	defer s.Close()
	if h, ok := s.FindHost(key); !ok || h != 0 {
		t.Errorf("after a reopen FindHost(long key) = %d, %v; want 0, true", h, ok)
	}
}
