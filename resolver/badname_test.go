package resolver

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestBadNameSaysWhy: a name the resolver refuses unasked was reported
// only as "not a valid host name", the same for a 300-byte name, an empty
// label and a stray byte, so an operator could not tell what to fix in a
// seed or a link. Now the error says what is wrong and where.
func TestBadNameSaysWhy(t *testing.T) {
	srv := startServer(t, zone(t, nil))
	r := newTestResolver(t, Config{}, srv.addr)
	long := strings.Repeat("a.", 150) + "test"
	for name, want := range map[string]string{
		"":                                "empty",
		long:                              "304 bytes, more than 253",
		"bad..name":                       "empty label at byte 4",
		".lead":                           "empty label at byte 0",
		"a/b.test":                        `byte '/' at 1`,
		"a b":                             `byte ' ' at 1`,
		"bücher.test":                     "non-ASCII byte 0xc3 at 1",
		strings.Repeat("x", 64) + ".test": "label of more than 63 bytes at byte 0",
	} {
		_, err := r.Lookup(context.Background(), name)
		var le *LookupError
		if !errors.Is(err, ErrBadName) || !errors.As(err, &le) || le.Name != name || !strings.Contains(err.Error(), want) {
			t.Errorf("Lookup(%.40q) = %v, want ErrBadName naming it and saying %q", name, err, want)
		}
	}
	if srv.total() != 0 {
		t.Errorf("bad names sent %d queries", srv.total())
	}
}
