package spider

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestReadPortRange(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		text   string
		lo, hi int
		ok     bool
	}{
		{"32768\t60999\n", 32768, 60999, true},
		{"1024 65535", 1024, 65535, true},
		{"80 80\n", 80, 80, true},
		{"", 0, 0, false},
		{"60999 32768\n", 0, 0, false},
		{"0 100\n", 0, 0, false},
		{"1 65536\n", 0, 0, false},
		{"a b\n", 0, 0, false},
		{"1 2 3\n", 0, 0, false},
		{strings.Repeat("9", 10000), 0, 0, false},
	} {
		path := writeFile(t, dir, "range", c.text)
		lo, hi, err := ReadPortRange(path)
		if (err == nil) != c.ok || lo != c.lo || hi != c.hi {
			t.Errorf("%.20q: %d %d %v", c.text, lo, hi, err)
		}
		if err != nil && !strings.Contains(err.Error(), path) {
			t.Errorf("%.20q: error %v does not name the file", c.text, err)
		}
	}
	if _, _, err := ReadPortRange(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing file: no error")
	}
	if lo, hi, err := ReadPortRange(PortRangeFile); err != nil {
		t.Logf("this machine's %s: %v", PortRangeFile, err)
	} else {
		t.Logf("this machine's local port range: %d-%d", lo, hi)
	}
}

func TestLimitWarnings(t *testing.T) {
	dir := t.TempDir()
	narrow := writeFile(t, dir, "narrow", "32768\t60999\n")
	wide := writeFile(t, dir, "wide", "1024 65535\n")
	for _, c := range []struct {
		fetchers  int
		openFiles uint64
		ports     string
		want      []string
	}{
		{300, 1 << 20, narrow, nil},
		{300, 812, narrow, nil},
		{300, 0, narrow, nil}, // limit unknown: no figure to name
		{300, 811, narrow, []string{"open-files limit 811 is below the 812 that 300 fetchers need (300 + 512)"}},
		{300, 1024, wide, nil},
		{10000, 1 << 20, narrow, []string{"local port range 32768-60999 (28232 ports) is below the 40000 that 10000 fetchers need (4 each"}},
		{10000, 1 << 20, wide, nil},
		{20000, 1024, wide, []string{"open-files limit 1024 is below the 20512", "local port range 1024-65535 (64512 ports) is below the 80000"}},
		{1, 1 << 20, filepath.Join(dir, "missing"), []string{"local port range unknown: open " + filepath.Join(dir, "missing")}},
	} {
		w := LimitWarnings(c.fetchers, c.openFiles, c.ports)
		if len(w) != len(c.want) {
			t.Errorf("%d fetchers, %d files, %s: %d warnings %q, want %d", c.fetchers, c.openFiles, c.ports, len(w), w, len(c.want))
			continue
		}
		for i := range w {
			if !strings.Contains(w[i], c.want[i]) {
				t.Errorf("warning %q lacks %q", w[i], c.want[i])
			}
		}
	}
}

// TestRaiseOpenFiles lowers this process's soft open-files limit, raises it
// back through RaiseOpenFiles and checks it reached the hard limit.
func TestRaiseOpenFiles(t *testing.T) {
	var orig unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &orig); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_NOFILE, &orig) })
	low := unix.Rlimit{Cur: min(512, orig.Max/2), Max: orig.Max}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	before, after, err := RaiseOpenFiles()
	if err != nil {
		t.Fatal(err)
	}
	var now unix.Rlimit
	unix.Getrlimit(unix.RLIMIT_NOFILE, &now)
	if before != low.Cur || after != now.Cur || (orig.Max != unix.RLIM_INFINITY && now.Cur != orig.Max) {
		t.Errorf("before %d after %d; soft limit now %d, hard %d", before, after, now.Cur, orig.Max)
	}
	// Already at the hard limit: nothing to do.
	if b, a, err := RaiseOpenFiles(); err != nil || b != a || a != now.Cur {
		t.Errorf("second raise: %d -> %d, %v", b, a, err)
	}
	if w := CheckLimits(10, 10<<20); len(w) > 0 {
		t.Logf("CheckLimits(10, 10 MiB) on this machine: %q", w)
	}
}

