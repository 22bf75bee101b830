package spider

import (
	"encoding"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

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
	nl     []int    // offsets of the document's newlines, for lineOf
	keys   []string // the document's keys and tables in order (no array elements)
	elems  []string // the document's array elements in order ("seeds[2]")
	spans  []span   // the bytes of each "key = value" and array element, in order
	failed bool     // the document has a syntax error
}

// span is where the text of a key's "key = value", or of an array
// element, is in the document.
type span struct {
	key        string
	start, end int // byte offsets, end excluded
}

func keyLines(data []byte) *keyIndex {
	x := &keyIndex{line: map[string]int{}, key: map[int]string{}, tables: map[string]int{}, kind: map[string]unstable.Kind{}}
	for i, c := range data {
		if c == '\n' {
			x.nl = append(x.nl, i)
		}
	}
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
			x.keys = append(x.keys, prefix)
			x.kind[prefix] = unstable.Table
		case unstable.ArrayTable:
			k, line := x.path(data, "", e.Key())
			prefix = fmt.Sprintf("%s[%d]", k, x.tables[k])
			x.tables[k]++
			x.record(prefix, line)
			x.keys = append(x.keys, prefix)
			x.kind[prefix] = unstable.Table
		case unstable.KeyValue:
			k, line := x.path(data, prefix, e.Key())
			x.record(k, line)
			x.keys = append(x.keys, k)
			x.span(k, e.Raw)
			x.value(data, k, e.Value())
		}
	}
	// A syntax error ends the walk; the decoder reports it with its line.
	x.failed = p.Error() != nil
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
			line = x.lineOf(data, n.Raw)
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.Write(n.Data)
	}
	return b.String(), line
}

// value records the lines of the elements of arrays and inline tables,
// and returns the line of v's first element that has one (0 if none).
func (x *keyIndex) value(data []byte, key string, v *unstable.Node) (first int) {
	if v == nil {
		return 0
	}
	x.kind[key] = v.Kind
	switch v.Kind {
	case unstable.Array:
		i := 0
		for it := v.Children(); it.Next(); i++ {
			n := it.Node()
			k := fmt.Sprintf("%s[%d]", key, i)
			line := x.lineOf(data, n.Raw)
			x.record(k, line)
			x.elems = append(x.elems, k)
			x.span(k, n.Raw)
			inner := x.value(data, k, n)
			if line == 0 && n.Kind == unstable.Array {
				// An array has no bytes of its own: it is on its first
				// element's line, when that has one.
				line = inner
				x.adopt(k, line)
			}
			if first == 0 {
				first = line
			}
		}
	case unstable.InlineTable:
		for it := v.Children(); it.Next(); {
			n := it.Node()
			if n.Kind == unstable.KeyValue {
				k, line := x.path(data, key, n.Key())
				x.record(k, line)
				x.keys = append(x.keys, k)
				x.span(k, n.Raw)
				x.value(data, k, n.Value())
				if first == 0 {
					first = line
				}
			}
		}
	}
	return first
}

// adopt gives key the line of its first element, recorded before it, and
// makes key that line's first key in place of the element's.
func (x *keyIndex) adopt(key string, line int) {
	if line <= 0 {
		return
	}
	if _, ok := x.line[key]; !ok {
		x.line[key] = line
	}
	if strings.HasPrefix(x.key[line], key) {
		x.key[line] = key
	}
}

