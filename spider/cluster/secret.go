package cluster

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"syscall"
)

// MinSecret is the shortest cluster secret accepted (the communicator's
// minimum): 16 bytes. `head -c 32 /dev/urandom | base64 > secret` makes a
// good one.
const MinSecret = 16

// maxSecret bounds the secret file read.
const maxSecret = 4096

// ReadSecret reads the shared secret from path. The file must be a regular
// file readable by its owner only (mode 0600 or 0400): a secret others on
// the machine can read lets them inject URLs into the crawl. Leading and
// trailing white space (a final newline) is not part of the secret.
func ReadSecret(path string) ([]byte, error) {
	// Non-blocking: a named pipe's open waits for a writer, and the run
	// hung there past Ctrl-C and SIGTERM; opened so, it is refused below
	// as not a regular file. A regular file's reads ignore the flag.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("cluster.secret_file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cluster.secret_file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("cluster.secret_file: %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("cluster.secret_file: %s has mode %04o: group or others may read it; chmod 600 %s", path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSecret+1))
	if err != nil {
		return nil, fmt.Errorf("cluster.secret_file: reading %s: %w", path, err)
	}
	if len(b) > maxSecret {
		return nil, fmt.Errorf("cluster.secret_file: %s is over %d bytes", path, maxSecret)
	}
	b = bytes.TrimSpace(b)
	if len(b) < MinSecret {
		return nil, fmt.Errorf("cluster.secret_file: %s holds %d bytes of secret; need at least %d", path, len(b), MinSecret)
	}
	return b, nil
}
