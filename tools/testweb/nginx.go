package testweb

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// nginxScript is nginx.sh, embedded so that tests and benchmarks anywhere
// in the tree (and the kspider binary) can run it.
//
//go:embed nginx.sh
var nginxScript []byte

// ErrNoDocs means none of the documentation packages nginx.sh serves is
// installed.
var ErrNoDocs = errors.New("testweb: no documentation package installed (apt-get install postgresql-doc-15)")

// NginxOptions configures StartNginx; zero values mean nginx.sh's defaults.
type NginxOptions struct {
	NginxBin, DnsmasqBin string // default /usr/sbin/nginx, /usr/sbin/dnsmasq
	HostsPerDoc          int    // host names per documentation package (default 10)
	KeepaliveRequests    int    // nginx's keepalive_requests (default 1000000)
}

// NginxHost is one host name nginx.sh serves.
type NginxHost struct {
	IP   netip.Addr
	Name string
	Root string // the document root: the package's HTML directory
}

// Nginx is a running nginx.sh: nginx serving documentation HTML under many
// names on 127.3.x.y, and dnsmasq answering for those names.
type Nginx struct {
	Dir     string // nginx.sh's directory (config, logs, pids)
	Port    int    // the HTTP port of every host address
	DNSAddr string // dnsmasq's ip:port
	Hosts   []NginxHost
	tmp     string
	env     []string
}

// StartNginx runs nginx.sh start in a new temporary directory.
func StartNginx(ctx context.Context, opt NginxOptions) (*Nginx, error) {
	tmp, err := os.MkdirTemp("", "kspider-nginx-")
	if err != nil {
		return nil, err
	}
	n := &Nginx{tmp: tmp, Dir: filepath.Join(tmp, "web"), env: os.Environ()}
	add := func(k, v string) {
		if v != "" && v != "0" {
			n.env = append(n.env, k+"="+v)
		}
	}
	add("NGINX_BIN", opt.NginxBin)
	add("DNSMASQ_BIN", opt.DnsmasqBin)
	add("HOSTS_PER_DOC", strconv.Itoa(opt.HostsPerDoc))
	add("KEEPALIVE_REQUESTS", strconv.Itoa(opt.KeepaliveRequests))
	script := filepath.Join(tmp, "nginx.sh")
	if err := os.WriteFile(script, nginxScript, 0o755); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	out, err := n.run(ctx, "start", n.Dir)
	if err != nil {
		os.RemoveAll(tmp)
		if strings.Contains(out, "none of postgresql-doc-15") {
			return nil, ErrNoDocs
		}
		return nil, fmt.Errorf("testweb: nginx.sh start: %v\n%s", err, out)
	}
	if err := n.load(); err != nil {
		n.Stop()
		return nil, err
	}
	return n, nil
}

func (n *Nginx) run(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", append([]string{filepath.Join(n.tmp, "nginx.sh")}, args...)...)
	cmd.Env = n.env
	cmd.WaitDelay = 5 * time.Second // the daemons must not hold our pipes
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// load reads the env and hosts files nginx.sh wrote.
func (n *Nginx) load() error {
	env, err := os.ReadFile(filepath.Join(n.Dir, "env"))
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(env), "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "NGINX_PORT":
			n.Port, err = strconv.Atoi(v)
		case "DNS_ADDR":
			n.DNSAddr = v
		}
		if err != nil {
			return fmt.Errorf("testweb: nginx.sh env: %q: %v", line, err)
		}
	}
	hosts, err := os.ReadFile(filepath.Join(n.Dir, "hosts"))
	if err != nil {
		return err
	}
	for _, line := range bytes.Split(bytes.TrimSpace(hosts), []byte("\n")) {
		f := strings.Fields(string(line))
		if len(f) != 3 {
			return fmt.Errorf("testweb: nginx.sh hosts: bad line %q", line)
		}
		ip, err := netip.ParseAddr(f[0])
		if err != nil {
			return fmt.Errorf("testweb: nginx.sh hosts: %v", err)
		}
		n.Hosts = append(n.Hosts, NginxHost{IP: ip, Name: f[1], Root: f[2]})
	}
	if n.Port == 0 || n.DNSAddr == "" || len(n.Hosts) == 0 {
		return errors.New("testweb: nginx.sh wrote no port, DNS address or hosts")
	}
	return nil
}

// Stop stops nginx and dnsmasq and removes the directory.
func (n *Nginx) Stop() error {
	var err error
	if _, serr := os.Stat(n.Dir); serr == nil {
		var out string
		if out, err = n.run(context.Background(), "stop", n.Dir); err != nil {
			err = fmt.Errorf("testweb: nginx.sh stop: %v\n%s", err, out)
		}
	}
	os.RemoveAll(n.tmp)
	return err
}
