package main

import "runtime"

// Heap profiling is off in every command: none serves heap profiles, and
// the runtime's sampling (one allocation per 512 KiB) builds a bucket table
// and a stack record per sampled call site, which a small crawl's peak RSS
// carries (about 1 MB crawling the PostgreSQL docs). `bench crawl
// --memprofile` turns it back on for its crawls (heapProfiling).
func init() { runtime.MemProfileRate = 0 }

// heapProfiling turns heap profiling on at the runtime's default rate.
func heapProfiling() { runtime.MemProfileRate = 512 << 10 }
