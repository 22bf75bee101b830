package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kspider/kspider/scheduler/ntptest"
)

// fullWriter fails every write, as a file on a full disk does.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestStdoutWriteErrors: resolve, clock and demo wrote their results
// without looking at the write's error, so with stdout on a full disk the
// answers were lost and the exit status was still 0. Each run here
// succeeds but for its output.
func TestStdoutWriteErrors(t *testing.T) {
	ntp := ntptest.NewServer(t, 0)
	for _, args := range [][]string{
		{"resolve", "--server", "127.0.0.1:1", "127.0.0.1", "::1"}, // literals: no query is sent
		{"clock", "--ntp", ntp.Addr},
		{"demo", "--hosts", "3", "--depth", "0", "--plain", "--status", "off"},
	} {
		var errb bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		code := run(ctx, env{stdin: strings.NewReader(""), stdout: fullWriter{}, stderr: &errb}, args)
		cancel()
		if code != 1 || !strings.Contains(errb.String(), "no space left on device") {
			t.Errorf("%s: exit %d, stderr %q", args[0], code, errb.String())
		}
	}
}
