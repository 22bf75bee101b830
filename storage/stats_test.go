package storage

import (
	"context"
	"path/filepath"
	"testing"
)

func TestDisksCountWhatIsDurable(t *testing.T) {
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	s, err := Open(Config{Dirs: dirs})
	if err != nil {
		t.Fatal(err)
	}
	if d := s.Disks(); len(d) != 2 || d[0].Dir != dirs[0] || d[0].Bytes != 0 || d[0].Size == 0 || d[0].FreeErr != nil {
		t.Fatalf("fresh store: %+v", d)
	}
	const n = 50
	for id := uint64(0); id < n; id++ {
		if err := s.Put(context.Background(), testPage(id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var recs, bytes uint64
	for _, d := range s.Disks() {
		if d.Failed {
			t.Errorf("%s failed", d.Dir)
		}
		recs += d.Records
		bytes += d.Bytes
	}
	if recs != n || bytes < n*20 {
		t.Fatalf("after %d pages: %d records, %d bytes durable", n, recs, bytes)
	}
}
