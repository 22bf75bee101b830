package storage

import (
	"context"
	"os"
	"path/filepath"
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

// TestSegmentNotAFileIsNamedByWriterAndGap: the writer's open said the
// segment the index checkpoint names "is missing" when a FIFO, a
// directory or a link stood under its name, and a Reader said "segments
// A to B are missing" of a gap in the numbering where such a file stood;
// now both say what stands there, as the check's damage does.
func TestSegmentNotAFileIsNamedByWriterAndGap(t *testing.T) {
	cases := []struct {
		what string
		make func(seg string) error
		want string
	}{
		{"missing", func(string) error { return nil }, "is missing"},
		{"a FIFO", func(seg string) error { return unix.Mkfifo(seg, 0o644) }, "is a FIFO (named pipe), not a segment file"},
		{"a directory", func(seg string) error { return os.Mkdir(seg, 0o755) }, "is a directory, not a segment file"},
		{"a link to itself", func(seg string) error { return os.Symlink(filepath.Base(seg), seg) }, "is a symbolic link that leads to no file"},
	}
	for _, c := range cases {
		dir, _ := layoutStore(t, smallSegments(), 60)
		nums, err := listSegments(dir)
		if err != nil {
			t.Fatal(err)
		}
		last := segmentPath(dir, nums[len(nums)-1])
		if err := os.Remove(last); err != nil {
			t.Fatal(err)
		}
		if err := c.make(last); err != nil {
			t.Fatal(err)
		}
		withinDeadline(t, "a writer's open with segment "+c.what, func() {
			logged := strings.Join(reopenLogged(t, dir), "\n")
			if want := "segment " + last + ", which the index checkpoint names, " + c.want; !strings.Contains(logged, want) {
				t.Errorf("segment %s: the writer's log does not say %q:\n%s", c.what, want, logged)
			}
		})
	}
	// Gaps: one segment, and two of which the second is odd.
	dir, _ := layoutStore(t, smallSegments(), 120)
	nums, err := listSegments(dir)
	if err != nil || len(nums) < 6 {
		t.Fatalf("want at least 6 segments, have %v (%v)", nums, err)
	}
	one, two := segmentPath(dir, nums[1]), []string{segmentPath(dir, nums[3]), segmentPath(dir, nums[4])}
	for _, p := range append(two, one) {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mkfifo(one, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(two[1], 0o755); err != nil {
		t.Fatal(err)
	}
	withinDeadline(t, "OpenReader with gaps", func() {
		r, err := OpenReader([]string{dir})
		if err != nil {
			t.Errorf("OpenReader: %v", err)
			return
		}
		defer r.Close()
		var said []string
		for _, e := range r.Stats().Errors {
			said = append(said, e.Error())
		}
		all := strings.Join(said, "\n")
		for _, want := range []string{
			"segment " + one + " is a FIFO (named pipe), not a segment file, so is read as missing",
			"segments " + filepath.Base(two[0]) + " to " + filepath.Base(two[1]) + " are missing or not segment files: " + two[1] + " is a directory, not a segment file",
		} {
			if !strings.Contains(all, want) {
				t.Errorf("the reader does not say %q:\n%s", want, all)
			}
		}
	})
}

// TestStraySegmentNameIsReported: a FIFO, a directory or a link under a
// segment's name after the last segment file, named by no index entry nor
// the checkpoint, was passed over in silence: the tools exited 0 and
// kspider check said nothing. Now each is a problem naming its path and
// what it is, and nothing hangs on the FIFO.
func TestStraySegmentNameIsReported(t *testing.T) {
	dir, _ := layoutStore(t, smallSegments(), 60)
	nums, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	last := nums[len(nums)-1]
	fifo, sub, loop, link := segmentPath(dir, last+1), segmentPath(dir, last+2), segmentPath(dir, last+4), segmentPath(dir, 99999999)
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(loop), loop); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(segmentPath(dir, last), link); err != nil {
		t.Fatal(err)
	}
	wants := []string{
		"segment " + fifo + " is a FIFO (named pipe), not a segment file",
		"segment " + sub + " is a directory, not a segment file",
		"segment " + loop + " is a symbolic link that leads to no file",
		"segment " + link + " is a symbolic link, not a segment file of the store's own",
	}
	withinDeadline(t, "OpenReader with stray segment names", func() {
		r, err := OpenReader([]string{dir})
		if err != nil {
			t.Errorf("OpenReader: %v", err)
			return
		}
		defer r.Close()
		pages := 0
		if err := r.Scan(context.Background(), func(*Page) error { pages++; return nil }); err != nil || pages != 60 {
			t.Errorf("scan saw %d pages, want 60 (%v)", pages, err)
		}
		st := r.Stats()
		var said []string
		for _, e := range st.Errors {
			said = append(said, e.Error())
		}
		all := strings.Join(said, "\n")
		if st.Damage != int64(len(wants)) {
			t.Errorf("%d problems, want %d:\n%s", st.Damage, len(wants), all)
		}
		for _, want := range wants {
			if !strings.Contains(all, want) {
				t.Errorf("the reader does not say %q:\n%s", want, all)
			}
		}
	})
	withinDeadline(t, "kspider check with stray segment names", func() {
		var out strings.Builder
		if problems, err := Check(dir, false, &out); problems != len(wants) || err != nil {
			t.Errorf("check: %d problems, %v, want %d:\n%s", problems, err, len(wants), out.String())
		}
	})
}
