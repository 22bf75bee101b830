package spider

// Where a running node's status page listens, for kspider ctl: the
// config's status, a --status flag or a cluster node's entry may each set
// it, and a port of 0 is chosen at the listen, so ctl, given the data
// directory for the control token, reads the address from beside it
// instead of guessing the default.
//
// On disk, DIR/STATUS_ADDR (version 1) is three lines of text:
//
//	kspider status address 1
//	127.0.0.1:7411
//	crc32c 1a2b3c4d
//
// The second line is an IP address and a port, as the page listens; a
// file naming anything else (a host name) is refused when read, as kspider
// ctl would send the control token there. The CRC-32C (Castagnoli)
// covers the two lines before it. It is written
// when the status page starts listening (writeDirFile: a temporary name,
// fsynced, renamed) and removed when it stops or a run has none; a crash
// leaves it, naming an address nothing may answer at any more. An address
// listening on every interface (0.0.0.0, ::) is recorded as the loopback
// one of its family: ctl runs on the node's machine.

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
)

// StatusAddrFile is the name of the status address's file in a data
// directory.
const StatusAddrFile = "STATUS_ADDR"

const (
	statusAddrHeader  = "kspider status address "
	maxStatusAddrSize = 4096
)

// WriteStatusAddr records addr (IP:port, as the status page listens) in
// dir's STATUS_ADDR.
func WriteStatusAddr(dir, addr string) error {
	ap, err := parseStatusAddr(addr)
	if err != nil {
		return fmt.Errorf("spider: %w", err)
	}
	if ap.Addr().IsUnspecified() {
		lo := netip.IPv6Loopback()
		if ap.Addr().Unmap().Is4() {
			lo = netip.AddrFrom4([4]byte{127, 0, 0, 1})
		}
		addr = netip.AddrPortFrom(lo, ap.Port()).String()
	}
	return writeDirFile(dir, StatusAddrFile, encodeStatusAddr(addr))
}

// parseStatusAddr parses an address a status page listens on, an IP
// address and a port. Any one-line string was taken (a host name, a port
// of 0 or none), and kspider ctl sent the control token wherever it named.
func parseStatusAddr(addr string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || ap.Port() == 0 {
		return netip.AddrPort{}, fmt.Errorf("status address %.80q is not an IP address and port (as 127.0.0.1:7411, where a status page listens)", addr)
	}
	return ap, nil
}

func encodeStatusAddr(addr string) []byte {
	body := fmt.Appendf(nil, "%s1\n%s\n", statusAddrHeader, addr)
	return append(body, dirFileSum(body)...)
}

// RemoveStatusAddr removes dir's STATUS_ADDR, if any.
func RemoveStatusAddr(dir string) error {
	if err := os.Remove(filepath.Join(dir, StatusAddrFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("spider: %w", err)
	}
	return nil
}

// ReadStatusAddr reads the address dir's STATUS_ADDR records; the error
// matches fs.ErrNotExist when there is none, and names the file and what
// is wrong when it is damaged or of a newer version.
func ReadStatusAddr(dir string) (string, error) {
	path := filepath.Join(dir, StatusAddrFile)
	b, err := readDirFile(dir, StatusAddrFile, maxStatusAddrSize)
	if errors.Is(err, errNotRegular) {
		return "", fmt.Errorf("%s is %v: remove it, and the node writes it at its next start", path, err)
	}
	if err != nil {
		return "", err
	}
	if err := dirFileNewer(path, b, statusAddrHeader, 1); err != nil {
		return "", err
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	if len(lines) != 4 || len(lines[3]) != 0 || !bytes.Equal(lines[0], []byte(statusAddrHeader+"1\n")) || !dirFileIntact(b) {
		return "", fmt.Errorf("%s is damaged (%d bytes, not the three lines kspider writes): remove it, and the node writes it at its next start", path, len(b))
	}
	addr := string(bytes.TrimSuffix(lines[1], []byte("\n")))
	if _, err := parseStatusAddr(addr); err != nil {
		return "", fmt.Errorf("%s: %w: remove it, and the node writes it at its next start", path, err)
	}
	return addr, nil
}
