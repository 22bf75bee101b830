package status

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// The Go runtime's and the process's metrics, under the names Prometheus's
// Go client gives them (go_*, process_*), so that dashboards made for
// those keep working: the commonest of its Go collector's, and its process
// collector's on Linux from /proc (left out where /proc has none).

func goMetrics(s *scrape) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	g := func(name, help string, v float64) { s.family(name, help, gaugeValue).add(v) }
	c := func(name, help string, v float64) { s.family(name, help, counterValue).add(v) }
	g("go_goroutines", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine()))
	n, _ := runtime.ThreadCreateProfile(nil)
	g("go_threads", "Number of OS threads created.", float64(n))
	g("go_sched_gomaxprocs_threads", "The current runtime.GOMAXPROCS setting.", float64(runtime.GOMAXPROCS(0)))
	s.family("go_info", "Information about the Go environment.", gaugeValue).add(1, "version", runtime.Version())
	g("go_memstats_alloc_bytes", "Number of bytes allocated in heap and currently in use.", float64(m.HeapAlloc))
	c("go_memstats_alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already.", float64(m.TotalAlloc))
	g("go_memstats_sys_bytes", "Number of bytes obtained from system.", float64(m.Sys))
	c("go_memstats_mallocs_total", "Total number of heap objects allocated.", float64(m.Mallocs))
	c("go_memstats_frees_total", "Total number of heap objects frees.", float64(m.Frees))
	g("go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use.", float64(m.HeapAlloc))
	g("go_memstats_heap_sys_bytes", "Number of heap bytes obtained from system.", float64(m.HeapSys))
	g("go_memstats_heap_idle_bytes", "Number of heap bytes waiting to be used.", float64(m.HeapIdle))
	g("go_memstats_heap_inuse_bytes", "Number of heap bytes that are in use.", float64(m.HeapInuse))
	g("go_memstats_heap_released_bytes", "Number of heap bytes released to OS.", float64(m.HeapReleased))
	g("go_memstats_heap_objects", "Number of currently allocated objects.", float64(m.HeapObjects))
	g("go_memstats_stack_inuse_bytes", "Number of bytes obtained from system for stack allocator in non-CGO environments.", float64(m.StackInuse))
	g("go_memstats_stack_sys_bytes", "Number of bytes obtained from system for stack allocator.", float64(m.StackSys))
	g("go_memstats_next_gc_bytes", "Number of heap bytes when next garbage collection will take place.", float64(m.NextGC))
	g("go_memstats_last_gc_time_seconds", "Number of seconds since 1970 of last garbage collection.", float64(m.LastGC)/1e9)
	c("go_gc_cycles_total", "Completed garbage collection cycles.", float64(m.NumGC))
	c("go_gc_pause_seconds_total", "Time the world was stopped for garbage collection.", float64(m.PauseTotalNs)/1e9)
}

func processMetrics(s *scrape) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		s.family("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", counterValue).add(cpu.Seconds())
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		s.family("process_max_fds", "Maximum number of open file descriptors.", gaugeValue).add(float64(lim.Cur))
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		s.family("process_open_fds", "Number of open file descriptors.", gaugeValue).add(float64(len(fds)))
	}
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return
	}
	// The fields after the command, which is in parentheses and may hold
	// spaces: state is field 3, starttime 22, vsize 23, rss 24 (pages).
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return
	}
	f := bytes.Fields(stat[i+1:])
	field := func(n int) (float64, bool) {
		if n-3 >= len(f) {
			return 0, false
		}
		v, err := strconv.ParseUint(string(f[n-3]), 10, 64)
		return float64(v), err == nil
	}
	if v, ok := field(23); ok {
		s.family("process_virtual_memory_bytes", "Virtual memory size in bytes.", gaugeValue).add(v)
	}
	if v, ok := field(24); ok {
		s.family("process_resident_memory_bytes", "Resident memory size in bytes.", gaugeValue).add(v * float64(os.Getpagesize()))
	}
	if start, ok := field(22); ok {
		if boot, ok := bootTime(); ok {
			const userHZ = 100 // the unit of /proc's times on Linux
			s.family("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", gaugeValue).add(boot + start/userHZ)
		}
	}
}

// bootTime is the btime line of /proc/stat: the boot, in Unix seconds.
func bootTime() (float64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.Index(b, []byte("\nbtime "))
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+len("\nbtime "):])
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(f[0]), 10, 64)
	return float64(v), err == nil
}
