package spider

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/kspider/kspider/spider/links"
	"github.com/kspider/kspider/spider/scope"
)

// A link the scope refuses (scope include/exclude and domain rules, the
// trap limits, limits.max_pages_per_host, scope.max_subdomains), or one
// beyond limits.max_links_per_page, is not kept, and the page it is on
// is done: with the scope widened between runs (an exclude removed, a
// budget or the links cap raised) nothing found those links again, and
// the crawl "finished" without them. So DIR/SCOPE keeps the scope the
// directory was crawled under, and a run under another one first follows
// again, read back from the store, the links of every page fetched below
// the depth limit, and queues again the URLs dropped unfetched that the
// scope admits now, as a raised depth limit does (raiseDepth,
// node_depthlimit.go). The new scope is recorded once what the pass adds
// is durable: a crash before makes the next run do it again. A scope only
// narrowed (within, below: an exclude added, a limit lowered) refuses
// every link the old one did, so the pass would add nothing: it is
// recorded at once, with no pass.
//
// On disk, DIR/SCOPE (version 2) is four lines of text:
//
//	kspider scope 2
//	sha256 <64 hex digits>
//	scope {"Scope":{...},"MaxLinks":100}
//	crc32c 1a2b3c4d
//
// The third line is the JSON encoding of {"Scope": the scope.Config,
// "MaxLinks": the links cap}, the SHA-256 of which is on the second (a
// field added to scope.Config in a later version changes the digest: one
// pass more). The CRC-32C (Castagnoli) covers the lines before it. Version
// 1, written before, has no third line: read, it tells a changed scope
// only, and any change makes the pass. A scope whose encoding is over
// maxScopeSize is written as version 1. A first line of another version
// is taken for one (refused, naming it) only when the CRC holds; without,
// it is damage (a flipped version digit). The file is written to a
// temporary name, fsynced and renamed (writeDirFile). A new directory
// records the run's scope; one that holds a crawl but not the file
// (deleted, or crawled before it) makes the full pass, as DEPTH missing
// does (node_depthlimit.go), and records the scope after.

// ScopeFile is the name of the scope digest's file in a data directory.
const ScopeFile = "SCOPE"

// scopeRecord is what DIR/SCOPE keeps: what decides which links of a
// page are kept.
type scopeRecord struct {
	Scope    scope.Config
	MaxLinks int
}

// scopeOf is the record of sc and the links cap: a list set empty
// ("exclude = []") is one left out, not a change worth a pass.
func scopeOf(sc scope.Config, maxLinks int) scopeRecord {
	for _, l := range []*[]string{&sc.Include, &sc.Exclude, &sc.Domains} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	return scopeRecord{sc, maxLinks}
}

func (r scopeRecord) json() []byte {
	b, _ := json.Marshal(r) // (strings, ints and bools: no error)
	return b
}

// scopeDigest is the hex SHA-256 of the node's scope configuration and
// its cap on links per page: a page's links beyond the cap are dropped as
// the scope's refusals are, and a higher cap finds them only in the pass.
func (n *Node) scopeDigest() string { return scopeDigest(*n.cfg.Scope, n.cfg.MaxLinks) }

func scopeDigest(sc scope.Config, maxLinks int) string {
	return fmt.Sprintf("%x", sha256.Sum256(scopeOf(sc, maxLinks).json()))
}

// maxScopeSize bounds what readScope reads of DIR/SCOPE: a config file
// is at most maxConfigSize, and its regular expressions' backslashes are
// doubled in JSON.
const maxScopeSize = 3 * maxConfigSize

// encodeScope is DIR/SCOPE for r: version 2, or 1 when that is too large.
func encodeScope(r scopeRecord) []byte {
	j := r.json()
	digest := fmt.Sprintf("%x", sha256.Sum256(j))
	body := fmt.Appendf(nil, "kspider scope 2\nsha256 %s\nscope %s\n", digest, j)
	if len(body)+20 > maxScopeSize {
		return encodeScopeDigest(digest)
	}
	return append(body, dirFileSum(body)...)
}

// encodeScopeDigest is DIR/SCOPE of version 1.
func encodeScopeDigest(digest string) []byte {
	body := fmt.Appendf(nil, "kspider scope 1\nsha256 %s\n", digest)
	return append(body, dirFileSum(body)...)
}

// readScope reads dir's SCOPE: the digest, and the scope when the file
// is of version 2 (else nil). The error matches fs.ErrNotExist when there
// is none, and names the file when it is damaged.
func readScope(dir string) (string, *scopeRecord, error) {
	path := filepath.Join(dir, ScopeFile)
	b, err := readDirFile(dir, ScopeFile, maxScopeSize)
	if errors.Is(err, errNotRegular) {
		return "", nil, fmt.Errorf("spider: %s is %v: delete it, and the next run follows the stored pages' links again in full", path, err)
	}
	if err != nil {
		return "", nil, err
	}
	damaged := fmt.Errorf("spider: %s is damaged (%d bytes, not as kspider writes it): delete it, and the next run follows the stored pages' links again in full", path, len(b))
	var digest string
	lines := bytes.SplitAfter(b, []byte("\n"))
	switch {
	case len(lines) == 4 && string(lines[0]) == "kspider scope 1\n":
		if _, err = fmt.Sscanf(string(lines[1]), "sha256 %64s\n", &digest); err != nil || !bytes.Equal(encodeScopeDigest(digest), b) {
			return "", nil, damaged
		}
		return digest, nil, nil
	case len(lines) == 5 && string(lines[0]) == "kspider scope 2\n":
		j, ok := bytes.CutPrefix(bytes.TrimSuffix(lines[2], []byte("\n")), []byte("scope "))
		var r scopeRecord
		if !ok || json.Unmarshal(j, &r) != nil {
			return "", nil, damaged
		}
		// One spelling only, as written: digest and CRC included.
		if !bytes.Equal(encodeScope(r), b) {
			return "", nil, damaged
		}
		return fmt.Sprintf("%x", sha256.Sum256(j)), &r, nil
	}
	// Another version only if the checksum holds: trusted before it, a
	// damaged version digit read as a newer format.
	if dirFileIntact(b) && bytes.HasPrefix(lines[0], []byte("kspider scope ")) && !bytes.HasPrefix(lines[0], []byte("kspider scope 1\n")) && !bytes.HasPrefix(lines[0], []byte("kspider scope 2\n")) {
		return "", nil, fmt.Errorf("spider: %s is of version %q; this kspider reads versions 1 and 2: run the kspider that wrote it, or delete the file, and the next run follows the stored pages' links again in full", path, bytes.TrimSpace(bytes.TrimPrefix(lines[0], []byte("kspider scope "))))
	}
	return "", nil, damaged
}

