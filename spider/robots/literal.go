package robots

// literalIndexFrom is how many wildcard-free patterns make a rule set worth
// a literal index: below it the grouped lists are faster.
const literalIndexFrom = 64

// literalIndex holds the wildcard-free patterns of a large rule set (some
// sites list thousands of URLs one by one). A literal pattern matches a path
// when it is a prefix of it (or, with '$', equal to it), so the candidates
// are the path's prefixes whose lengths occur among the patterns: a check
// costs one map lookup per distinct pattern length, longest first, instead
// of one comparison per pattern.
type literalIndex struct {
	byText map[string]literalKinds
	lens   []int // distinct pattern lengths (without '$'), longest first
	n      int
}

// literalKinds says which rules exist for one pattern text.
type literalKinds uint8

const (
	litAllow literalKinds = 1 << iota
	litDisallow
	litAllowEnd // Allow: text$
	litDisallowEnd
)

func newLiteralIndex(ps []pattern) *literalIndex {
	x := &literalIndex{byText: make(map[string]literalKinds)}
	seen := map[int]bool{}
	for i := range ps {
		p := &ps[i]
		if p.wild {
			continue
		}
		var k literalKinds
		switch {
		case p.allow && p.anchor:
			k = litAllowEnd
		case p.allow:
			k = litAllow
		case p.anchor:
			k = litDisallowEnd
		default:
			k = litDisallow
		}
		x.byText[p.text] |= k
		x.n++
		if !seen[len(p.text)] {
			seen[len(p.text)] = true
			x.lens = append(x.lens, len(p.text))
		}
	}
	// Descending, so the first matches found are the longest.
	for i := 1; i < len(x.lens); i++ {
		for j := i; j > 0 && x.lens[j] > x.lens[j-1]; j-- {
			x.lens[j], x.lens[j-1] = x.lens[j-1], x.lens[j]
		}
	}
	return x
}

func (x *literalIndex) len() int {
	if x == nil {
		return 0
	}
	return x.n
}

// best returns the best literal match for path. An anchored pattern of
// length L has priority L+1 (its '$' counts), an unanchored one L.
func (x *literalIndex) best(path string) verdict {
	var v verdict
	for _, l := range x.lens {
		if v.found && l+1 < v.prio {
			break
		}
		if l > len(path) {
			continue
		}
		k, ok := x.byText[path[:l]]
		if !ok {
			continue
		}
		if l == len(path) && k&(litAllowEnd|litDisallowEnd) != 0 && v.beatenBy(l+1, k&litAllowEnd != 0) {
			v = verdict{l + 1, k&litAllowEnd != 0, true}
		}
		if k&(litAllow|litDisallow) != 0 && v.beatenBy(l, k&litAllow != 0) {
			v = verdict{l, k&litAllow != 0, true}
		}
	}
	return v
}
