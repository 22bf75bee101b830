package scheduler

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRepairLostCommit: sched.meta is 1.5 KiB, both commit slots on one
// disk sector's page; with both slots unreadable (zeroed), or the file
// gone, while the other three files verify, the repair moved all four
// away and the next start had an empty scheduler: every URL's state and
// every host's politeness lost for want of three counts. Now it writes a
// meta file with an empty commit, so that Open reads the files as after
// a crash, and every URL and host is there again.
func TestRepairLostCommit(t *testing.T) {
	for _, how := range []string{"zeroed", "removed"} {
		t.Run(how, func(t *testing.T) {
			dir, _ := checkFixture(t, t.TempDir(), "sched")
			s := mustOpen(t, dir, basicConfig(newFakeClock(1, time.Hour, 0)))
			var want []URLInfo
			for id := range uint32(300) {
				want = append(want, s.URL(id))
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			meta := filepath.Join(dir, metaName)
			if how == "zeroed" {
				b, err := os.ReadFile(meta)
				if err != nil {
					t.Fatal(err)
				}
				clear(b[512:])
				os.WriteFile(meta, b, 0o644)
			} else {
				os.Remove(meta)
			}
			rep, err := Check(dir, true)
			if err != nil || !rep.Repaired || !rep.CommitLost {
				t.Fatalf("repair: %v, %+v", err, rep)
			}
			if after, err := Check(dir, false); err != nil || after.Damaged() {
				t.Fatalf("after repair: %v %v", err, after.Findings)
			}
			s = mustOpen(t, dir, basicConfig(newFakeClock(1, time.Hour, 0)))
			defer s.Close()
			if s.Len() != 300 || s.Hosts() != 11 {
				t.Fatalf("after repair: %d URLs, %d hosts; want 300 and 11", s.Len(), s.Hosts())
			}
			for id := range uint32(300) {
				if got := s.URL(id); got != want[id] {
					t.Fatalf("URL %d after repair: %+v, want %+v", id, got, want[id])
				}
			}
		})
	}
}

// TestRepairLostCommitHostDamaged: with the commit lost, a damaged host
// record ends the host table where Open reads it as after a crash, and
// the URLs of the hosts after it would be dropped for good (the node adds
// such URLs again only when a page not stored links to them): no empty
// commit then, the files are moved away as before.
func TestRepairLostCommitHostDamaged(t *testing.T) {
	dir, _ := checkFixture(t, t.TempDir(), "sched")
	meta := filepath.Join(dir, metaName)
	b, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	clear(b[512:])
	os.WriteFile(meta, b, 0o644)
	hosts := filepath.Join(dir, hostsName)
	b, err = os.ReadFile(hosts)
	if err != nil {
		t.Fatal(err)
	}
	b[headerSize+3*hostRecSize+33] ^= 1 // host 3's Crawl-delay
	os.WriteFile(hosts, b, 0o644)
	rep, err := Check(dir, true)
	if err != nil || !rep.Repaired || rep.CommitLost || rep.Dropped == 0 {
		t.Fatalf("repair: %v, %+v", err, rep)
	}
}
