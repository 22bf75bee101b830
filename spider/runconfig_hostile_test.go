package spider

import (
	"context"
	"strings"
	"testing"
	"unicode/utf16"
)

// utf16LE is text as Windows Notepad saves it as "Unicode": a byte order
// mark, then each UTF-16 unit little-endian.
func utf16LE(text string) string {
	b := []byte{0xff, 0xfe}
	for _, u := range utf16.Encode([]rune(text)) {
		b = append(b, byte(u), byte(u>>8))
	}
	return string(b)
}

// TestRunConfigUTF16: a config or seeds file saved as UTF-16 (Notepad's
// "Unicode") was refused with "invalid character at start of key: U+00FF
// 'ÿ'", and a seeds file's every line was "not an absolute http(s) URL",
// characters the operator cannot see; now each is refused naming the file
// and what to do.
func TestRunConfigUTF16(t *testing.T) {
	dir := t.TempDir()
	for _, text := range []string{utf16LE("fetchers = 3\n"), "\xfe\xff\x00f\x00=\x003\x00\n"} {
		path := writeFile(t, dir, "crawl.toml", text)
		if _, err := LoadRunConfig(context.Background(), path); err == nil || err.Error() != path+" is UTF-16 text (it starts with a UTF-16 byte order mark): save it as UTF-8" {
			t.Errorf("config %q: %v", text, err)
		}
	}
	seeds := writeFile(t, dir, "seeds.txt", utf16LE("https://a.example/\r\nhttps://b.example/\r\n"))
	c := Defaults()
	c.SeedsFile = seeds
	if got, err := c.LoadSeeds(context.Background()); err == nil || err.Error() != "seeds_file: "+seeds+" is UTF-16 text (it starts with a UTF-16 byte order mark): save it as UTF-8" {
		t.Errorf("seeds file in UTF-16: %q, %v", got, err)
	}
}

// TestRunConfigLongValues: a value of megabytes (a contact, a duration, an
// unknown key, a seed of a seeds file) was quoted whole in its error, a
// line of 3 MB on the operator's terminal for each (up to 50 of them);
// now an error's text is at most maxErrorText bytes (and a marker), its
// start (file, line, key) and end (what is wrong) kept.
func TestRunConfigLongValues(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	for _, c := range []struct{ doc, start, end string }{
		{"contact = \"" + long + "\"\n", "big.toml:1: contact: \"xxx", "\" is not an http(s) or mailto URL"},
		{"[politeness]\ndelay = \"" + long + "s\"\n", "big.toml:2:9: politeness.delay: not a duration", "xxxs\""},
		{long + " = 1\n", "big.toml:1: unknown key xxx", "xxx"},
		{"seeds = [\"http://a.example/\", \"" + long + "\"]\n", "big.toml:1: seeds[1]: \"xxx", "\" is not an absolute http(s) URL"},
	} {
		_, err := ParseRunConfig([]byte(c.doc), "big.toml")
		if err == nil {
			t.Fatalf("%.40q: no error", c.doc)
		}
		msg := err.Error()
		if len(msg) > maxErrorText+40 || !strings.HasPrefix(msg, c.start) || !strings.HasSuffix(msg, c.end) || !strings.Contains(msg, " bytes ...] ") {
			t.Errorf("%.40q: error of %d bytes: %.200s ... %s", c.doc, len(msg), msg, msg[max(0, len(msg)-100):])
		}
	}
	dir := t.TempDir()
	c := Defaults()
	c.SeedsFile = writeFile(t, dir, "seeds.txt", "a.example/"+strings.Repeat("x", 60000)+"\n")
	if _, err := c.LoadSeeds(context.Background()); err == nil || len(err.Error()) > maxErrorText+40 || !strings.HasSuffix(err.Error(), "is not an absolute http(s) URL") {
		t.Errorf("seeds file of a long bad line: %.200v", err)
	}
}

// TestRunConfigWrongTypeNamesValue: a value of the wrong type was said
// 'fetchers: a TOML string where an integer is wanted', by line and
// column only; now the value is quoted too.
func TestRunConfigWrongTypeNamesValue(t *testing.T) {
	for doc, want := range map[string]string{
		"fetchers = \"300\"\n":                         `x.toml:1:12: fetchers: a TOML string where an integer is wanted: "300"`,
		"fetchers = 'x\"y' # no\n":                     `x.toml:1:12: fetchers: a TOML string where an integer is wanted: 'x"y'`,
		"[limits]\nmax_body = 1.5 # half\n":            `x.toml:2:12: limits.max_body: a TOML float where an integer is wanted: 1.5`,
		"fetchers = true\n":                            `x.toml:1:12: fetchers: a TOML boolean where an integer is wanted: true`,
		"seeds = [1, 2]\n":                             `x.toml:1:10: seeds[0]: a TOML integer where a string is wanted: 1`,
		"status = 7411\n":                              `x.toml:1:10: status: a TOML integer where a string is wanted: 7411`,
		"[[cluster.nodes]]\nid = \"0\"\n":              `x.toml:2:6: cluster.nodes[0].id: a TOML string where an integer is wanted: "0"`,
		"seeds = \"" + strings.Repeat("a", 200) + "\"": `x.toml:1:9: seeds: a TOML string where a list of strings is wanted: "` + strings.Repeat("a", 79) + `...`,
	} {
		if _, err := ParseRunConfig([]byte(doc), "x.toml"); err == nil || err.Error() != want {
			t.Errorf("%.40q: %v\nwant %s", doc, err, want)
		}
	}
}

