package spider

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/kspider/kspider/spider/scope"
)

// A link the scope refuses (scope include/exclude and domain rules, the
// trap limits, limits.max_pages_per_host, scope.max_subdomains), or one
// beyond limits.max_links_per_page, is not kept, and the page it is on
// is done: with the scope widened between runs (an exclude removed, a
// budget or the links cap raised) nothing found those links again, and
// the crawl "finished" without them. So DIR/SCOPE keeps a digest of the
// scope the directory was crawled under, and a run under another one
// first follows again, read back from the store, the links of every page
// fetched below the depth limit, and queues again the URLs dropped
// unfetched that the scope admits now, as a raised depth limit does
// (raiseDepth, node_depthlimit.go). A narrowed scope costs the same pass,
// which adds nothing. The new digest is recorded once what the pass adds
// is durable: a crash before makes the next run do it again.
//
// On disk, DIR/SCOPE (version 1) is three lines of text:
//
//	kspider scope 1
//	sha256 <64 hex digits>
//	crc32c 1a2b3c4d
//
// The SHA-256 is of the JSON encoding of {"Scope": the scope.Config,
// "MaxLinks": the links cap} (a field added to scope.Config in a later
// version changes the digest: one pass more). The CRC-32C (Castagnoli)
// covers the two lines before it. It is written to a temporary name,
// fsynced and renamed (writeDirFile). A directory without the file (new,
// or crawled before it) is taken as crawled under the run's scope.

// ScopeFile is the name of the scope digest's file in a data directory.
const ScopeFile = "SCOPE"

// scopeDigest is the hex SHA-256 of the node's scope configuration and
// its cap on links per page: a page's links beyond the cap are dropped as
// the scope's refusals are, and a higher cap finds them only in the pass.
func (n *Node) scopeDigest() string { return scopeDigest(*n.cfg.Scope, n.cfg.MaxLinks) }

func scopeDigest(sc scope.Config, maxLinks int) string {
	// A list set empty ("exclude = []") is one left out: not a change
	// worth a pass over the store.
	for _, l := range []*[]string{&sc.Include, &sc.Exclude, &sc.Domains} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	b, _ := json.Marshal(struct { // (strings, ints and bools: no error)
		Scope    scope.Config
		MaxLinks int
	}{sc, maxLinks})
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

func encodeScopeDigest(digest string) []byte {
	body := fmt.Appendf(nil, "kspider scope 1\nsha256 %s\n", digest)
	return fmt.Appendf(body, "crc32c %08x\n", crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
}

// readScopeDigest reads dir's SCOPE; the error matches fs.ErrNotExist
// when there is none, and names the file when it is damaged.
func readScopeDigest(dir string) (string, error) {
	path := filepath.Join(dir, ScopeFile)
	f, err := openRegular(path)
	if errors.Is(err, errNotRegular) {
		return "", fmt.Errorf("spider: %s is %v: delete it, and the next run takes the directory as crawled under its scope", path, err)
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return "", fmt.Errorf("spider: %w", err)
	}
	var digest string
	lines := bytes.SplitAfter(b, []byte("\n"))
	if len(lines) == 4 {
		_, err = fmt.Sscanf(string(lines[1]), "sha256 %64s\n", &digest)
	}
	if len(lines) != 4 || err != nil || !bytes.Equal(encodeScopeDigest(digest), b) {
		return "", fmt.Errorf("spider: %s is damaged (%d bytes, not as kspider writes it): delete it, and the next run takes the directory as crawled under its scope", path, len(b))
	}
	return digest, nil
}

// openScope compares the scope the directory was crawled under with this
// run's: another one sets n.scopeChanged, for Run.
func (n *Node) openScope() error {
	prev, err := readScopeDigest(n.cfg.Dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return writeDirFile(n.cfg.Dir, ScopeFile, encodeScopeDigest(n.scopeDigest()))
	case err != nil:
		return err
	}
	n.scopeChanged = prev != n.scopeDigest()
	return nil
}
