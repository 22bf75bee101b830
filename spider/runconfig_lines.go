package spider

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// keyIndex maps each key of a TOML document ("limits.max_depth",
// "seeds[2]", "cluster.nodes[1].udp") to the line it is on, so errors found
// after decoding can point at the line, and maps lines back to keys for the
// decoder's own errors, which give a line but not always the key. The
// document is parsed a second time with go-toml's own parser (package
// unstable, pinned with the module), so both passes agree on the syntax.
type keyIndex struct {
	line   map[string]int
	key    map[int]string // first key on each line
	tables map[string]int // [[array tables]] seen so far, by path
	kind   map[string]unstable.Kind
}

func keyLines(data []byte) *keyIndex {
	x := &keyIndex{line: map[string]int{}, key: map[int]string{}, tables: map[string]int{}, kind: map[string]unstable.Kind{}}
	var p unstable.Parser
	p.Reset(data)
	prefix := ""
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table:
			var line int
			prefix, line = x.path(data, "", e.Key())
			x.record(prefix, line)
		case unstable.ArrayTable:
			k, line := x.path(data, "", e.Key())
			prefix = fmt.Sprintf("%s[%d]", k, x.tables[k])
			x.tables[k]++
			x.record(prefix, line)
		case unstable.KeyValue:
			k, line := x.path(data, prefix, e.Key())
			x.record(k, line)
			x.value(data, k, e.Value())
		}
	}
	// A syntax error ends the walk; the decoder reports it with its line.
	return x
}

// path joins prefix and the parts of a key, and gives the key's line.
func (x *keyIndex) path(data []byte, prefix string, it unstable.Iterator) (string, int) {
	var b strings.Builder
	b.WriteString(prefix)
	line := 0
	for it.Next() {
		n := it.Node()
		if line == 0 {
			line = lineOf(data, n.Raw)
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.Write(n.Data)
	}
	return b.String(), line
}

// value records the lines of the elements of arrays and inline tables.
func (x *keyIndex) value(data []byte, key string, v *unstable.Node) {
	if v == nil {
		return
	}
	x.kind[key] = v.Kind
	switch v.Kind {
	case unstable.Array:
		i := 0
		for it := v.Children(); it.Next(); i++ {
			n := it.Node()
			k := fmt.Sprintf("%s[%d]", key, i)
			x.record(k, lineOf(data, n.Raw))
			x.value(data, k, n)
		}
	case unstable.InlineTable:
		for it := v.Children(); it.Next(); {
			n := it.Node()
			if n.Kind == unstable.KeyValue {
				k, line := x.path(data, key, n.Key())
				x.record(k, line)
				x.value(data, k, n.Value())
			}
		}
	}
}

func (x *keyIndex) record(key string, line int) {
	if line <= 0 {
		return
	}
	if _, ok := x.line[key]; !ok {
		x.line[key] = line
	}
	if _, ok := x.key[line]; !ok {
		x.key[line] = key
	}
}

// lineOf is the 1-based line of a node's raw bytes, 0 when it has none
// (values such as strings are often copied out of the input).
func lineOf(data []byte, r unstable.Range) int {
	if r.Length == 0 || int(r.Offset) > len(data) {
		return 0
	}
	return bytes.Count(data[:r.Offset], []byte{'\n'}) + 1
}

// lineFor is the line of key, or of the nearest enclosing key that has one
// ("seeds" for "seeds[3]"); 0 when the key is not in the document.
func (x *keyIndex) lineFor(key string) int {
	if x == nil {
		return 0
	}
	for key != "" {
		if l, ok := x.line[key]; ok {
			return l
		}
		i := strings.LastIndexAny(key, ".[")
		if i < 0 {
			break
		}
		key = key[:i]
	}
	return 0
}

// localTime reports whether key's value is a TOML date or date-time
// without a UTC offset.
func (x *keyIndex) localTime(key string) bool {
	if x == nil {
		return false
	}
	switch x.kind[key] {
	case unstable.LocalDate, unstable.LocalDateTime, unstable.LocalTime:
		return true
	}
	return false
}

// keyAt is the first key on line, "" if none.
func (x *keyIndex) keyAt(line int) string {
	if x == nil {
		return ""
	}
	return x.key[line]
}
