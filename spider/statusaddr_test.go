package spider

import (
	"errors"
	"fmt"
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
		"0.0.0.0:7411": "127.0.0.1:7411", "[::]:7411": "[::1]:7411", "10.1.2.3:80": "10.1.2.3:80"} {
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

// TestStatusAddrNotIP: WriteStatusAddr took any one-line string (a host
// name, "garbage", a port of 0 or none) and kspider ctl then sent the
// control token wherever it named; now only an IP address and a port
// (as the status page listens) are written, anything else refused naming
// it, and a file naming anything else (written by hand, CRC made anew) is
// refused when read.
func TestStatusAddrNotIP(t *testing.T) {
	dir := t.TempDir()
	for _, addr := range []string{"localhost:80", "node0.example:7411", "garbage", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:99999", ":7411", "127.0.0.1:7411 x", ""} {
		err := WriteStatusAddr(dir, addr)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("status address %q is not an IP address and port", addr)) {
			t.Errorf("WriteStatusAddr(%q): %v, want refused naming it", addr, err)
		}
		if _, err := os.Stat(filepath.Join(dir, StatusAddrFile)); err == nil {
			t.Fatalf("WriteStatusAddr(%q) wrote the file", addr)
		}
	}
	path := filepath.Join(dir, StatusAddrFile)
	body := []byte("kspider status address 1\nevil.example:80\n")
	if err := os.WriteFile(path, append(body, dirFileSum(body)...), 0o644); err != nil {
		t.Fatal(err)
	}
	if a, err := ReadStatusAddr(dir); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `"evil.example:80" is not an IP address and port`) {
		t.Errorf("a file naming a host name: %q, %v; want refused naming the file and the address", a, err)
	}
}
