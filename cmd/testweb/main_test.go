package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func runTest(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"serve", "--help"}, {"audit", "--help"}} {
		code, out, errs := runTest(t, context.Background(), args...)
		if code != 0 || !strings.Contains(out+errs, "usage: testweb") {
			t.Errorf("%v: exit %d, %q %q", args, code, out, errs)
		}
	}
	if code, _, _ := runTest(t, context.Background(), "serve", "--bogus"); code != 2 {
		t.Errorf("bad flag: exit %d, want 2", code)
	}
}

func TestServeUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	code, out, errs := runTest(t, ctx, "--hosts", "50", "--http", "127.0.0.1:0", "--https", "127.0.0.1:0", "--dns", "127.0.0.1:0")
	if code != 0 || !strings.Contains(out, "seeds:") || !strings.Contains(out, "dns   127.0.0.1:") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}
