// Package daemon finds and runs the real servers kspider's tests and
// benchmarks talk to on loopback. It is an ordinary package (no testing
// import), so the kspider binary's benchmarks can use it as well as tests;
// tools/testenv adds the skip-or-fail convention for tests on top.
package daemon

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
)

// Look finds a program in PATH or in the sbin directories Debian puts
// daemons in, which a non-root PATH often lacks.
func Look(name string) (string, bool) {
	if p, err := exec.LookPath(name); err == nil {
		return p, true
	}
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/local/sbin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

// FreeLoopbackPort returns a port of 127.0.0.1 that was free for both UDP
// and TCP a moment ago, for daemons that bind their own sockets. Another
// process may take it before the daemon does, so callers retry on failure.
func FreeLoopbackPort() (int, error) {
	for range 20 {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp4", l.Addr().String())
		l.Close()
		if err == nil {
			pc.Close()
			return port, nil
		}
	}
	return 0, errors.New("daemon: no loopback port free for both UDP and TCP")
}
