package storage

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// Pages encoded ahead (Encode), their buffers overwritten at once, then
// put (PutEncoded) from many goroutines: every codec stores them as they
// were when encoded, beside pages Put the usual way.
func TestEncodeThenPutEncoded(t *testing.T) {
	for _, codec := range Codecs() {
		t.Run(codec, func(t *testing.T) {
			dirs := []string{t.TempDir(), t.TempDir()}
			s, err := Open(Config{Dirs: dirs, Codec: codec, Compressors: 2, SegmentSize: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			const n = 400
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for g := range 8 {
				wg.Go(func() {
					for id := uint64(g); id < n; id += 8 {
						p := testPage(id)
						if id%4 == 0 { // some the usual way
							if err := s.Put(context.Background(), p); err != nil {
								errs <- err
								return
							}
							continue
						}
						e, err := s.Encode(p)
						if err != nil {
							errs <- err
							return
						}
						// The caller reuses the page's buffers at once.
						clear(p.Body)
						clear(p.Header)
						if err := s.PutEncoded(context.Background(), e); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			checkStore(t, dirs, 0, n)
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	s, err := Open(Config{Dirs: []string{t.TempDir()}, MaxURLID: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Encode(testPage(11)); err == nil {
		t.Fatal("Encode of an id above MaxURLID: no error")
	}
	if _, err := s.Encode(&Page{URLID: 1, URL: "http://a.example/", Status: -1}); err == nil {
		t.Fatal("Encode of a bad page: no error")
	}
	if err := s.PutEncoded(context.Background(), Encoded{}); err == nil {
		t.Fatal("PutEncoded of a zero Encoded: no error")
	}
	e, err := s.Encode(testPage(1))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// A cancelled context may or may not win against a free pool; either
	// way nothing is outstanding afterwards, so Close returns.
	if err := s.PutEncoded(ctx, e); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Encode(testPage(2)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Encode after Close = %v, want ErrClosed", err)
	}
	e2 := Encoded{r: new(record)}
	if err := s.PutEncoded(context.Background(), e2); !errors.Is(err, ErrClosed) {
		t.Fatalf("PutEncoded after Close = %v, want ErrClosed", err)
	}
}

// The free pool recycles records without their buffers, whichever way
// they went (Put, Encode and PutEncoded), with every codec.
func TestFreePoolKeepsNoBuffer(t *testing.T) {
	for _, codec := range Codecs() {
		t.Run(codec, func(t *testing.T) {
			dirs := []string{t.TempDir()}
			s, err := Open(Config{Dirs: dirs, Codec: codec, Compressors: 1})
			if err != nil {
				t.Fatal(err)
			}
			const n = 100
			for id := range uint64(n) {
				if id%2 == 0 {
					if err := s.Put(context.Background(), testPage(id)); err != nil {
						t.Fatal(err)
					}
					continue
				}
				e, err := s.Encode(testPage(id))
				if err != nil {
					t.Fatal(err)
				}
				if err := s.PutEncoded(context.Background(), e); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			for len(s.free) > 0 {
				if r := <-s.free; r.buf != nil {
					t.Fatalf("a free record keeps a buffer of %d bytes", cap(r.buf))
				}
			}
			checkStore(t, dirs, 0, n)
		})
	}
}