// CheckScopeFile reads dir's SCOPE as a node's start does, for kspider
// check: what it records, or the error the start refuses it with
// (matching fs.ErrNotExist when there is none).
func CheckScopeFile(dir string) (string, error) {
	digest, r, err := readScope(dir)
	switch {
	case err != nil:
		return "", err
	case r == nil:
		return fmt.Sprintf("version 1, sha256 %s (the scope's digest only)", digest), nil
	}
	return fmt.Sprintf("sha256 %s: %d includes, %d excludes, %d domains, max_links_per_page %d",
		digest, len(r.Scope.Include), len(r.Scope.Exclude), len(r.Scope.Domains), r.MaxLinks), nil
}

// within reports whether a crawl under r keeps no link that one under was
// refused: r only narrows was (or is was), so a pass over the store
// under r adds nothing.
func (r scopeRecord) within(was scopeRecord) bool {
	a, b := r.Scope, was.Scope
	// Limits where 0 (below 2 for the segment repeats) is none.
	limit := func(now, then, off int) bool { return then <= off || (now > off && now <= then) }
	ok := (len(b.Include) == 0 || len(a.Include) > 0 && subset(a.Include, b.Include)) &&
		subset(b.Exclude, a.Exclude) && slices.Equal(a.Domains, b.Domains) &&
		limit(a.MaxURLLength, b.MaxURLLength, 0) && limit(a.MaxPathDepth, b.MaxPathDepth, 0) &&
		limit(a.MaxSegmentRepeat, b.MaxSegmentRepeat, 1) &&
		(a.RejectQuery || !b.RejectQuery) && (a.RejectCGI || !b.RejectCGI) &&
		limit(a.MaxPagesPerHost, b.MaxPagesPerHost, 0) && limit(a.MaxSubdomains, b.MaxSubdomains, 0) &&
		linksCap(r.MaxLinks) <= linksCap(was.MaxLinks)
	// A field this does not know (added to scope.Config later) differs:
	// not known to narrow.
	c := a
	c.Include, c.Exclude, c.Domains = b.Include, b.Exclude, b.Domains
	c.MaxURLLength, c.MaxPathDepth, c.MaxSegmentRepeat = b.MaxURLLength, b.MaxPathDepth, b.MaxSegmentRepeat
	c.RejectQuery, c.RejectCGI, c.MaxPagesPerHost, c.MaxSubdomains = b.RejectQuery, b.RejectCGI, b.MaxPagesPerHost, b.MaxSubdomains
	return ok && bytes.Equal(scopeOf(c, 0).json(), scopeOf(b, 0).json())
}

// subset reports whether every string of a is in b (in time linear in
// both: a config may hold many thousands of expressions).
func subset(a, b []string) bool {
	in := make(map[string]bool, len(b))
	for _, s := range b {
		in[s] = true
	}
	for _, s := range a {
		if !in[s] {
			return false
		}
	}
	return true
}

// linksCap is the cap on links per page of limits.max_links_per_page m.
func linksCap(m int) int {
	if m <= 0 {
		return links.DefaultMaxLinks
	}
	return m
}

// openScope compares the scope the directory was crawled under with this
// run's: another one sets n.scopeChanged, for Run, unless it only narrows
// the old one; then, or when the file is of version 1, it is to be
// recorded anew at once (the record returned, which OpenNode writes once
// the start can no longer be refused).
func (n *Node) openScope() (dirRecord, error) {
	now := scopeOf(*n.cfg.Scope, n.cfg.MaxLinks)
	rec := dirRecord{ScopeFile, encodeScope(now)}
	digest, was, err := readScope(n.cfg.Dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) && n.freshDir:
		return rec, nil
	case errors.Is(err, fs.ErrNotExist):
		// Taken as crawled under this scope, a scope widened since
		// skipped the pass silently: a full pass instead.
		n.pastUnknown = append(n.pastUnknown, ScopeFile)
		n.scopeChanged = true
		return dirRecord{}, nil
	case err != nil:
		return dirRecord{}, err
	case digest == n.scopeDigest():
		if was == nil { // version 1: kept as version 2, to tell a narrowing later
			return rec, nil
		}
		return dirRecord{}, nil
	case was != nil && now.within(*was):
		n.cfg.Logf("spider: the scope only narrowed since the directory was last crawled: no link it refused before is kept now, so the stored pages' links are not followed again")
		return rec, nil
	}
	n.scopeChanged = true
	return dirRecord{}, nil
}
