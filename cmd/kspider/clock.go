package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/kspider/kspider/scheduler"
)

// runClock measures the NTP offset once and shows where this node stands
// in the phase schedule.
func runClock(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "clock", "clock --ntp SERVER... [--phases P --phase-length D --node I]",
		`Asks the NTP servers once (in parallel), takes the median offset of the
good answers and prints it with each server's sample, then the current time
slot, the node's active phase, the time to the next swap and whether the
clock is safe (offset within --max-offset) and outside the guard interval
around the slot boundaries. Slot t = floor((now - epoch) / phase-length);
node i is in phase (i + t) mod P. Exit status 1 if no server answered well.`)
	var servers serverList
	fs.Var(&servers, "ntp", "NTP `SERVER` (host or host:port); repeatable or comma-separated")
	phases := fs.Int("phases", 1, "number of phases `P` (at least --nodes)")
	nodes := fs.Int("nodes", 0, "number of nodes `N` (default: P)")
	node := fs.Int("node", 0, "this node's index `I` (0..N-1)")
	phaseLen := fs.Duration("phase-length", 10*time.Minute, "length of one phase (time slot)")
	epochS := fs.String("epoch", "1970-01-01T00:00:00Z", "start of slot 0 (RFC 3339), the same on every node")
	maxOffset := fs.Duration("max-offset", 100*time.Millisecond, "offset bound beyond which the clock is unsafe")
	guard := fs.Duration("guard", 0, "guard interval at each end of a slot (default 2 x --max-offset)")
	timeout := fs.Duration("timeout", time.Second, "per-server query timeout")
	maxRTT := fs.Duration("max-rtt", 500*time.Millisecond, "answers with a longer round trip are rejected")
	maxStratum := fs.Int("max-stratum", 10, "answers from a higher stratum are rejected")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	servers = append(servers, fs.Args()...) // "--ntp a b c" reads as three servers
	if len(servers) == 0 {
		return usagef("no NTP server given (--ntp SERVER)")
	}
	if *nodes == 0 {
		*nodes = *phases
	}
	epoch, err := time.Parse(time.RFC3339Nano, *epochS)
	if err != nil {
		return usagef("--epoch: %v", err)
	}
	// Further off, the slot, its bounds and the time to the swap are
	// nonsense (an epoch in 1700 gave a slot in 1992 and a swap 34 years
	// ago). The bound is the one kspider run puts on cluster.epoch.
	if err := scheduler.CheckEpochNear(epoch, time.Now()); err != nil {
		return usagef("--epoch %v", err)
	}
	cl := scheduler.Cluster{Epoch: epoch, PhaseLength: *phaseLen, Phases: *phases, Nodes: *nodes}
	if err := cl.Validate(); err != nil {
		return usagef("%v", err)
	}
	if *node < 0 || *node >= *nodes {
		return usagef("--node %d is not in 0..%d", *node, *nodes-1)
	}
	if *maxOffset <= 0 || *guard < 0 || *timeout <= 0 || *maxRTT <= 0 || *maxStratum < 1 {
		return usagef("--max-offset, --timeout, --max-rtt and --max-stratum must be positive, --guard not negative")
	}
	if g := cmp.Or(*guard, 2**maxOffset); scheduler.StartWindow(*phaseLen, g) <= 0 {
		return usagef("a guard of %v at each end of a slot of %v leaves no time to start fetches", g, *phaseLen)
	}
	clk, err := scheduler.NewClock(scheduler.ClockConfig{
		NTP:       scheduler.NTPConfig{Servers: servers, Timeout: *timeout, MaxRTT: *maxRTT, MaxStratum: *maxStratum},
		MaxOffset: *maxOffset,
		Guard:     *guard,
	})
	if err != nil {
		return err
	}
	m, merr := clk.Measure(ctx)
	w := bufio.NewWriter(e.stdout)
	for _, s := range m.Samples {
		if s.Err != nil {
			fmt.Fprintf(w, "server   %s\trejected: %v\n", s.Server, s.Err)
			continue
		}
		fmt.Fprintf(w, "server   %s\toffset %s\trtt %v\tstratum %d\n", s.Server, clockSigned(s.Offset), s.RTT, s.Stratum)
	}
	st := clk.Status()
	if merr == nil {
		fmt.Fprintf(w, "offset   %s (median of %d good of %d)\n", clockSigned(m.Offset), m.Good, len(m.Samples))
	} else {
		fmt.Fprintf(w, "offset   unknown (no good answer)\n")
	}
	p := clk.Phase(cl, *node)
	fmt.Fprintf(w, "slot     %d (%s .. %s)\n", p.Slot, p.Start.UTC().Format(time.RFC3339Nano), p.End.UTC().Format(time.RFC3339Nano))
	fmt.Fprintf(w, "phase    %d of %d (node %d of %d)\n", p.Active, cl.Phases, *node, cl.Nodes)
	fmt.Fprintf(w, "swap in  %v\n", p.Left.Round(time.Millisecond))
	if st.Safe {
		fmt.Fprintf(w, "clock    safe (bound %v)\n", *maxOffset)
	} else {
		fmt.Fprintf(w, "clock    UNSAFE: %s\n", st.Reason)
	}
	verdict := "yes"
	switch {
	case !p.Safe:
		verdict = "no (clock unsafe)"
	case p.InGuard:
		verdict = "no (within the guard interval of a boundary)"
	}
	fmt.Fprintf(w, "guard    %v at each end of a slot; may start fetches: %s\n", p.Guard, verdict)
	if err := w.Flush(); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	if merr != nil {
		return merr
	}
	return nil
}

// clockSigned formats an offset with its sign, "+20ms" or "-3ms".
func clockSigned(d time.Duration) string {
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}