// TestRunConfigTableForTextValue: a table where a duration or a date-time
// is wanted ("[politeness.delay]", "delay = {}") was taken without a word
// and the default kept: 'init --check' said ok of a config that does not
// say what the operator meant. Now it is an error naming line and key.
func TestRunConfigTableForTextValue(t *testing.T) {
	for doc, want := range map[string]string{
		"[politeness.delay]\n":          `x.toml:1: politeness.delay: a TOML table where a duration string such as "250ms" is wanted`,
		"[politeness]\ndelay = {}\n":    `x.toml:2: politeness.delay: a TOML inline table where a duration string such as "250ms" is wanted`,
		"[cluster.epoch]\n":             `x.toml:1: cluster.epoch: a TOML table where a date-time is wanted`,
		"[cluster]\nepoch = {}\n":       `x.toml:2: cluster.epoch: a TOML inline table where a date-time is wanted`,
		"limits.idle_timeout = {}\n":    `x.toml:1: limits.idle_timeout: a TOML inline table where a duration`,
		"[limits.response_timeout]\n\n": `x.toml:1: limits.response_timeout: a TOML table where a duration`,
	} {
		if _, err := ParseRunConfig([]byte(doc), "x.toml"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v\nwant %s", doc, err, want)
		}
	}
}

// TestRunConfigNestedArrayLine: an array inside a list of strings or of
// nodes has no bytes of its own for go-toml to point at: the error said
// line 1, column 1, and named the key there ("x.toml:1:1: scope: ..." of
// a mistake on line 2 in scope.include). Now it names the element and its
// line.
func TestRunConfigNestedArrayLine(t *testing.T) {
	for doc, want := range map[string]string{
		"[scope]\ninclude = [[\"a\"]]\n":          `x.toml:2: scope.include[0]: a TOML array where a string is wanted`,
		"\n\nseeds = [\n\"a\",\n[\"b\"]]\n":       `x.toml:5: seeds[1]: a TOML array where a string is wanted`,
		"seeds = [[]]\n":                          `x.toml:1: seeds[0]: a TOML array where a string is wanted`,
		"[cluster]\nnodes = [\n[1]]\n":            `x.toml:3: cluster.nodes[0]: a TOML array where a table is wanted`,
		"storage = {dirs = [\n\"a\", [\"b\"]]}\n": `x.toml:2: storage.dirs[1]: a TOML array where a string is wanted`,
	} {
		if _, err := ParseRunConfig([]byte(doc), "x.toml"); err == nil || err.Error() != want {
			t.Errorf("%q: %v\nwant %s", doc, err, want)
		}
	}
}

// TestRunConfigErrorNamesInnerKey: go-toml's error about a value inside an
// inline table or a one-line array was put under the first key of its
// line: "storage: a TOML integer where a string is wanted" of storage =
// {dirs = [1]}, "cluster.nodes" of the udp of a node. Now it names the
// key or element whose text holds the error's column.
func TestRunConfigErrorNamesInnerKey(t *testing.T) {
	for doc, want := range map[string]string{
		"storage = {dirs = [1]}\n":                                   `x.toml:1:20: storage.dirs[0]: a TOML integer where a string is wanted: 1`,
		"[cluster]\nnodes = [{id = 0, udp = 5}]\n":                   `x.toml:2:25: cluster.nodes[0].udp: a TOML integer where a string is wanted: 5`,
		"[cluster]\nnodes = [{id = 0, udp = \"x\"}, {id = \"1\"}]\n": `x.toml:2:37: cluster.nodes[1].id: a TOML string where an integer is wanted: "1"`,
		"seeds = [\"https://a.example/\", 1]\n":                      `x.toml:1:32: seeds[1]: a TOML integer where a string is wanted: 1`,
		"fetchers = 1\nfetchers = 2\n":                               `x.toml:2:1: fetchers: key fetchers is already defined`,
	} {
		if _, err := ParseRunConfig([]byte(doc), "x.toml"); err == nil || err.Error() != want {
			t.Errorf("%q: %v\nwant %s", doc, err, want)
		}
	}
}

