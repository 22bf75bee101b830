package spider

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatusAddrFile: the address written is read back, an unspecified
// one as loopback; a file damaged at a random byte, cut, of a newer
// version or not a file is refused naming it, never read as an address.
func TestStatusAddrFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadStatusAddr(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no file: %v, want fs.ErrNotExist", err)
	}
	for addr, want := range map[string]string{"127.0.0.1:7411": "127.0.0.1:7411", "[::1]:9": "[::1]:9",
		"0.0.0.0:7411": "127.0.0.1:7411", "[::]:7411": "[::1]:7411", "localhost:80": "localhost:80"} {
		if err := WriteStatusAddr(dir, addr); err != nil {
			t.Fatal(err)
		}
		if got, err := ReadStatusAddr(dir); err != nil || got != want {
			t.Errorf("wrote %s, read %q, %v; want %s", addr, got, err, want)
		}
	}
	path := filepath.Join(dir, StatusAddrFile)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for range 200 {
		b := append([]byte(nil), good...)
		if rng.IntN(4) == 0 {
			b = b[:rng.IntN(len(b))]
		} else {
			i := rng.IntN(len(b))
			b[i] ^= byte(1 + rng.IntN(255))
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadStatusAddr(dir)
		if err == nil {
			t.Fatalf("damaged file %q read as %q", b, got)
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("damaged file: %v does not name %s", err, path)
		}
	}
	body := []byte("kspider status address 2\n127.0.0.1:1\n")
	if err := os.WriteFile(path, append(body, dirFileSum(body)...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadStatusAddr(dir); err == nil || !strings.Contains(err.Error(), "newer kspider") {
		t.Errorf("version 2: %v, want refused as newer", err)
	}
	if err := RemoveStatusAddr(dir); err != nil {
		t.Fatal(err)
	}
	if err := RemoveStatusAddr(dir); err != nil {
		t.Errorf("removing it again: %v", err)
	}
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadStatusAddr(dir); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("a directory in its place: %v", err)
	}
}
