package testweb

import (
	"bufio"
	"reflect"
	"strings"
	"testing"
)

// FuzzReadRequest: any bytes from a client give a request or an error,
// never a panic.
func FuzzReadRequest(f *testing.F) {
	f.Add("GET / HTTP/1.1\r\nHost: a.th\r\n\r\n")
	f.Add("GET http://a.th:80/x?y HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 3\r\n\r\nabc")
	f.Add("\r\n\r\nHEAD /x HTTP/1.1\r\nHost: [::1]:80\r\nUser-Agent: kspider/1.0\r\n\r\n")
	f.Add("GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n")
	f.Add("GET / HTTP/2\r\n\r\n")
	f.Fuzz(func(t *testing.T, in string) {
		br := bufio.NewReaderSize(strings.NewReader(in), 64)
		var req request
		for i := 0; i < 10; i++ {
			if err := readRequest(br, &req); err != nil {
				return
			}
			_ = hostOnly(req.host)
			if req.contentLength < 0 {
				t.Fatalf("negative content length from %q", in)
			}
		}
	})
}

// FuzzRoute: any request target on any kind of host routes without a
// panic, and a page route names a page whose path routes back to it.
func FuzzRoute(f *testing.F) {
	w := Generate(Config{Hosts: 120, Seed: 1, MaxPages: 50})
	var hosts []*Host
	seen := map[string]bool{}
	for _, h := range w.Hosts() {
		k := string(h.Behaviour) + string(h.Robots) + string(rune('0'+h.style))
		if !seen[k] {
			seen[k] = true
			hosts = append(hosts, h)
		}
	}
	for _, h := range hosts {
		f.Add(escapeTarget(pagePath(h, 1)), uint8(h.Index))
	}
	f.Add("/calendar/0000/00/", uint8(0))
	f.Add("/a/loop/loop/x/", uint8(1))
	f.Add("/go/9/1", uint8(2))
	f.Add("/x/view.php?id=1&lang=th&sid=ab", uint8(3))
	f.Add("/%zz", uint8(4))
	f.Fuzz(func(t *testing.T, target string, which uint8) {
		h := hosts[int(which)%len(hosts)]
		rt := routeOf(h, target)
		if rt.kind == routePage {
			back := routeOf(h, escapeTarget(pagePath(h, rt.n)))
			if back.kind != routePage || back.n != rt.n {
				t.Fatalf("%s %q: page %d does not route back (%+v)", h.Name, target, rt.n, back)
			}
		}
		_ = h.robotsAllowed("kspider", target)
	})
}

// FuzzAudit: any log text gives a report or an error, never a panic.
func FuzzAudit(f *testing.F) {
	f.Add(`{"ev":"req","conn":1,"scheme":"http","server":"127.1.0.1:80","client":"127.0.0.2:5","start":1,"end":2,"host":"a.th","target":"/","status":200}` + "\n" +
		`{"ev":"conn","conn":1,"server":"127.1.0.1:80","client":"127.0.0.2:5","start":0,"end":3}` + "\n")
	f.Add("{}\n")
	f.Add(`{"ev":"req","conn":1,"start":-5,"end":9}` + "\n")
	f.Fuzz(func(t *testing.T, in string) {
		rep, err := Audit(strings.NewReader(in), AuditOptions{})
		if err == nil && rep.DuplicateFetches < 0 {
			t.Fatalf("negative duplicates")
		}
		if err != nil {
			return
		}
		// Sorting through files with a tiny buffer reports what sorting in
		// memory does.
		es, err := ReadLog(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := auditChunked(t, []byte(in), AuditOptions{}, 256)
		if !reflect.DeepEqual(got, AuditEntries(es, AuditOptions{})) {
			t.Fatalf("the audit sorted on disk differs from the one in memory")
		}
	})
}
