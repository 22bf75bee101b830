package spider

import (
	"context"
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
