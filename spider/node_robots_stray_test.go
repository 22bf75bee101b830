package spider

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestNodeRobotsRedirectStrayPercent: a robots.txt redirect to "/home%"
// (a '%' starting no escape) failed net/url's parse and was taken for no
// robots.txt: the node crawled everything. Its hop now asks for the path
// as written, through the collector. The server reads request lines
// itself: net/http refuses such a target.
func TestNodeRobotsRedirectStrayPercent(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				br := bufio.NewReader(c)
				line, err := br.ReadString('\n')
				if err != nil {
					return
				}
				for {
					h, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if h == "\r\n" || h == "\n" {
						break
					}
				}
				f := strings.Fields(line)
				if len(f) != 3 {
					return
				}
				target := f[1]
				if i := strings.Index(target, "://"); i >= 0 {
					target = target[i+3:]
					target = target[strings.IndexByte(target, '/'):]
				}
				mu.Lock()
				seen = append(seen, target)
				mu.Unlock()
				resp := "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
				switch target {
				case "/robots.txt":
					resp = "HTTP/1.1 301 Moved\r\nLocation: /home%\r\nContent-Length: 0\r\n"
				case "/home%":
					b := "User-agent: *\nDisallow: /private/\n"
					resp = fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(b), b)
					io.WriteString(c, resp)
					return
				}
				io.WriteString(c, resp+"Connection: close\r\n\r\n")
			}()
		}
	}()
	n := robotsTestNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	port := ln.Addr().(*net.TCPAddr).Port
	v := n.robotsVerdictFor(ctx, fmt.Sprintf("http://site.test:%d/", port))
	mu.Lock()
	defer mu.Unlock()
	if !v.ok || v.rules.AllowedURL(fmt.Sprintf("http://site.test:%d/private/x", port)) {
		t.Errorf("ok %v: the rules at the redirect's path as written not applied; the server saw %q", v.ok, seen)
	}
}
