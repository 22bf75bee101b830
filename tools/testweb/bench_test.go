package testweb

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The serving benchmark runs the server in a child process (this test
// binary, re-executed) with GOMAXPROCS=1, pinned to one CPU with taskset
// when available, and drives it from this process with keep-alive
// connections. The baseline is net/http serving one constant 15 KB body
// under the same conditions.

const benchChildEnv = "TESTWEB_BENCH_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(benchChildEnv); mode != "" {
		benchChild(mode)
		return
	}
	os.Exit(m.Run())
}

func benchWeb() *Web { return Generate(Config{Hosts: 200, Seed: 1, MaxPages: 2000, Plain: true}) }

// benchChild serves until stdin closes. It prints "READY port".
func benchChild(mode string) {
	var port int
	var closeFn func()
	switch mode {
	case "baseline":
		body := bytes.Repeat([]byte("x"), 15000)
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			panic(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Length", "15000")
			w.Write(body)
		})}
		go srv.Serve(ln)
		port = ln.Addr().(*net.TCPAddr).Port
		closeFn = func() { srv.Close() }
	default:
		var logw io.Writer
		if mode == "testweb-log" {
			f, err := os.CreateTemp("", "testweb-bench-*.log")
			if err != nil {
				panic(err)
			}
			defer os.Remove(f.Name())
			defer f.Close()
			logw = f
		}
		srv, err := Start(context.Background(), benchWeb(), ServeConfig{HTTPAddr: "127.0.0.1:0", AnyAddr: true, Log: logw})
		if err != nil {
			panic(err)
		}
		port = srv.Ports().HTTP
		closeFn = func() { srv.Close() }
	}
	fmt.Printf("READY %d\n", port)
	io.Copy(io.Discard, os.Stdin)
	closeFn()
}

type benchChildProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	port  int
}

func startBenchChild(b *testing.B, mode string) *benchChildProc {
	args := []string{os.Args[0], "-test.run=^$"}
	name := args[0]
	if p, err := exec.LookPath("taskset"); err == nil {
		name, args = p, append([]string{"-c", strconv.Itoa(runtime.NumCPU() - 1)}, args...)
	} else {
		args = args[1:]
	}
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), benchChildEnv+"="+mode, "GOMAXPROCS=1")
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "READY ") {
		cmd.Process.Kill()
		b.Fatalf("bench child: %q %v", line, err)
	}
	port, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "READY ")))
	c := &benchChildProc{cmd: cmd, stdin: stdin, port: port}
	b.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return c
}

// cpuTime is the child's user+system CPU time so far (Linux /proc).
func (c *benchChildProc) cpuTime() time.Duration {
	pid := c.cmd.Process.Pid
	// taskset execs the program, so the pid is the server's.
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ is 100 on Linux
}

// drive sends b.N keep-alive GETs over conns connections and reads the
// responses with a minimal HTTP reader (so the client costs little).
func drive(b *testing.B, dial func(i int) (net.Conn, string, []string), conns, depth int) (bytesRead int64) {
	var next atomic.Int64
	var total atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < conns; i++ {
		c, host, targets := dial(i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			br := bufio.NewReaderSize(c, 64<<10)
			req := []byte{}
			for k := 0; ; {
				// Up to depth requests at once (pipelined when depth > 1).
				req = req[:0]
				sent := 0
				for ; sent < depth && next.Add(1) <= int64(b.N); sent++ {
					req = append(req, "GET "...)
					req = append(req, targets[k%len(targets)]...)
					req = append(req, " HTTP/1.1\r\nHost: "...)
					req = append(req, host...)
					req = append(req, "\r\nUser-Agent: bench\r\n\r\n"...)
					k++
				}
				if sent == 0 {
					return
				}
				if _, err := c.Write(req); err != nil {
					b.Error(err)
					return
				}
				for ; sent > 0; sent-- {
					n, err := readResponse(br)
					if err != nil {
						b.Error(err)
						return
					}
					total.Add(n)
				}
			}
		}()
	}
	wg.Wait()
	return total.Load()
}

