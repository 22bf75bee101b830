package storage

import (
	"context"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSegmentNotAFileIsNamed: the segment the index checkpoint names,
// replaced by a FIFO, a directory or a link looping to itself, was
// reported as "segment 0000000N.seg ... is missing", its file name only,
// and the operator, finding the name there, looked for another cause; now
// the damage names its path and what stands there.
func TestSegmentNotAFileIsNamed(t *testing.T) {
	dir, spans := layoutStore(t, smallSegments(), 60)
	var last uint32
	for _, sp := range spans {
		last = max(last, sp.seg)
	}
	seg := segmentPath(dir, last)
	if err := os.Rename(seg, seg+".moved"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		make func() error
		want string
	}{
		{"missing", func() error { return nil }, "is missing"},
		{"a FIFO", func() error { return unix.Mkfifo(seg, 0o644) }, "is a FIFO (named pipe), not a segment file"},
		{"a directory", func() error { return os.Mkdir(seg, 0o755) }, "is a directory, not a segment file"},
		{"a link to itself", func() error { return os.Symlink(segmentName(last), seg) }, "is a symbolic link that leads to no file"},
		{"a link to a segment", func() error { return os.Symlink(seg+".moved", seg) }, "is a symbolic link, not a segment file of the store's own"},
	} {
		os.RemoveAll(seg)
		if err := c.make(); err != nil {
			t.Fatal(err)
		}
		withinDeadline(t, "OpenReader with segment "+c.what, func() {
			r, err := OpenReader([]string{dir})
			if err != nil {
				t.Errorf("%s: OpenReader: %v", c.what, err)
				return
			}
			defer r.Close()
			if err := r.Scan(context.Background(), func(*Page) error { return nil }); err != nil {
				t.Errorf("%s: Scan: %v", c.what, err)
			}
			var said []string
			for _, e := range r.Stats().Errors {
				said = append(said, e.Error())
			}
			all := strings.Join(said, "\n")
			for _, want := range []string{"segment " + seg + ", which the index checkpoint names, " + c.want, "the index has them in segment " + seg + ", which " + c.want} {
				if !strings.Contains(all, want) {
					t.Errorf("segment %s: damage does not say %q:\n%s", c.what, want, all)
				}
			}
		})
	}
}
