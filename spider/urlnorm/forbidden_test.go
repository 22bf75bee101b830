package urlnorm

import "testing"

func TestForbiddenSets(t *testing.T) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		wantHost := false
		switch b {
		case 0, '\t', '\n', '\r', ' ', '#', '/', ':', '<', '>', '?', '@', '[', '\\', ']', '^', '|':
			wantHost = true
		}
		wantDomain := wantHost || b < 0x20 || b == '%' || b == 0x7f
		if forbiddenHost(b) != wantHost || forbiddenDomain(b) != wantDomain {
			t.Errorf("%#x: host %v domain %v", b, forbiddenHost(b), forbiddenDomain(b))
		}
	}
}
