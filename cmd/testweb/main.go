// Command testweb serves kspider's test web on loopback (see package
// tools/testweb) and audits its request logs.
//
//	testweb [serve] --hosts 2000 --seed 1 --http 127.0.0.1:18080 --dns 127.0.0.1:15353 --log requests.log
//	testweb audit --log requests.log [--json]
//
// Exit status: 0 on success, 1 when the command failed, 2 on a usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const topUsage = `usage: testweb [serve] [flags]     serve the test web until SIGINT/SIGTERM
       testweb audit --log FILE [--json]   report on a request log

Run "testweb serve --help" or "testweb audit --help" for the flags.
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd, rest := "serve", args
	if len(args) > 0 {
		switch args[0] {
		case "serve", "audit":
			cmd, rest = args[0], args[1:]
		case "help", "-h", "-help", "--help":
			fmt.Fprint(stdout, topUsage)
			return 0
		}
	}
	var err error
	switch cmd {
	case "serve":
		err = runServe(ctx, rest, stdout, stderr)
	case "audit":
		err = runAudit(rest, stdout, stderr)
	}
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "testweb %s: %v\n", cmd, err)
		return 2
	default:
		fmt.Fprintf(stderr, "testweb %s: %v\n", cmd, err)
		return 1
	}
}

// newFlags makes a flag set whose --help prints usage and description.
func newFlags(stderr io.Writer, name, usage, description string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: testweb %s\n\n%s\n\nflags:\n", usage, description)
		fs.PrintDefaults()
	}
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}
