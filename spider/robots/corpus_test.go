package robots

import (
	"archive/tar"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/kspider/kspider/tools/dataset"
	"github.com/kspider/kspider/tools/testenv"
)

// corpusFile is one robots.txt of the shared corpus.
type corpusFile struct {
	index int
	name  string
	body  []byte
}

// eachCorpusFile streams the robots.txt corpus (tar in zstd) and calls fn for
// every file whose index keep accepts (nil: all), without unpacking to disk.
func eachCorpusFile(t testing.TB, keep func(i int) bool, fn func(corpusFile)) int {
	t.Helper()
	path := testenv.Data(t, dataset.RobotsCorpus)
	r, err := dataset.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tr := tar.NewReader(r)
	n := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Typeflag != tar.TypeReg || !strings.HasPrefix(h.Name, "robots/") {
			continue
		}
		i := n
		n++
		if keep != nil && !keep(i) {
			continue
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %s: %v", path, h.Name, err)
		}
		fn(corpusFile{index: i, name: h.Name, body: body})
	}
	return n
}