// TestRunConfigTableHeaderForValue: a table header where a value is wanted
// ("[fetchers]", "[[limits]]") was refused in go-toml's words, which name
// Go types: "cannot store a table in a int". Now in the config's terms.
func TestRunConfigTableHeaderForValue(t *testing.T) {
	for doc, want := range map[string]string{
		"[fetchers]\n":           `x.toml:1:2: fetchers: a TOML table where an integer is wanted`,
		"[scope.reject_query]\n": `x.toml:1:2: scope.reject_query: a TOML table where true or false is wanted`,
		"[[fetchers]]\n":         `x.toml:1:3: fetchers[0]: a TOML array of tables where an integer is wanted`,
		"[[limits]]\n":           `x.toml:1:3: limits[0]: a TOML array of tables where a table is wanted`,
		"[user_agent]\n":         `x.toml:1:2: user_agent: a TOML table where a string is wanted`,
	} {
		if _, err := ParseRunConfig([]byte(doc), "x.toml"); err == nil || err.Error() != want {
			t.Errorf("%q: %v\nwant %s", doc, err, want)
		}
	}
}

// TestRunConfigPathNUL: a path holding a NUL byte was said ok, and the run
// failed at its start ("lock: mkdir x\x00y: invalid argument", the NUL
// printed raw), naming no key. Now it is an error naming the key.
func TestRunConfigPathNUL(t *testing.T) {
	for doc, want := range map[string]string{
		"data_dir = \"x\\u0000y\"\n":                        `x.toml:1: data_dir: "x\x00y" holds a NUL byte, which no path can`,
		"seeds_file = \"s\\u0000\"\n":                       `x.toml:1: seeds_file: "s\x00" holds a NUL byte`,
		"[storage]\ndirs = [\"a\", \"\\u0000b\"]\n":         `x.toml:2: storage.dirs[1]: "\x00b" holds a NUL byte`,
		"[cluster]\nsecret_file = \"/etc/\\u0000secret\"\n": `x.toml:2: cluster.secret_file: "/etc/\x00secret" holds a NUL byte`,
	} {
		if _, err := ParseRunConfig([]byte(doc), "x.toml"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v\nwant %s", doc, err, want)
		}
	}
}

// TestRunConfigKeyControlBytes: an unknown key was printed as written, and
// TOML's quoted keys hold anything: "\u001b[2J" = 1 cleared the terminal
// of whoever ran 'init --check', U+202E turned the text after it around.
// Now such bytes are escaped as Go quotes them.
func TestRunConfigKeyControlBytes(t *testing.T) {
	for doc, want := range map[string]string{
		"\"\\u001b[2J\" = 1\n":                           `x.toml:1: unknown key \x1b[2J`,
		"[limits]\n\"a\\u0000b\" = 1\n":                  `x.toml:2: unknown key limits.a\x00b`,
		"'\u202e' = 1\n":                                 `x.toml:1: unknown key \u202e`,
		"\"\\u001b]0;x\\u0007\" = 1\nfetchers = \"x\"\n": `x.toml:1: unknown key \x1b]0;x\a`,
	} {
		_, err := ParseRunConfig([]byte(doc), "x.toml")
		if err == nil || !strings.Contains(err.Error(), want) || strings.ContainsAny(err.Error(), "\x00\x07\x1b\u202e") {
			t.Errorf("%q: %q\nwant %s", doc, err, want)
		}
	}
	// go-toml's own message quotes the key of a duplicate.
	_, err := ParseRunConfig([]byte("\"\\u001b[2J\" = 1\n\"\\u001b[2J\" = 2\n"), "x.toml")
	if err == nil || !strings.Contains(err.Error(), `x.toml:2:1: \x1b[2J: key \x1b[2J is already defined`) || strings.Contains(err.Error(), "\x1b") {
		t.Errorf("a duplicate key of control bytes: %q", err)
	}
}

// TestRunConfigUserAgentTooLong: a User-Agent of 70,000 bytes was said ok;
// the test web answered every request 431, each stored as the page, and
// the run ended "0 errors", exit 0. Now user_agent and contact that make
// a header over maxUserAgentHeader are an error naming the longer key.
func TestRunConfigUserAgentTooLong(t *testing.T) {
	long := strings.Repeat("a", 70000)
	for doc, want := range map[string]string{
		"user_agent = \"" + long + "\"\n":                          "x.toml:1: user_agent: user_agent and contact make a User-Agent header of 70038 bytes, more than 1024",
		"contact = \"https://a.example/" + long + "\"\n":           "x.toml:1: contact: user_agent and contact make a User-Agent header of 70033 bytes",
		"user_agent = \"" + strings.Repeat("a", 1000) + "/1.0\"\n": "x.toml:1: user_agent: user_agent and contact make a User-Agent header of 1042 bytes",
	} {
		if _, err := ParseRunConfig([]byte(doc), "x.toml"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.60q: %.300v\nwant %s", doc, err, want)
		}
	}
	if _, err := ParseRunConfig([]byte("user_agent = \"MyCrawler/1.0\"\ncontact = \"mailto:me@example.org\"\n"), "x.toml"); err != nil {
		t.Errorf("a usual User-Agent: %v", err)
	}
}
