package status

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// FuzzRefuse: whatever the headers, a control request passes only with
// the exact token, no cross-site mark and no Origin naming another host.
func FuzzRefuse(f *testing.F) {
	const tok = "secret-token-0123456789"
	f.Add("127.0.0.1:7411", "", "Bearer "+tok, "")
	f.Add("127.0.0.1:7411", "http://127.0.0.1:7411", "Bearer "+tok, "same-origin")
	f.Add("127.0.0.1:7411", "https://evil.example", "Bearer "+tok, "cross-site")
	f.Add("127.0.0.1:7411", "null", "Bearer x", "none")
	f.Add("[::1]:7411", "http://[::1]:7411", "bearer "+tok, "same-site")
	s := &Server{Token: tok}
	f.Fuzz(func(t *testing.T, host, origin, auth, site string) {
		r := httptest.NewRequest("POST", "/control/pause", nil)
		r.Host = host
		r.Header.Set("Origin", origin)
		r.Header.Set("Authorization", auth)
		r.Header.Set("Sec-Fetch-Site", site)
		why := s.refuse(r)
		if why != "" {
			return
		}
		// Header values as net/http keeps them (Set does not trim).
		origin, auth, site = r.Header.Get("Origin"), r.Header.Get("Authorization"), r.Header.Get("Sec-Fetch-Site")
		if got, _ := strings.CutPrefix(auth, "Bearer "); strings.TrimSpace(got) != tok {
			t.Fatalf("passed with Authorization %q", auth)
		}
		if site != "" && site != "same-origin" && site != "none" {
			t.Fatalf("passed with Sec-Fetch-Site %q", site)
		}
		if origin != "" {
			u, err := url.Parse(origin)
			if err != nil || !strings.EqualFold(u.Host, host) {
				t.Fatalf("passed with Origin %q on host %q", origin, host)
			}
		}
	})
}