// readResponse reads one response with a Content-Length and returns the
// body size.
func readResponse(br *bufio.Reader) (int64, error) {
	length := int64(-1)
	for first := true; ; first = false {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if first {
			if !bytes.HasPrefix(line, []byte("HTTP/1.1 200")) {
				return 0, fmt.Errorf("status line %q", line)
			}
			continue
		}
		if len(line) <= 2 {
			break
		}
		if k, v, ok := bytes.Cut(line, []byte(":")); ok && asciiEqualFold(k, "content-length") {
			length, _ = strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		}
	}
	if length < 0 {
		return 0, fmt.Errorf("no Content-Length")
	}
	_, err := br.Discard(int(length))
	return length, err
}

func benchServe(b *testing.B, mode string, depth int) {
	child := startBenchChild(b, mode)
	w := benchWeb()
	var hosts []*Host
	for _, h := range w.Hosts() {
		if h.Pages >= 50 && h.Robots != RobotsServerErr {
			hosts = append(hosts, h)
		}
	}
	const conns = 8
	dial := func(i int) (net.Conn, string, []string) {
		h := hosts[i%len(hosts)]
		addr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(child.port)).String()
		if mode != "baseline" {
			addr = netip.AddrPortFrom(h.Addr, uint16(child.port)).String()
		}
		c, err := net.Dial("tcp4", addr)
		if err != nil {
			b.Fatal(err)
		}
		var targets []string
		for k := 1; k < 50; k++ {
			targets = append(targets, escapeTarget(pagePath(h, k)))
		}
		return c, h.Name, targets
	}
	cpu0 := child.cpuTime()
	b.ResetTimer()
	start := time.Now()
	n := drive(b, dial, conns, depth)
	elapsed := time.Since(start)
	b.StopTimer()
	cpu := child.cpuTime() - cpu0
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "pages/s")
	b.ReportMetric(float64(n)/float64(b.N), "bytes/page")
	b.ReportMetric(cpu.Seconds()/elapsed.Seconds(), "server-cores")
	if cpu > 0 {
		// Pages per second of server CPU: what one core would serve if the
		// server, not the client or the neighbours, were the limit.
		b.ReportMetric(float64(b.N)/cpu.Seconds(), "pages/cpu-s")
	}
	b.SetBytes(n / int64(b.N))
}

// BenchmarkServe: the test web serving HTML pages (mean ~15 KB) to 8
// keep-alive connections, server on one core, no request log.
func BenchmarkServe(b *testing.B) { benchServe(b, "testweb", 1) }

// BenchmarkServePipelined pipelines 8 requests per connection, so the
// client spends fewer system calls per page and the server is the limit.
func BenchmarkServePipelined(b *testing.B) { benchServe(b, "testweb", 8) }

// BenchmarkServeLogged is BenchmarkServe with the request log on.
func BenchmarkServeLogged(b *testing.B) { benchServe(b, "testweb-log", 1) }

// BenchmarkServeBaseline: net/http serving a constant 15 KB body the same way.
func BenchmarkServeBaseline(b *testing.B) { benchServe(b, "baseline", 1) }

// BenchmarkServeBaselinePipelined is the baseline with 8 pipelined requests.
func BenchmarkServeBaselinePipelined(b *testing.B) { benchServe(b, "baseline", 8) }

// BenchmarkRender is the page generator alone: one page per op.
func BenchmarkRender(b *testing.B) {
	w := benchWeb()
	h := w.SeedHosts()[0]
	var dst, scratch []byte
	var total int64
	b.ReportAllocs()
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		p := w.pageOf(h, h.Name, route{kind: routePage, n: 1 + i%(h.Pages-1)})
		dst = w.render(dst[:0], p, testPorts, &scratch)
		total += int64(len(dst))
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	b.SetBytes(total / int64(b.N))
}

// processCPU is this process's user+system CPU time: on a shared, loaded
// machine it measures work where wall time measures the neighbours too.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