// span records where key's text is, when the parser gives it (not for an
// array; for an inline table only its "{").
func (x *keyIndex) span(key string, r unstable.Range) {
	if r.Length > 0 {
		x.spans = append(x.spans, span{key, int(r.Offset), int(r.Offset + r.Length)})
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
// (booleans and numbers). A binary search over the newlines keeps a
// document with many keys linear.
func (x *keyIndex) lineOf(data []byte, r unstable.Range) int {
	if r.Length == 0 || int(r.Offset) > len(data) {
		return 0
	}
	n, _ := slices.BinarySearch(x.nl, int(r.Offset))
	return n + 1
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

// unknown reports the document's keys that are not in known (keys with
// their array indexes removed: "cluster.nodes.udp"), each with its line.
// go-toml's strict mode finds them too, but builds each error's context
// from the whole document, which is quadratic in a long file of them. n
// is how many there are.
func (x *keyIndex) unknown(name string, known map[string]bool) (n int, err error) {
	k := &checker{name: name}
	for _, key := range x.keys {
		if !known[stripIndexes(key)] {
			n++
			k.add(fmt.Errorf("%s:%d: unknown key %s", name, x.lineFor(key), printable(key)))
		}
	}
	return n, k.err()
}

// textScalars reports the keys whose value is a number, a boolean or a
// table where text is wanted (want: a duration, a date-time, by key
// without indexes). go-toml hands a number's digits to UnmarshalText and
// returns its error bare, so the decoder's message would name neither
// line nor key; and it takes a table ("[politeness.delay]", "delay = {}")
// for the value without a word, which left the default in its place.
func (x *keyIndex) textScalars(name string, want map[string]string) error {
	k := &checker{name: name}
	for _, key := range x.keys {
		w, ok := want[stripIndexes(key)]
		if !ok {
			continue
		}
		switch kind := x.kind[key]; kind {
		case unstable.Integer, unstable.Float, unstable.Bool:
			k.add(fmt.Errorf("%s:%d: %s: a TOML %s where %s is wanted", name, x.lineFor(key), key, strings.ToLower(kind.String()), w))
		case unstable.Table, unstable.InlineTable:
			what := "table"
			if kind == unstable.InlineTable {
				what = "inline table"
			}
			k.add(fmt.Errorf("%s:%d: %s: a TOML %s where %s is wanted", name, x.lineFor(key), key, what, w))
		}
	}
	return k.err()
}

// printable escapes, as Go quotes them, what a terminal would not show
// as written in s: control bytes (ESC starts a sequence that recolours or
// clears the screen), invalid UTF-8, format characters (U+202E turns the
// text after it around). TOML lets a quoted key hold any of them, and an
// error quoting such a key must show what is there.
func printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// stripIndexes removes "[n]" parts from a key.
func stripIndexes(key string) string {
	if !strings.Contains(key, "[") {
		return key
	}
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		if key[i] == '[' {
			for i < len(key) && key[i] != ']' {
				i++
			}
			continue
		}
		b.WriteByte(key[i])
	}
	return b.String()
}

// tomlKeys adds to set every key path of t's toml-tagged fields, tables
// and lists of tables included; values that read themselves from text
// (Duration, time.Time) are leaves, also put in text with what they want.
func tomlKeys(t reflect.Type, prefix string, set map[string]bool, text map[string]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if name == "" || name == "-" {
			continue
		}
		key := prefix + name
		set[key] = true
		ft := f.Type
		if ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		switch {
		case reflect.PointerTo(ft).Implements(textUnmarshaler):
			text[key] = goTypes[ft.String()]
		case ft.Kind() == reflect.Struct:
			tomlKeys(ft, key+".", set, text)
		}
	}
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

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

// valueAt is the TOML value in data at line and column (1-based, in
// bytes), at most 80 bytes of it, for an error quoting it: a string to
// its closing quote, an array or inline table to the end of the line, a
// number or boolean to the next separator; "" when the position is not
// in data or is a line's start (where go-toml puts some errors).
func (x *keyIndex) valueAt(data []byte, line, col int) string {
	if x == nil || line < 1 || line > len(x.nl)+1 || col < 2 {
		return ""
	}
	start, end := 0, len(data)
	if line > 1 {
		start = x.nl[line-2] + 1
	}
	if line <= len(x.nl) {
		end = x.nl[line-1]
	}
	start += col - 1
	if start >= end {
		return ""
	}
	text := strings.TrimRight(string(data[start:end]), " \t\r")
	if text == "" {
		return ""
	}
	switch q := text[0]; q {
	case '"', '\'':
		for i := 1; i < len(text); i++ {
			if text[i] == '\\' && q == '"' {
				i++
			} else if text[i] == q {
				text = text[:i+1]
				break
			}
		}
	case '[', '{':
	default:
		if i := strings.IndexAny(text, " \t,]}#"); i > 0 {
			text = text[:i]
		}
	}
	if len(text) > 80 {
		return strings.ToValidUTF8(text[:80], "") + "..."
	}
	return text
}

// nestedArray is the first array element under key ("seeds[1]" of key
// "seeds", "storage.dirs[0]" of key "storage") that is an array itself,
// and its line; "" when there is none.
func (x *keyIndex) nestedArray(key string) (string, int) {
	if x == nil {
		return "", 0
	}
	for _, k := range x.elems {
		if len(k) > len(key) && strings.HasPrefix(k, key) && (k[len(key)] == '[' || k[len(key)] == '.') && x.kind[k] == unstable.Array {
			return k, x.lineFor(k)
		}
	}
	return "", 0
}

// keyAt is the innermost key whose text holds the byte at line and column
// (1-based): "cluster.nodes[0].udp" in "nodes = [{id = 0, udp = 5}]",
// "seeds[1]" in "seeds = ["a", 1]". Else it is the first key on line, ""
// if none.
func (x *keyIndex) keyAt(line, col int) string {
	if x == nil {
		return ""
	}
	if line >= 1 && line <= len(x.nl)+1 && col >= 1 {
		off := col - 1
		if line > 1 {
			off += x.nl[line-2] + 1
		}
		key := ""
		for _, s := range x.spans {
			// Spans come in order, each key's before its elements'.
			if s.start <= off && off < s.end {
				key = s.key
			}
		}
		if key != "" {
			return key
		}
	}
	return x.key[line]
}
