package ntptest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/beevik/ntp"
	"github.com/kspider/kspider/tools/testenv"
)

// StartChrony runs chronyd as an NTP server at stratum 8 on a free loopback
// port, leaving the system clock alone (-x), with all its files in a
// temporary directory, and returns "127.0.0.1:port" once it answers. It is
// killed when the test ends.
func StartChrony(t testing.TB) string {
	t.Helper()
	bin := testenv.Binary(t, "chronyd", "chrony")
	dir := t.TempDir()
	var lastErr error
	for range 3 {
		port := freeUDPPort(t)
		conf := filepath.Join(dir, "chrony.conf")
		cfg := fmt.Sprintf(`port %d
bindaddress 127.0.0.1
allow 127.0.0.0/8
local stratum 8
cmdport 0
pidfile %[2]s/chronyd.pid
driftfile %[2]s/drift
dumpdir %[2]s
`, port, dir)
		if err := os.WriteFile(conf, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		// -u root: as root chronyd would otherwise switch to the _chrony
		// user, which cannot read the test's temporary directory.
		args := []string{"-x", "-d", "-f", conf}
		if os.Geteuid() == 0 {
			args = append(args, "-u", "root")
		}
		cmd := exec.Command(bin, args...)
		var log strings.Builder
		stderr, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting chronyd: %v", err)
		}
		exited := make(chan struct{})
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				log.WriteString(sc.Text() + "\n")
			}
			cmd.Wait()
			close(exited)
		}()
		stop := func() {
			cmd.Process.Kill()
			<-exited
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		deadline := time.Now().Add(10 * time.Second)
	wait:
		for time.Now().Before(deadline) {
			select {
			case <-exited:
				lastErr = fmt.Errorf("chronyd exited")
				break wait
			default:
			}
			var r *ntp.Response
			r, lastErr = ntp.QueryWithOptions(addr, ntp.QueryOptions{Timeout: 200 * time.Millisecond})
			if lastErr == nil {
				if lastErr = r.Validate(); lastErr == nil {
					t.Cleanup(stop)
					return addr
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		stop()
		lastErr = fmt.Errorf("%v; log:\n%s", lastErr, log.String())
	}
	t.Fatalf("chronyd did not serve time: %v", lastErr)
	return ""
}

func freeUDPPort(t testing.TB) int {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	return pc.LocalAddr().(*net.UDPAddr).Port
}
