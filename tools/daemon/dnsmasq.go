package daemon

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Dnsmasq is a dnsmasq (Debian package dnsmasq-base) answering from a hosts
// file on a loopback port.
type Dnsmasq struct {
	Addr   netip.AddrPort // where it answers, UDP and TCP
	cmd    *exec.Cmd
	exited chan struct{}
}

// StartDnsmasq starts dnsmasq on a free loopback port, answering only from
// hostsFile, with TTL 3600 (dnsmasq's default for hosts-file names is 0),
// and authoritatively NXDOMAIN under localDomain if given. It has no upstream
// server, so it forwards nothing anywhere. It returns once dnsmasq has read
// the hosts file, or an error with what dnsmasq said.
func StartDnsmasq(ctx context.Context, hostsFile, localDomain string) (*Dnsmasq, error) {
	bin, ok := Look("dnsmasq")
	if !ok {
		return nil, errors.New("dnsmasq not found (Debian package dnsmasq-base)")
	}
	var lastErr error
	for range 3 {
		port, err := FreeLoopbackPort()
		if err != nil {
			return nil, err
		}
		args := []string{
			"--keep-in-foreground", "--no-resolv", "--no-hosts", "--no-poll",
			"--conf-file=/dev/null", "--addn-hosts=" + hostsFile,
			fmt.Sprintf("--port=%d", port), "--listen-address=127.0.0.1", "--bind-interfaces",
			"--pid-file=", "--log-facility=-", "--local-ttl=3600",
		}
		if os.Geteuid() == 0 {
			args = append(args, "--user=root") // else it drops to nobody, who may not read hostsFile
		}
		if localDomain != "" {
			args = append(args, "--local=/"+localDomain+"/")
		}
		cmd := exec.Command(bin, args...)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("starting dnsmasq: %w", err)
		}
		d := &Dnsmasq{Addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(port)), cmd: cmd, exited: make(chan struct{})}
		ready := make(chan struct{})
		var log strings.Builder // written until ready, read after exited
		go func() {
			sc := bufio.NewScanner(stderr)
			started := false
			for sc.Scan() {
				l := sc.Text()
				if !started {
					log.WriteString(l + "\n")
					if strings.Contains(l, "read "+hostsFile) {
						started = true
						close(ready)
					}
				}
			}
			io.Copy(io.Discard, stderr)
			cmd.Wait()
			close(d.exited)
		}()
		select {
		case <-ready:
			return d, nil
		case <-d.exited:
			// Most likely the port was taken between FreeLoopbackPort and
			// dnsmasq's bind: try another.
			lastErr = fmt.Errorf("dnsmasq exited: %s", strings.TrimSpace(log.String()))
		case <-time.After(2 * time.Minute):
			d.Stop()
			return nil, fmt.Errorf("dnsmasq did not read %s within 2 minutes", hostsFile)
		case <-ctx.Done():
			d.Stop()
			return nil, ctx.Err()
		}
	}
	return nil, lastErr
}

// Stop kills dnsmasq and waits for it to exit.
func (d *Dnsmasq) Stop() {
	d.cmd.Process.Kill()
	<-d.exited
}
