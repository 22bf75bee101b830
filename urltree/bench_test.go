package urltree

import (
	"math/rand/v2"
	"testing"

	"github.com/kspider/kspider/tools/dataset"
	"github.com/kspider/kspider/tools/testenv"
)

// benchTree loads the first n URLs of the shared data set into a tree.
func benchTree(b *testing.B, n int) (*Tree, [][]byte) {
	b.Helper()
	path := testenv.Data(b, dataset.URLsWeb)
	tr, err := Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tr.Close() })
	var urls [][]byte
	if _, err := dataset.Lines(path, n, func(l []byte) error {
		u := append([]byte(nil), l...)
		if _, added, err := tr.Add(u); err != nil {
			return err
		} else if added {
			urls = append(urls, u)
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	return tr, urls
}

const benchURLs = 1 << 20

func BenchmarkFind(b *testing.B) {
	tr, urls := benchTree(b, benchURLs)
	order := rand.New(rand.NewPCG(1, 1)).Perm(len(urls))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := tr.Find(urls[order[i%len(order)]]); !ok {
			b.Fatal("lost a URL")
		}
	}
}

func BenchmarkGet(b *testing.B) {
	tr, urls := benchTree(b, benchURLs)
	order := rand.New(rand.NewPCG(1, 1)).Perm(len(urls))
	var buf []byte
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf, _ = tr.Get(uint32(order[i%len(order)]), buf[:0])
	}
}

func BenchmarkAdd(b *testing.B) {
	path := testenv.Data(b, dataset.URLsWeb)
	var urls [][]byte
	dataset.Lines(path, benchURLs, func(l []byte) error {
		urls = append(urls, append([]byte(nil), l...))
		return nil
	})
	b.ResetTimer()
	for i := 0; i < b.N; {
		b.StopTimer()
		tr, err := Open(b.TempDir(), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for _, u := range urls {
			if i == b.N {
				break
			}
			tr.Add(u)
			i++
		}
		b.StopTimer()
		tr.Close()
		b.StartTimer()
	}
}
