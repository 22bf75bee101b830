package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kspider/kspider/tools/warc"
)

// The offline tools over a store whose files (segments, index, STORE) are damaged
// at random positions or cut short: each must end, within a bound, exit 0 or 1 (never a
// panic), exit 0 only with every page read, and never pass damaged bytes
// off as a page: every record export writes, and every page get prints, is
// a page as it was stored. Test only.
func TestOfflineToolsOnRandomDamage(t *testing.T) {
	const pages = 300
	orig := getTestStore(t, pages)
	body := func(i int) string { return fmt.Sprintf("<html><body>page %d</body></html>\n", i) }
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for trial := range 20 {
		var dirs, files, args []string
		for _, o := range orig {
			d := t.TempDir()
			ents, err := os.ReadDir(o)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				b, err := os.ReadFile(filepath.Join(o, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(d, e.Name()), b, 0o644); err != nil {
					t.Fatal(err)
				}
				if strings.HasSuffix(e.Name(), ".seg") || e.Name() == "url.idx" || e.Name() == "STORE" {
					files = append(files, filepath.Join(d, e.Name()))
				}
			}
			dirs, args = append(dirs, d), append(args, "--data", d)
		}
		file := files[rng.IntN(len(files))]
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var what string
		if rng.IntN(3) == 0 { // cut short, as a disk that lost its tail
			n := rng.IntN(len(data))
			data = data[:n]
			what = fmt.Sprintf("trial %d: %s cut at %d", trial, filepath.Base(file), n)
		} else {
			var where []int
			for range 1 + rng.IntN(8) {
				off := rng.IntN(len(data))
				data[off] ^= byte(1 + rng.IntN(255))
				where = append(where, off)
			}
			what = fmt.Sprintf("trial %d: %s damaged at %v", trial, filepath.Base(file), where)
		}
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}

		runBounded := func(args ...string) (int, string, string) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var stdout, stderr bytes.Buffer
			code := run(ctx, env{stdout: &stdout, stderr: &stderr}, args)
			if ctx.Err() != nil {
				t.Fatalf("%s: %s did not end within 2 minutes", what, args[0])
			}
			if code != 0 && code != 1 {
				t.Fatalf("%s: %s: exit %d\n%s", what, args[0], code, stderr.String())
			}
			return code, stdout.String(), stderr.String()
		}

		out := filepath.Join(t.TempDir(), "x.warc.gz")
		code, _, errOut := runBounded(append([]string{"export", "warc", "--allow-damage", "--out", out}, args...)...)
		f, err := os.Open(out)
		if code == 1 { // a store that cannot be read at all (its STORE damaged): said, nothing written
			if err == nil || errOut == "" {
				t.Fatalf("%s: export failed, wrote %s anyway (%v) and said %q", what, out, err, errOut)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		damaged := strings.Contains(errOut, "store damaged")
		r, err := warc.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		exported := 0
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: the export does not read back: %v", what, err)
			}
			if rec.Get("WARC-Type") != warc.TypeResponse {
				continue
			}
			var i int
			if _, err := fmt.Sscanf(rec.Get("WARC-Target-URI"), "http://example.test/%d.html", &i); err != nil {
				t.Fatalf("%s: a record of URL %q, which was never stored", what, rec.Get("WARC-Target-URI"))
			}
			if _, b, _ := bytes.Cut(rec.Block, []byte("\r\n\r\n")); string(b) != body(i) {
				t.Fatalf("%s: the record of page %d holds %q, stored as %q", what, i, b, body(i))
			}
			exported++
		}
		f.Close()
		if exported != pages && !damaged {
			t.Fatalf("%s: %d of %d pages exported and no damage said:\n%s", what, exported, pages, errOut)
		}

		code, jsonOut, errOut := runBounded(append([]string{"stats", "--json"}, args...)...)
		var rep struct{ Summary struct{ URLs int } }
		if err := json.Unmarshal([]byte(jsonOut), &rep); err != nil {
			t.Fatalf("%s: stats --json: %v\n%s", what, err, errOut)
		}
		if code == 0 && rep.Summary.URLs != pages || code == 1 && !strings.Contains(errOut, "store damaged") {
			t.Fatalf("%s: stats: exit %d with %d of %d pages\n%s", what, code, rep.Summary.URLs, pages, errOut)
		}

		id := 1 + rng.IntN(pages)
		code, got, errOut := runBounded(append(append([]string{"get"}, args...), fmt.Sprint(id))...)
		if code == 0 && got != body(id) {
			t.Fatalf("%s: get %d printed %q, stored as %q", what, id, got, body(id))
		}
		if code == 1 && errOut == "" {
			t.Fatalf("%s: get %d: exit 1 saying nothing", what, id)
		}
		for _, d := range dirs {
			os.RemoveAll(d)
		}
	}
}
