// Command kspider is the one kspider binary: every node runs it, and so do the
// operator's tools. Each subcommand lives in its own file; this file only
// dispatches.
//
// Exit status: 0 on success, 1 when the command failed, 2 on a usage error,
// 3 when a cluster's crawl is over but short of the web (lostDataError).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// env is what a subcommand may touch of the outside world, so tests can run
// subcommands in-process with their own streams.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// command is one subcommand. run receives the arguments after the
// subcommand's name; it returns flag.ErrHelp after printing help, a usageError
// for bad arguments, or any other error for a failure.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e env, args []string) error
}

// commands lists the subcommands, in the order `kspider help` shows them.
func commands() []command {
	return []command{
		{"demo", "crawl a local test web on loopback to the end and print a summary", runDemo},
		{"run", "crawl as one node from a config file (kspider init writes one); resumable", runRun},
		{"ctl", "steer a running node: pause, resume, drain, set delay|fetchers", runCtl},
		{"init", "print an annotated sample config for 'kspider run', or check one (--check)", runInit},
		{"links", "print the links of an HTML page, resolved and normalised", runLinks},
		{"normalize", "print the canonical (or WHATWG) form of URLs", runNormalize},
		{"robots", "check URLs against a robots.txt file", runRobots},
		{"resolve", "resolve host names with kspider's own DNS resolver", runResolve},
		{"clock", "show the NTP offset, time slot and active phase", runClock},
		{"get", "print one stored page", runGet},
		{"stats", "report statistics over stored pages (offline)", runStats},
		{"export", "export stored pages (warc)", runExport},
		{"fetch", "fetch URLs through the collector (one connection per host, optional pipelining)", runFetch},
		{"check", "verify a data directory's files; --repair rebuilds what it can", runCheck},
		{"bench", "run a benchmark (crawl, cluster, urltree, storage, resolver, scheduler, collector, communicator)", runBench},
		{"help", "list the subcommands, or show one's help", nil},
	}
}

// usageError marks an error in how the command was called (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{msg: fmt.Sprintf(format, args...)} }

// lostDataError is the end of a crawl that is over but lost data for
// good (exit status 3): starting it again recovers nothing, so a service
// manager must not (deploy/kspider.service: RestartPreventExitStatus).
type lostDataError struct{ msg string }

func (e lostDataError) Error() string { return e.msg }

// subcommandError names the subcommand an error came from when it is not
// the top-level one (`kspider bench storage: ...`), so the message and its
// `--help` hint point at the right place.
type subcommandError struct {
	name string // e.g. "bench storage"
	err  error
}

func (e subcommandError) Error() string { return e.err.Error() }
func (e subcommandError) Unwrap() error { return e.err }

// errNotImplemented is returned by subcommands whose issue has not landed yet.
var errNotImplemented = errors.New("not implemented yet")

// newFlags returns a flag set for subcommand name whose -h/--help prints the
// given usage line and description followed by the flags.
func newFlags(e env, name, usage, description string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "usage: kspider %s\n\n", usage)
		if description != "" {
			fmt.Fprintf(out, "%s\n\n", strings.TrimSpace(description))
		}
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintln(out, "flags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseFlags parses args, mapping flag errors to usage errors. -h and --help
// print help to stdout and return flag.ErrHelp.
func parseFlags(e env, fs *flag.FlagSet, args []string) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" {
			fs.SetOutput(e.stdout)
			fs.Usage()
			return flag.ErrHelp
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	return checkGivenFlags(fs, args[:len(args)-fs.NArg()])
}

// checkGivenFlags refuses what flag.Parse takes silently: a flag that
// holds one value given twice, differently (run --config a --config b ran
// with b), and
// one given empty whose default is empty (--dir "$DIR" with DIR unset, or
// init --check= printing the sample and exiting 0), which reads as a flag
// not given. flags is the parsed part of the arguments.
func checkGivenFlags(fs *flag.FlagSet, flags []string) error {
	given := map[string][]string{}
	var order []string
	for i := 0; i < len(flags); i++ {
		a := flags[i]
		if a == "--" || !strings.HasPrefix(a, "-") {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			if !hasValue {
				value = "true"
			}
		} else if !hasValue && i+1 < len(flags) {
			i++
			value = flags[i]
		}
		if given[name] == nil {
			order = append(order, name)
		}
		given[name] = append(given[name], value)
	}
	for _, name := range order {
		values := given[name]
		f := fs.Lookup(name)
		switch f.Value.(type) {
		case *dataDirsFlag, *headerFlags, *serverList: // repeatable
			continue
		}
		dash := "--"
		if len(name) == 1 {
			dash = "-"
		}
		if slices.ContainsFunc(values, func(v string) bool { return v != values[0] }) {
			return usagef("%s%s is given %d times, with different values (%s): give it once", dash, name, len(values), quoteList(values))
		}
		if values[0] == "" && f.DefValue == "" {
			return usagef("%s%s is given empty (a variable unset?): give a value, or leave the flag out", dash, name)
		}
	}
	return nil
}

// quoteList quotes each of values, comma-separated.
func quoteList(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, ", ")
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "kspider: a cluster web crawler (one binary on every node)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "usage: kspider <command> [arguments]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	cmds := commands()
	width := 0
	for _, c := range cmds {
		width = max(width, len(c.name))
	}
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'kspider <command> --help' for a command's arguments.")
}

func lookup(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func commandNames() []string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	sort.Strings(names)
	return names
}

// run executes kspider with args (without the program name) and returns the
// exit status.
func run(ctx context.Context, e env, args []string) int {
	if len(args) == 0 {
		printHelp(e.stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		printHelp(e.stdout)
		return 0
	case "help":
		if len(args) == 1 || args[1] == "help" {
			printHelp(e.stdout)
			return 0
		}
		// "help export warc" is "export warc --help".
		name, args = args[1], append(args[1:len(args):len(args)], "--help")
	}
	c, ok := lookup(name)
	if !ok || c.run == nil {
		fmt.Fprintf(e.stderr, "kspider: unknown command %q (commands: %s)\n", name, strings.Join(commandNames(), ", "))
		return 2
	}
	err := c.run(ctx, e, args[1:])
	var se subcommandError
	if errors.As(err, &se) {
		name = se.name
	}
	var ue usageError
	var le lostDataError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(e.stderr, "kspider %s: %s (see 'kspider %s --help')\n", name, ue.msg, name)
		return 2
	case errors.As(err, &le):
		fmt.Fprintf(e.stderr, "kspider %s: %v\n", name, err)
		return 3
	default:
		fmt.Fprintf(e.stderr, "kspider %s: %v\n", name, err)
		return 1
	}
}

func main() {
	ctx, stop := signalContext(os.Stderr)
	code := run(ctx, env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}

// signalContext is cancelled by the first SIGINT or SIGTERM, which asks
// for an orderly stop (a crawl stores what it fetched and syncs). The
// second gets the signal's default action and ends the process at once:
// every kspider file survives kill -9, so an operator whose stop is slow
// (a sync on a failing disk) need not look for the pid.
func signalContext(stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sig:
			signal.Reset(os.Interrupt, syscall.SIGTERM)
			fmt.Fprintf(stderr, "kspider: %v: stopping in order; a second one quits at once (what is stored stays stored)\n", s)
			cancel()
		case <-done:
		}
	}()
	return ctx, func() {
		close(done)
		signal.Stop(sig)
		cancel()
	}
}
