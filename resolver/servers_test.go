package resolver

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSystemServers(t *testing.T) {
	p := filepath.Join(t.TempDir(), "resolv.conf")
	os.WriteFile(p, []byte("# comment\nnameserver 192.0.2.53\nnameserver 2001:db8::53\nsearch example.org\noptions ndots:2\n"), 0o644)
	got, err := systemServers(p)
	if err != nil || len(got) != 2 || got[0] != "192.0.2.53:53" || got[1] != "[2001:db8::53]:53" {
		t.Errorf("systemServers = %v, %v", got, err)
	}
	// New reads it, without sending anything.
	r, err := New(Config{ResolvConf: p, Sockets: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if s := r.Servers(); len(s) != 2 || s[1].String() != "[2001:db8::53]:53" {
		t.Errorf("Servers() = %v", s)
	}

	empty := filepath.Join(t.TempDir(), "empty.conf")
	os.WriteFile(empty, []byte("search example.org\n"), 0o644)
	if _, err := New(Config{ResolvConf: empty}); err == nil {
		t.Error("a resolv.conf without name servers was accepted")
	}
	if _, err := New(Config{ResolvConf: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Error("a missing resolv.conf was accepted")
	}
}

func TestParseServer(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1": "127.0.0.1:53", "127.0.0.1:5353": "127.0.0.1:5353", "[::1]:54": "[::1]:54", "::1": "[::1]:53",
		"[::ffff:127.0.0.1]:53": "127.0.0.1:53",
	} {
		got, err := parseServer(in)
		if err != nil || got.String() != want {
			t.Errorf("parseServer(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "dns.google", "1.2.3.4:99999", "[::1]", "127.0.0.1:0", "[::1]:0"} {
		if _, err := parseServer(in); err == nil {
			t.Errorf("parseServer(%q) accepted", in)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Servers: []string{"127.0.0.1"}, Network: "tcp"},
		{Servers: []string{"127.0.0.1"}, MinTTL: 2, MaxTTL: 1},
		{Servers: []string{"127.0.0.1"}, Slots: MaxSlots + 1},
		{Servers: []string{"name.example"}},
	} {
		if r, err := New(cfg); err == nil {
			r.Close()
			t.Errorf("%+v accepted", cfg)
		}
	}
}
