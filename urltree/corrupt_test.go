package urltree

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// corruptFixture is a small tree on disk and what it holds.
type corruptFixture struct {
	files map[string][]byte // pristine file contents by name
	urls  []string
	used  map[string]int // end of the meaningful bytes of each file
	refs  []uint32       // reference of each entry (none: a built-in prefix or none)
	clean bool
}

// newCorruptFixture builds a tree of n URLs (a last block not full) and
// keeps its files.
func newCorruptFixture(t testing.TB, n int, clean bool) *corruptFixture {
	dir := t.TempDir()
	tr, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &corruptFixture{files: map[string][]byte{}, used: map[string]int{}, clean: clean}
	for i := range n {
		u := crashURL(i)
		if _, _, err := tr.AddString(u); err != nil {
			t.Fatal(err)
		}
		f.urls = append(f.urls, u)
	}
	for id := range n {
		e := tr.entry(uint32(id))
		ref := none
		if e.lcp > 0 {
			ref = e.ref
		}
		f.refs = append(f.refs, ref)
	}
	f.used[metaName] = metaFileSize
	f.used[nodesName] = headerSize + n*nodeSize
	f.used[ptrsName] = headerSize + (n+ptrBlock-1)/ptrBlock*ptrRecord
	f.used[arenaName] = int(tr.arenaEnd)
	closeOrCrash(t, tr, clean)
	for _, name := range checkNames {
		if f.files[name], err = os.ReadFile(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// closeOrCrash closes tr cleanly, or syncs it and drops it as a crash
// would (the node file is then not clean).
func closeOrCrash(t testing.TB, tr *Tree, clean bool) {
	var err error
	if clean {
		err = tr.Close()
	} else {
		err = tr.Sync()
		tr.closeFiles()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// fault is one kind of damage: it edits a file's bytes.
type fault struct {
	name  string
	apply func(r *rand.Rand, b []byte, used int) []byte
}

// pos draws an offset, mostly within the meaningful bytes.
func pos(r *rand.Rand, n, used int) int {
	if r.IntN(5) > 0 && used > 0 {
		return r.IntN(min(used+16, n))
	}
	return r.IntN(n)
}

var faults = []fault{
	{"bitflip", func(r *rand.Rand, b []byte, used int) []byte {
		b[pos(r, len(b), used)] ^= 1 << r.IntN(8)
		return b
	}},
	{"zero", func(r *rand.Rand, b []byte, used int) []byte {
		i := pos(r, len(b), used)
		clear(b[i:min(len(b), i+1+r.IntN(300))])
		return b
	}},
	{"truncate", func(r *rand.Rand, b []byte, used int) []byte {
		return b[:pos(r, len(b), used)]
	}},
	{"append", func(r *rand.Rand, b []byte, used int) []byte {
		junk := make([]byte, 1+r.IntN(5000))
		for i := range junk {
			junk[i] = byte(r.Uint32())
		}
		return append(b, junk...)
	}},
	{"swap", func(r *rand.Rand, b []byte, used int) []byte {
		l := 16 << r.IntN(5)
		if 2*l > len(b) {
			return b
		}
		i, j := pos(r, len(b)-l, used), pos(r, len(b)-l, used)
		if i > j {
			i, j = j, i
		}
		if j < i+l {
			return b
		}
		tmp := append([]byte(nil), b[i:i+l]...)
		copy(b[i:], b[j:j+l])
		copy(b[j:], tmp)
		return b
	}},
}

// TestCorruption damages each file of a tree with each fault at many
// random positions, then checks: Open either fails with an error naming
// the file, or gives a tree whose every URL reads back as written; Check
// reports something for every change to a file's bytes, and damage
// whenever Open failed; a repair gives a tree that opens, where every id
// reads back its URL or ErrLost, exactly the ids whose entries or
// reference chains were damaged are lost, and Find finds the rest.
func TestCorruption(t *testing.T) {
	const n = 300
	rounds := 6 // 480 damaged trees; KSPIDER_URLTREE_ROUNDS=N for a soak
	if v, err := strconv.Atoi(os.Getenv("KSPIDER_URLTREE_ROUNDS")); err == nil && v > 0 {
		rounds = v
	} else if testing.Short() {
		rounds = 2
	}
	for _, clean := range []bool{true, false} {
		fx := newCorruptFixture(t, n, clean)
		for _, name := range checkNames {
			for _, ft := range faults {
				t.Run(fmt.Sprintf("clean=%v/%s/%s", clean, name, ft.name), func(t *testing.T) {
					r := rand.New(rand.NewPCG(uint64(len(name)), uint64(len(ft.name))))
					for round := range rounds {
						fx.run(t, r, name, ft, round)
					}
				})
			}
		}
	}
}

func (fx *corruptFixture) run(t *testing.T, r *rand.Rand, name string, ft fault, round int) {
	t.Helper()
	orig := fx.files[name]
	b := ft.apply(r, append([]byte(nil), orig...), fx.used[name])
	// Two copies: Open may mend what it can (a node file, a commit slot),
	// so the repair gets its own.
	dirs := [2]string{t.TempDir(), t.TempDir()}
	for _, dir := range dirs {
		for nm, data := range fx.files {
			if nm == name {
				data = b
			}
			if err := os.WriteFile(filepath.Join(dir, nm), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	first := 0
	for first < min(len(b), len(orig)) && b[first] == orig[first] {
		first++
	}
	what := fmt.Sprintf("round %d: %s of %s (%d -> %d bytes, first change at %d)", round, ft.name, name, len(orig), len(b), first)
	// A fault must be found if it changed a byte, added bytes, or cut
	// into the meaningful part; a file cut short in its preallocated
	// zeros loses nothing.
	mustFind := len(b) > len(orig) || string(b) != string(orig[:len(b)]) || len(b) < fx.used[name]

	rep, err := Check(dirs[0], false)
	if err != nil {
		t.Fatalf("%s: Check: %v", what, err)
	}
	if mustFind && len(rep.Findings) == 0 {
		t.Fatalf("%s: Check found nothing", what)
	}
	openErr := fx.verifyOpen(t, dirs[0], what, false)
	if openErr != nil && !rep.Damaged() {
		t.Fatalf("%s: Open failed (%v) but Check found no damage: %v", what, openErr, rep.Findings)
	}
	if !rep.Damaged() {
		return
	}
	rep, err = Check(dirs[1], true)
	if err != nil {
		t.Fatalf("%s: repair: %v (findings %v)", what, err, rep.Findings)
	}
	if !rep.Repaired {
		t.Fatalf("%s: damage %v but no repair", what, rep.Findings)
	}
	if _, err := os.Stat(filepath.Join(rep.Quarantine, name)); err != nil && len(b) > 0 {
		t.Fatalf("%s: the damaged file is not in %s: %v", what, rep.Quarantine, err)
	}
	if err := fx.verifyOpen(t, dirs[1], what+" (after repair)", true); err != nil {
		t.Fatalf("%s: Open after repair: %v", what, err)
	}
	if rep2, err := Check(dirs[1], false); err != nil || rep2.Damaged() {
		t.Fatalf("%s: Check after repair: %v %v", what, err, rep2.Findings)
	}
	if name != arenaName && rep.Lost > 0 {
		// Only the arena holds URLs; damage elsewhere loses none, except
		// a destroyed commit, whose unfinished last block cannot be
		// verified (those ids are then not in the tree, not lost).
		t.Fatalf("%s: %d URLs lost to damage outside the arena: %v", what, rep.Lost, rep.Findings)
	}
}

// verifyOpen opens the tree in dir and checks every URL: it must read
// back as written, or (after a repair) be lost. It returns Open's error,
// which must name a file.
func (fx *corruptFixture) verifyOpen(t *testing.T, dir, what string, repaired bool) error {
	t.Helper()
	tr, err := Open(dir, nil)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrOldFormat) && !errors.Is(err, ErrNewerFormat) && !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: Open: %v is not a corruption error", what, err)
		}
		if !strings.Contains(err.Error(), "urltree.") {
			t.Fatalf("%s: Open: %v names no file", what, err)
		}
		var ce *CorruptError
		if errors.As(err, &ce) && !strings.Contains(err.Error(), "offset") {
			t.Fatalf("%s: Open: %v names no offset", what, err)
		}
		return err
	}
	defer tr.Close()
	if tr.Len() > len(fx.urls) || tr.Len() < len(fx.urls)/ptrBlock*ptrBlock {
		t.Fatalf("%s: %d URLs, want %d", what, tr.Len(), len(fx.urls))
	}
	lost := make([]bool, tr.Len())
	var buf []byte
	for id := range tr.Len() {
		buf, err = tr.Get(uint32(id), buf[:0])
		if errors.Is(err, ErrLost) && repaired {
			lost[id] = true
			continue
		}
		if err != nil || string(buf) != fx.urls[id] {
			t.Fatalf("%s: Get(%d) = %q, %v; want %q", what, id, buf, err, fx.urls[id])
		}
		if got, ok := tr.FindString(fx.urls[id]); !ok || got != uint32(id) {
			t.Fatalf("%s: Find(%q) = %d, %v; want %d", what, fx.urls[id], got, ok, id)
		}
	}
	// Exactly the entries of damaged blocks and those whose reference is
	// lost are lost: every intact entry is read back.
	for id := range lost {
		if !lost[id] && fx.refs[id] != none && lost[fx.refs[id]] {
			t.Fatalf("%s: id %d read back though its reference %d is lost", what, id, fx.refs[id])
		}
	}
	for k := 0; k*ptrBlock < len(lost); k++ {
		blockLost := false
		for id := k * ptrBlock; id < min(len(lost), (k+1)*ptrBlock); id++ {
			if lost[id] && (fx.refs[id] == none || !lost[fx.refs[id]]) {
				blockLost = true
			}
		}
		if !blockLost {
			continue
		}
		// A block lost for its own damage loses all its entries.
		for id := k * ptrBlock; id < min(len(lost), (k+1)*ptrBlock); id++ {
			if !lost[id] {
				t.Fatalf("%s: id %d read back, but id %d of its block is lost for damage of its own", what, id, k*ptrBlock)
			}
		}
	}
	return nil
}
