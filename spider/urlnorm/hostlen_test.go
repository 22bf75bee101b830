package urlnorm

import (
	"strings"
	"testing"
)

// TestHostLimits: hosts within the DNS limits parse, longer ones fail
// before the IDNA conversion, ASCII or not.
func TestHostLimits(t *testing.T) {
	l63, l64 := strings.Repeat("a", 63), strings.Repeat("a", 64)
	host253 := strings.Repeat(l63+".", 3) + strings.Repeat("b", 61) // 4*63+1... = 253
	for _, c := range []struct {
		host string
		ok   bool
	}{
		{l63 + ".com", true},
		{l64 + ".com", false},
		{host253, true},
		{host253 + ".", true}, // the root's dot does not count
		{host253 + "b", false},
		{host253 + "..", false},
		{strings.Repeat("д", 40) + ".рф", true}, // 80 bytes, 40 code points
		{strings.Repeat("д", 64) + ".рф", false},
		{strings.Repeat("д", 63) + "\u3002" + strings.Repeat("д", 63), false}, // valid lengths but punycode is longer
		{strings.Repeat("%41", 64) + ".com", false},
		{"xn--" + strings.Repeat("a", 60) + ".com", false},
		{strings.Repeat("a.", 127), true}, // 253 and the root
		{strings.Repeat("a.", 128), false},
	} {
		_, err := Parse("http://" + c.host + "/")
		if (err == nil) != c.ok {
			t.Errorf("host of %d bytes %.40q...: err %v, want ok %v", len(c.host), c.host, err, c.ok)
		}
	}
	if len(host253) != 253 {
		t.Fatalf("host253 is %d bytes", len(host253))
	}
}
