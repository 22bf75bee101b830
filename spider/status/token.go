package status

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// TokenFile is the control token's file in the data directory.
const TokenFile = "STATUS_TOKEN"

// Token returns the control token of data directory dir, making one (32
// random bytes, hex, mode 0600) when there is none. A token file others
// may read is refused: anyone who reads it can drive the node.
func Token(dir string) (string, error) {
	p := filepath.Join(dir, TokenFile)
	tok, err := ReadToken(dir)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return tok, err
	}
	var b [32]byte
	rand.Read(b[:])
	tok = hex.EncodeToString(b[:])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) { // another process made it first
			return ReadToken(dir)
		}
		return "", err
	}
	_, err = f.WriteString(tok + "\n")
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		os.Remove(p)
		return "", err
	}
	return tok, nil
}

// ReadToken reads the control token of data directory dir.
func ReadToken(dir string) (string, error) {
	p := filepath.Join(dir, TokenFile)
	fi, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s: mode %v lets others read the control token; chmod 600 it", p, fi.Mode().Perm())
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < 16 || strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("%s: not a token (want one line of at least 16 characters)", p)
	}
	return tok, nil
}
