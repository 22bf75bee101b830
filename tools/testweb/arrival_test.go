package testweb

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"testing"
	"time"
)

// TestArrivalStamp: a request's start is when its head reached the
// server's socket, not when the server got to read it: read 300 ms after
// the client sent (a loaded web's goroutine running late), the start was
// stamped then, and the audits took the request for one sent 300 ms later.
func TestArrivalStamp(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the kernel's receive stamps are read on Linux only")
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sl := stampArrivals(ln)
	defer sl.Close()
	// The kernel turns stamping on a moment after the listener asks (as
	// Start does long before a client comes).
	time.Sleep(100 * time.Millisecond)
	client, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := sl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sent := nanos(time.Now())
	if _, err := client.Write([]byte("GET / HTTP/1.1\r\nHost: a.test\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	written := nanos(time.Now())
	time.Sleep(300 * time.Millisecond)
	readAt := nanos(time.Now())
	var req request
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if err := readRequest(bufio.NewReader(c), &req); err != nil {
		t.Fatal(err)
	}
	start := requestStart(arrivalOf(c), 0)
	if start < sent || start >= readAt {
		t.Errorf("request sent at +0 (written by +%v), read at +%v, stamped at +%v: want its arrival, before the read",
			time.Duration(written-sent), time.Duration(readAt-sent), time.Duration(start-sent))
	}
	client.Close()
	if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("a read after the client closed: %d bytes, %v; want io.EOF", n, err)
	}
}

// TestPipelinedNotInFlightTogether: requests pipelined in one write
// arrive together, but the server answers them one at a time, and the log
// says so: each starts where the one before it ended, and the audit sees
// one request in flight at a time.
func TestPipelinedNotInFlightTogether(t *testing.T) {
	srv, logBuf := startTest(t, Config{Hosts: 30, Seed: 4, MaxPages: 50}, ServeConfig{})
	h := srv.Web().SeedHosts()[0]
	c, err := net.Dial("tcp4", netip.AddrPortFrom(h.Addr, uint16(srv.Ports().HTTP)).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var req bytes.Buffer
	paths := []string{"/", pagePath(h, 1), "/robots.txt"}
	for _, p := range paths {
		fmt.Fprintf(&req, "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: pipeliner\r\n\r\n", escapeTarget(p), h.Name, srv.Ports().HTTP)
	}
	if _, err := c.Write(req.Bytes()); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	for i := range paths {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i+1, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	c.Close()
	srv.Close()
	entries, err := ReadLog(bytes.NewReader(logBuf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var reqs []Entry
	for _, e := range entries {
		if e.Kind == "req" {
			reqs = append(reqs, e)
		}
	}
	if len(reqs) != len(paths) {
		t.Fatalf("%d requests logged, want %d", len(reqs), len(paths))
	}
	for i := 1; i < len(reqs); i++ {
		if reqs[i].Start < reqs[i-1].End {
			t.Errorf("request %d starts %v before request %d ends", i+1, time.Duration(reqs[i-1].End-reqs[i].Start), i)
		}
	}
	if rep := AuditEntries(entries, AuditOptions{}); rep.MaxInFlightPerHost != 1 {
		t.Errorf("audit: %d requests in flight at once on one connection answered in turn", rep.MaxInFlightPerHost)
	}
}

// TestConnEndIsFinArrival: a connection the client closed ended when its
// FIN arrived, not when the server got to read it: read 300 ms after the
// client closed (a loaded web's goroutine running late), its end was
// stamped then, and the cluster tests' audit saw the next node's
// connection to the host open while this one still was.
func TestConnEndIsFinArrival(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the kernel's times are read on Linux only")
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sl := stampArrivals(ln)
	defer sl.Close()
	client, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := sl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	closedAt := nanos(time.Now())
	client.Close()
	time.Sleep(300 * time.Millisecond)
	readAt := nanos(time.Now())
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("a read after the client closed: %d bytes, %v; want io.EOF", n, err)
	}
	// The kernel keeps the time to a jiffy (up to 10 ms), and the stamp
	// is moved earlier by kernelStampSlack besides.
	end := connEnd(c, 0)
	if end < closedAt-int64(kernelStampSlack+10*time.Millisecond) || end > closedAt+int64(100*time.Millisecond) {
		t.Errorf("client closed at +0, the server read the end at +%v, the connection's end stamped at +%v: want when the FIN came",
			time.Duration(readAt-closedAt), time.Duration(end-closedAt))
	}
	if lastEnd := closedAt + int64(50*time.Millisecond); connEnd(c, lastEnd) != lastEnd {
		t.Errorf("connection's end stamped before its last response's end")
	}
}

// TestConnClosedAtOnceEndsAfterItOpened: a client that connects and
// closes at once, its connection's goroutine running late, sent its FIN
// before the server stamped the open: the end, the FIN's time, came before
// the start, and the log's reader refused the whole log ("ends before it
// starts"; kspider demo exited 1 after Ctrl-C with no summary).
func TestConnClosedAtOnceEndsAfterItOpened(t *testing.T) {
	srv, logBuf := startTest(t, Config{Hosts: 30, Seed: 4, MaxPages: 50}, ServeConfig{})
	h := srv.Web().SeedHosts()[0]
	addr := netip.AddrPortFrom(h.Addr, uint16(srv.Ports().HTTP)).String()
	for range 200 {
		c, err := net.Dial("tcp4", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	srv.Close()
	if _, err := ReadLog(bytes.NewReader(logBuf.Bytes())); err != nil {
		t.Fatal(err)
	}
}

// TestConnOpenIsEstablishment: a connection opened when the client's
// handshake made it, not when the server's goroutine got to run: served
// 300 ms after the client connected (a loaded web's goroutine running
// late), it was logged as opened then, and one the client closed at once
// (no request to start earlier) as opened and ended in another client's
// turn. Nor does a connection open after its first request started.
func TestConnOpenIsEstablishment(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the kernel's times are read on Linux only")
	}
	for _, request := range []bool{false, true} {
		t.Run(fmt.Sprintf("request=%v", request), func(t *testing.T) { connOpenIsEstablishment(t, request) })
	}
}

func connOpenIsEstablishment(t *testing.T, request bool) {
	srv, logBuf := startTest(t, Config{Hosts: 30, Seed: 4, MaxPages: 50}, ServeConfig{})
	h := srv.Web().SeedHosts()[0]
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sl := stampArrivals(ln)
	defer sl.Close()
	time.Sleep(100 * time.Millisecond) // stamping on, as Start has it long before a client comes
	dialed := nanos(time.Now())
	client, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	connected := nanos(time.Now())
	if request {
		fmt.Fprintf(client, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", h.Name)
	} else {
		client.Close()
	}
	time.Sleep(300 * time.Millisecond)
	c, err := sl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	served := nanos(time.Now())
	// As Server.accept hands a connection to its goroutine.
	srv.mu.Lock()
	srv.conns[c] = struct{}{}
	srv.active.Add(1)
	srv.wg.Add(1)
	srv.mu.Unlock()
	go srv.serveConn(c, "http", 1<<40)
	if request {
		client.SetReadDeadline(time.Now().Add(10 * time.Second))
		io.Copy(io.Discard, client)
	}
	srv.Close()
	entries, err := ReadLog(bytes.NewReader(logBuf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var conn, req *Entry
	for i := range entries {
		if e := &entries[i]; e.Conn == 1<<40 {
			if e.Kind == "conn" {
				conn = e
			} else {
				req = e
			}
		}
	}
	if conn == nil || request != (req != nil) {
		t.Fatalf("the connection or its request is not in the log as sent: %v, %v", conn, req)
	}
	// The kernel keeps the time to a jiffy (up to 10 ms).
	if conn.Start < dialed-int64(10*time.Millisecond) || conn.Start > connected+int64(100*time.Millisecond) {
		t.Errorf("connected at +0 (dial returned at +%v), served at +%v, the connection's open stamped at +%v: want when the handshake made it",
			time.Duration(connected-dialed), time.Duration(served-dialed), time.Duration(conn.Start-dialed))
	}
	if req != nil && conn.Start > req.Start {
		t.Errorf("the connection opened %v after its first request started", time.Duration(conn.Start-req.Start))
	}
}

// TestConnOpenNeverBeforeDial: a connection's open, from TCP_INFO in
// jiffies, was stamped up to a jiffy before the handshake, so two
// clients' connections to one address, one closed just before the other
// opened, were logged open together (TestNodePerIPLimit: "open together
// for 3.04 ms"). Now the open is never before the client began its
// connect; across accepts made a few milliseconds after the handshake,
// some straddle a jiffy.
func TestConnOpenNeverBeforeDial(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sl := stampArrivals(ln)
	defer sl.Close()
	for i := range 40 {
		before := nanos(time.Now())
		cc, err := net.Dial("tcp4", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(1+i%5) * time.Millisecond)
		sc, err := sl.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if opened := connOpened(sc); opened < before {
			t.Errorf("connection %d logged open %v before its client began to connect", i, time.Duration(before-opened))
		}
		cc.Close()
		sc.Close()
	}
}
