package testweb

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kspider/kspider/tools/testenv"
	"github.com/miekg/dns"
)

// TestNginxScript starts nginx.sh, resolves one of its host names through
// the dnsmasq it started, fetches a page from nginx at that address, checks
// that unknown names get NXDOMAIN, and stops it.
func TestNginxScript(t *testing.T) {
	nginx := testenv.Binary(t, "nginx", "nginx-light")
	dnsmasq := testenv.Binary(t, "dnsmasq", "dnsmasq-base")
	dir := filepath.Join(t.TempDir(), "web")
	script, _ := filepath.Abs("nginx.sh")
	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "sh", append([]string{script}, args...)...)
		cmd.Env = append(os.Environ(), "NGINX_BIN="+nginx, "DNSMASQ_BIN="+dnsmasq, "HOSTS_PER_DOC=5")
		cmd.WaitDelay = 5 * time.Second // the daemons must not hold our pipes
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("start", dir)
	if err != nil {
		if strings.Contains(out, "none of postgresql-doc-15") {
			t.Skipf("no documentation package installed: %s", out)
		}
		t.Fatalf("start: %v\n%s", err, out)
	}
	pids := readPids(t, dir)
	t.Cleanup(func() {
		if _, err := os.Stat(dir); err == nil {
			run("stop", dir)
		}
	})
	env := map[string]string{}
	data, err := os.ReadFile(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	hosts, err := os.ReadFile(filepath.Join(dir, "hosts"))
	if err != nil {
		t.Fatal(err)
	}
	first := strings.Fields(strings.SplitN(string(hosts), "\n", 2)[0])
	wantIP, name, root := first[0], first[1], first[2]

	c := &dns.Client{Timeout: 2 * time.Second}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	var in *dns.Msg
	for try := 0; try < 20; try++ { // dnsmasq may still be coming up
		if in, _, err = c.Exchange(m, env["DNS_ADDR"]); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || len(in.Answer) != 1 {
		t.Fatalf("resolving %s at %s: %v %v", name, env["DNS_ADDR"], err, in)
	}
	ip := in.Answer[0].(*dns.A).A.String()
	if ip != wantIP {
		t.Fatalf("%s resolved to %s, want %s", name, ip, wantIP)
	}
	m.SetQuestion("www.example.com.", dns.TypeA)
	if in, _, err := c.Exchange(m, env["DNS_ADDR"]); err != nil || in.Rcode != dns.RcodeNameError {
		t.Errorf("unknown name: want NXDOMAIN (no forwarding): %v %v", err, in)
	}

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			_, port, _ := net.SplitHostPort(addr)
			var d net.Dialer
			return d.DialContext(ctx, "tcp4", net.JoinHostPort(ip, port))
		}}}
	resp, err := client.Get("http://" + name + ":" + env["NGINX_PORT"] + "/index.html")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want, _ := os.ReadFile(filepath.Join(root, "index.html"))
	if resp.StatusCode != 200 || string(body) != string(want) {
		t.Errorf("GET index.html: %d, %d bytes (file has %d)", resp.StatusCode, len(body), len(want))
	}

	if out, err := run("stop", dir); err != nil {
		t.Fatalf("stop: %v\n%s", err, out)
	}
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil && !zombie(pid) {
			t.Errorf("pid %d still running after stop", pid)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s not removed", dir)
	}
}

func readPids(t *testing.T, dir string) []int {
	var pids []int
	for _, f := range []string{"nginx.pid", "dnsmasq.pid"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var pid int
		for _, c := range strings.TrimSpace(string(data)) {
			pid = pid*10 + int(c-'0')
		}
		pids = append(pids, pid)
	}
	return pids
}

// zombie reports whether pid has exited but not been reaped (the daemons
// are re-parented to init or a subreaper, which may reap them later).
func zombie(pid int) bool {
	data, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "stat"))
	if err != nil {
		return true
	}
	s := string(data)
	return strings.HasPrefix(s[strings.LastIndexByte(s, ')')+1:], " Z")
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}
