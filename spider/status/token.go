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
//
// The token is written to a file of its own and linked into place, so a
// crash never leaves an empty or cut STATUS_TOKEN; an empty one (left by a
// crash of an older kspider, which wrote it in place) is made anew, as no
// one can hold its token, instead of costing every later run its page.
func Token(dir string) (string, error) {
	p := filepath.Join(dir, TokenFile)
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
		os.Remove(p)
	}
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
	f, err := os.CreateTemp(dir, TokenFile+".new-*") // mode 0600
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString(tok + "\n")
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		return "", err
	}
	if err := os.Link(f.Name(), p); err != nil {
		if errors.Is(err, fs.ErrExist) { // another process made it first
			return ReadToken(dir)
		}
		// A file system without hard links: rename, which would replace a
		// token another process made in between (the data directory's lock
		// keeps a second run out, so only a concurrent demo could).
		if err := os.Rename(f.Name(), p); err != nil {
			return "", err
		}
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
	if !fi.Mode().IsRegular() { // else a directory was told to chmod 600
		return "", fmt.Errorf("%s is not a file (a %v): remove it, and a token is made at the next start", p, fi.Mode().Type())
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
