package main

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// runPeakRSS runs cmd and returns its peak RSS in MB, read as VmHWM from
// /proc/PID/status every 10 ms while it runs (0 where /proc has none).
//
// Not wait4's ru_maxrss: Linux carries a process's maxrss across exec, and
// Go starts a child with vfork semantics, sharing the parent's memory until
// the exec, so every child's ru_maxrss was at least the bench process's own
// peak (which serves the test web): kspider's and colly's figures came out
// equal. VmHWM is the high-water mark of the child's own address space
// after its exec; a read any time after the peak sees it, so only a peak in
// the last 10 ms of a child's life can be missed, alike for both crawlers.
func runPeakRSS(cmd *exec.Cmd) (float64, error) {
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	done := make(chan struct{})
	peak := make(chan float64, 1)
	go func() {
		path := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status"
		var kb int64
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			kb = max(kb, vmHWM(path))
			select {
			case <-done:
				peak <- float64(kb) / 1024
				return
			case <-t.C:
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	return <-peak, err
}

// vmHWM reads the VmHWM line (kB) of a /proc status file; 0 when it cannot.
func vmHWM(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	i := bytes.Index(b, []byte("VmHWM:"))
	if i < 0 {
		return 0
	}
	f := bytes.Fields(b[i+len("VmHWM:"):])
	if len(f) == 0 {
		return 0
	}
	kb, _ := strconv.ParseInt(string(f[0]), 10, 64)
	return kb
}
