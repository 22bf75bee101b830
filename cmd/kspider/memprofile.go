package main

import (
	"bytes"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
)

// Heap profiling is off in every command: none serves heap profiles, and
// the runtime's sampling (one allocation per 512 KiB) builds a bucket table
// and a stack record per sampled call site, which a small crawl's peak RSS
// carries (about 1 MB crawling the PostgreSQL docs). `bench crawl
// --memprofile` turns it back on for its crawls (heapProfiling).
func init() { runtime.MemProfileRate = 0 }

// heapProfiling turns heap profiling on, sampling every 8 KiB (the
// runtime's default of 512 KiB sees a few dozen allocations in a small
// crawl's heap), and watches for the peak of the live heap: the
// profile written at the end of a crawl, after its buffers went back,
// says little about what made its peak RSS. stop writes the profile of
// the peak to path and returns the heap goal then (twice the live heap).
func heapProfiling(path string) (stop func() (peak uint64, err error)) {
	runtime.MemProfileRate = 8 << 10
	w := &heapPeakWatch{done: make(chan struct{})}
	w.wg.Add(1)
	go w.run()
	return func() (uint64, error) {
		close(w.done)
		w.wg.Wait()
		if w.prof.Len() == 0 {
			return 0, nil
		}
		return w.peak, os.WriteFile(path, w.prof.Bytes(), 0o644)
	}
}

// heapPeakWatch samples the heap goal after each garbage collection and
// keeps the heap profile taken at the largest: a heap profile describes
// the live heap as of the last collection, which sets the next goal and so
// the heap's peak. (runtime.ReadMemStats stops the world for a moment,
// every 2 ms of a profiled crawl; runtime/metrics would not, but its
// initialisation would then run in every command.)
type heapPeakWatch struct {
	done chan struct{}
	wg   sync.WaitGroup
	peak uint64 // the largest heap goal seen
	prof bytes.Buffer
}

func (w *heapPeakWatch) run() {
	defer w.wg.Done()
	var ms runtime.MemStats
	var cycles uint32
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-t.C:
		}
		runtime.ReadMemStats(&ms)
		if ms.NumGC == cycles || ms.NextGC <= w.peak {
			cycles = ms.NumGC
			continue
		}
		cycles, w.peak = ms.NumGC, ms.NextGC
		w.prof.Reset()
		if err := pprof.Lookup("heap").WriteTo(&w.prof, 0); err != nil {
			w.prof.Reset()
		}
	}
}
