package dataset

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
)

func TestLinesPlainAndZstd(t *testing.T) {
	dir := t.TempDir()
	text := "http://a.example/\r\n\nhttp://b.example/x\n\nhttp://c.example/"
	plain := filepath.Join(dir, "u.txt")
	if err := os.WriteFile(plain, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	enc, _ := zstd.NewWriter(nil)
	zst := filepath.Join(dir, "u.txt.zst")
	if err := os.WriteFile(zst, enc.EncodeAll([]byte(text), nil), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{plain, zst} {
		var got []string
		st, err := Lines(p, 0, func(l []byte) error { got = append(got, string(l)); return nil })
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"http://a.example/", "http://b.example/x", "http://c.example/"}
		if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || st.Blank != 2 || st.Lines != 5 {
			t.Errorf("%s: got %q, stats %+v", p, got, st)
		}
		got = nil
		if _, err := Lines(p, 2, func(l []byte) error { got = append(got, string(l)); return nil }); err != nil || len(got) != 2 {
			t.Errorf("%s limit 2: got %q, %v", p, got, err)
		}
	}
	if _, err := Lines(filepath.Join(dir, "missing"), 0, func([]byte) error { return nil }); err == nil {
		t.Error("missing file: no error")
	}
	bad := filepath.Join(dir, "bad.zst")
	os.WriteFile(bad, []byte("not zstd at all"), 0o644)
	if _, err := Lines(bad, 0, func([]byte) error { return nil }); err == nil {
		t.Error("corrupt .zst: no error")
	}
}
