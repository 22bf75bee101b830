package testweb

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestProtocolCorners(t *testing.T) {
	srv, _ := startTest(t, Config{Hosts: 30, Seed: 4, MaxPages: 50, Plain: true}, ServeConfig{})
	h := srv.Web().SeedHosts()[0]
	port := srv.Ports().HTTP
	hostHdr := h.Name + ":" + strconv.Itoa(port)
	exchange := func(raw string) (*http.Response, []byte, *bufio.Reader, net.Conn) {
		t.Helper()
		c, br := rawConn(t, srv, h)
		io.WriteString(c, raw)
		resp, err := http.ReadResponse(br, &http.Request{Method: strings.Fields(raw)[0]})
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		body, _ := io.ReadAll(resp.Body)
		return resp, body, br, c
	}
	d, _ := srv.Truth().Lookup(origin(h, h.Name, srv.Ports()) + "/")

	resp, body, _, _ := exchange("HEAD / HTTP/1.1\r\nHost: " + hostHdr + "\r\n\r\n")
	if resp.StatusCode != 200 || len(body) != 0 || resp.ContentLength != d.Bytes {
		t.Errorf("HEAD: %d, body %d, length %d (want %d)", resp.StatusCode, len(body), resp.ContentLength, d.Bytes)
	}
	resp, body, br, _ := exchange("GET / HTTP/1.0\r\nHost: " + hostHdr + "\r\n\r\n")
	if resp.StatusCode != 200 || int64(len(body)) != d.Bytes {
		t.Errorf("HTTP/1.0: %d, %d bytes", resp.StatusCode, len(body))
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("HTTP/1.0 without keep-alive: connection left open (%v)", err)
	}
	resp, _, _, _ = exchange("GET http://" + hostHdr + "/ HTTP/1.1\r\nHost: other\r\n\r\n")
	if resp.StatusCode != 200 {
		t.Errorf("absolute-form target: %d", resp.StatusCode)
	}
	resp, _, _, _ = exchange("POST / HTTP/1.1\r\nHost: " + hostHdr + "\r\nContent-Length: 5\r\n\r\nhello")
	if resp.StatusCode != 405 || resp.Header.Get("Allow") == "" {
		t.Errorf("POST: %d", resp.StatusCode)
	}
	resp, _, br, _ = exchange("GARBAGE\r\n\r\n")
	if resp.StatusCode != 400 {
		t.Errorf("garbage: %d", resp.StatusCode)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after 400 the connection stays open (%v)", err)
	}
	long := "GET /" + strings.Repeat("a", 10000) + " HTTP/1.1\r\nHost: " + hostHdr + "\r\n\r\n"
	if resp, _, _, _ := exchange(long); resp.StatusCode != 400 {
		t.Errorf("10 KB request line: %d", resp.StatusCode)
	}
	// A keep-alive connection serves many requests.
	c, br2 := rawConn(t, srv, h)
	for i := 0; i < 20; i++ {
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", escapeTarget(pagePath(h, i%h.Pages)), hostHdr)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(br2, nil)
		if err != nil || resp.StatusCode != 200 || resp.Close {
			t.Fatalf("keep-alive request %d: %v %v", i, resp, err)
		}
		io.Copy(io.Discard, resp.Body)
	}
}
