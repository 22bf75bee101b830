package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
)

// benchmark is one `kspider bench` target; each lives in its own file.
type benchmark struct {
	name    string
	summary string
	run     func(ctx context.Context, e env, args []string) error
}

func benchmarks() []benchmark {
	return []benchmark{
		{"urltree", "URL tree size and Add/Find/Get speed against a Go map", benchURLTree},
		{"storage", "page storage pipeline throughput per codec", benchStorage},
		{"resolver", "DNS resolver cold rate and cache hit cost", benchResolver},
		{"collector", "collector pages per CPU-second against net/http, pipelined and not", benchCollector},
		{"communicator", "UDP URL exchange between two endpoints on loopback", benchCommunicator},
		{"scheduler", "scheduler add cost, lists handed out per second, bytes per URL, reopen", benchScheduler},
		{"crawl", "node crawls of a test web and the nginx docs, beside colly's, in child processes", benchCrawl},
		{"cluster", "one node against a cluster of N on this machine: CPU per page, exchange, balance", benchCluster},
	}
}

func runBench(ctx context.Context, e env, args []string) error {
	help := func() {
		fmt.Fprintln(e.stdout, "usage: kspider bench <target> [arguments]")
		fmt.Fprintln(e.stdout)
		fmt.Fprintln(e.stdout, "Runs a benchmark and prints its figures (--json for one JSON object).")
		fmt.Fprintln(e.stdout)
		fmt.Fprintln(e.stdout, "targets:")
		width := 0
		for _, b := range benchmarks() {
			width = max(width, len(b.name))
		}
		for _, b := range benchmarks() {
			fmt.Fprintf(e.stdout, "  %-*s  %s\n", width, b.name, b.summary)
		}
	}
	if len(args) == 0 {
		return usagef("missing benchmark target")
	}
	if a := args[0]; a == "-h" || a == "-help" || a == "--help" || a == "help" {
		help()
		return nil
	}
	var names []string
	for _, b := range benchmarks() {
		if b.name == args[0] {
			if err := b.run(ctx, e, args[1:]); err != nil && !errors.Is(err, flag.ErrHelp) {
				return subcommandError{name: "bench " + b.name, err: err}
			}
			return nil
		}
		names = append(names, b.name)
	}
	return usagef("unknown benchmark %q (targets: %s)", args[0], strings.Join(names, ", "))
}

// startCPUProfile writes a CPU profile to path until stop is called; with
// an empty path it does nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