// TestMemoryWarnings: 100,000 fetchers and a 1 GiB limits.max_body (both
// in range) were accepted without a word on a machine of 16 GiB; the node
// was then killed for want of memory once large bodies came. Now the
// figures are warned about, and a machine whose memory cannot be read
// says so. The machine is a fake root holding proc/meminfo.
func TestMemoryWarnings(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "proc"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, "proc/meminfo", "MemTotal:       16777216 kB\nMemFree:         1000000 kB\n")
	if w := MemoryWarnings(300, 10<<20, root); w != nil {
		t.Errorf("300 fetchers × 10 MiB on 16 GiB: %q", w)
	}
	w := MemoryWarnings(100_000, 1<<30, root)
	if len(w) != 1 || !strings.Contains(w[0], "fetchers × limits.max_body: 100000 × 1 GiB = 97.7 TiB is above this machine's memory (16 GiB)") {
		t.Errorf("100,000 fetchers × 1 GiB on 16 GiB: %q", w)
	}
	if w := MemoryWarnings(2000, 10<<20, root); len(w) != 1 || !strings.Contains(w[0], "2000 × 10 MiB = 19.5 GiB") {
		t.Errorf("2,000 fetchers × 10 MiB on 16 GiB: %q", w)
	}
	for _, text := range []string{"", "MemFree: 5 kB\n", "MemTotal: lots kB\n", "MemTotal: 0 kB\n", strings.Repeat("x", 10000)} {
		bad := t.TempDir()
		os.Mkdir(filepath.Join(bad, "proc"), 0o755)
		path := writeFile(t, bad, "proc/meminfo", text)
		if w := MemoryWarnings(10, 1<<20, bad); len(w) != 1 || !strings.Contains(w[0], "machine memory unknown") || !strings.Contains(w[0], path) {
			t.Errorf("meminfo %.20q: %q", text, w)
		}
	}
	if total, err := ReadMemTotal(MemInfoFile); err != nil {
		t.Logf("this machine's %s: %v", MemInfoFile, err)
	} else {
		t.Logf("this machine's memory: %d bytes", total)
	}
}

// TestMemoryWarningsCgroup: the warning held fetchers × limits.max_body
// to the machine's MemTotal only, so a node in a container limited to
// 2 GiB on a 16 GiB machine, given 1000 fetchers × 10 MiB (9.8 GiB), was
// not warned and was killed by the container's limit. Now the smallest
// limit of the process's cgroup and its ancestors (v2 memory.max, v1
// memory.limit_in_bytes) is used when below MemTotal, naming its file; a
// limit file that is not a number is warned about, the machine's memory
// then used.
func TestMemoryWarningsCgroup(t *testing.T) {
	machine := func(t *testing.T, cgroup string, files map[string]string) string {
		root := t.TempDir()
		files["proc/meminfo"] = "MemTotal:       16777216 kB\n"
		files["proc/self/cgroup"] = cgroup
		for name, text := range files {
			if err := os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, root, name, text)
		}
		return root
	}
	v2 := machine(t, "0::/kube/pod1/ctr\n", map[string]string{
		"sys/fs/cgroup/memory.max":                "max\n",
		"sys/fs/cgroup/kube/memory.max":           "max\n",
		"sys/fs/cgroup/kube/pod1/memory.max":      "2147483648\n",
		"sys/fs/cgroup/kube/pod1/ctr/memory.max":  "max\n",
		"sys/fs/cgroup/kube/pod1/ctr/memory.high": "1000\n",
	})
	w := MemoryWarnings(1000, 10<<20, v2)
	if len(w) != 1 || !strings.Contains(w[0], "1000 × 10 MiB = 9.77 GiB is above the memory this process may use (2 GiB, its cgroup's limit in "+
		filepath.Join(v2, "sys/fs/cgroup/kube/pod1/memory.max")+"; the machine has 16 GiB)") {
		t.Errorf("cgroup v2 limit of 2 GiB on the parent: %q", w)
	}
	if w := MemoryWarnings(100, 10<<20, v2); w != nil {
		t.Errorf("100 × 10 MiB within a 2 GiB cgroup: %q", w)
	}
	v1 := machine(t, "5:cpu,cpuacct:/x\n4:memory:/docker/abc\n0::/\n", map[string]string{
		"sys/fs/cgroup/memory/memory.limit_in_bytes":            "9223372036854771712\n",
		"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "1073741824\n",
	})
	if w := MemoryWarnings(1000, 10<<20, v1); len(w) != 1 || !strings.Contains(w[0], "(1 GiB, its cgroup's limit in "+
		filepath.Join(v1, "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes")) {
		t.Errorf("cgroup v1 limit of 1 GiB: %q", w)
	}
	// A limit above the machine's memory, or none: MemTotal holds.
	big := machine(t, "0::/a\n", map[string]string{"sys/fs/cgroup/a/memory.max": "68719476736\n"})
	if w := MemoryWarnings(2000, 10<<20, big); len(w) != 1 || !strings.Contains(w[0], "above this machine's memory (16 GiB)") {
		t.Errorf("cgroup limit of 64 GiB on 16 GiB: %q", w)
	}
	bad := machine(t, "0::/a\n", map[string]string{"sys/fs/cgroup/a/memory.max": "lots\n"})
	if w := MemoryWarnings(2000, 10<<20, bad); len(w) != 2 || !strings.Contains(w[0], "cgroup memory limit unknown") ||
		!strings.Contains(w[0], filepath.Join(bad, "sys/fs/cgroup/a/memory.max")+`: "lots" is not a memory limit`) || !strings.Contains(w[1], "above this machine's memory") {
		t.Errorf("a cgroup limit not a number: %q", w)
	}
	if limit, from, err := CgroupMemoryLimit("/"); err != nil {
		t.Errorf("this machine's cgroup memory limit: %v", err)
	} else {
		t.Logf("this machine's cgroup memory limit: %d bytes (%s)", limit, from)
	}
}
