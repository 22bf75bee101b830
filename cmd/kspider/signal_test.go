package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

const signalChildEnv = "KSPIDER_SIGNAL_CHILD"

// TestSignalChild stands for a command whose orderly stop is slow: it
// waits for the first signal, says so, and then takes a minute.
func TestSignalChild(t *testing.T) {
	if os.Getenv(signalChildEnv) == "" {
		t.Skip("only run as TestSecondSignalQuits's child process")
	}
	ctx, stop := signalContext(os.Stderr)
	defer stop()
	fmt.Fprintln(os.Stderr, "ready")
	<-ctx.Done()
	time.Sleep(time.Minute)
	os.Exit(1)
}

// The first SIGINT asks for an orderly stop and says a second one quits at
// once; the second ends the process by the signal's default action.
func TestSecondSignalQuits(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestSignalChild$", "-test.v=false")
	cmd.Env = append(os.Environ(), signalChildEnv+"=1")
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	waitLine := func(want string) {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the child ended before printing %q", want)
				}
				if strings.Contains(l, want) {
					return
				}
			case <-timeout:
				t.Fatalf("no %q from the child within 30 s", want)
			}
		}
	}
	waitLine("ready")
	cmd.Process.Signal(syscall.SIGINT)
	waitLine("interrupt: stopping in order; a second one quits at once")
	cmd.Process.Signal(syscall.SIGINT)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGINT {
			t.Errorf("after the second SIGINT: %v, want death by SIGINT", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the second SIGINT did not end the child within 30 s")
	}
}
