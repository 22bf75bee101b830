package spider

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"

	"github.com/kspider/kspider/storage"
)

// maxReexpandBody bounds the decoded body of a stored page read back for
// its links.
const maxReexpandBody = 16 << 20

// storedLinks reads page id back from the store and extracts its links
// again, for a page found shallower than it was fetched at when its links
// are no longer in memory (fetched in an earlier run). The writer calls it;
// the reader is opened on first use.
func (n *Node) storedLinks(id uint32) (pageLinks, error) {
	if n.reader == nil {
		r, err := storage.OpenReader(n.cfg.StorageDirs)
		if err != nil {
			return pageLinks{}, err
		}
		n.reader = r
	}
	p, err := n.reader.Get(uint64(id))
	if err != nil {
		return pageLinks{}, err
	}
	h, err := p.ParseHeader()
	if err != nil {
		return pageLinks{}, fmt.Errorf("page %d (%s): %w", id, p.URL, err)
	}
	pl := pageLinks{parent: id}
	redirect := p.Status/100 == 3
	html := p.Status/100 == 2 && strings.Contains(strings.ToLower(h.Get("Content-Type")), "html")
	if !html && !redirect {
		return pl, nil
	}
	var body []byte
	if html {
		if body, err = decodeBody(h.Get("Content-Encoding"), p.Body); err != nil {
			return pl, fmt.Errorf("page %d (%s): %w", id, p.URL, err)
		}
	}
	return n.extractLinks(id, 0, p.URL, body, h, redirect), nil
}

// decodeBody undoes a stored body's content coding, at most
// maxReexpandBody bytes of output.
func decodeBody(coding string, b []byte) ([]byte, error) {
	var r io.Reader
	switch strings.ToLower(strings.TrimSpace(coding)) {
	case "", "identity":
		return b, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		r = zr
	case "deflate":
		if zr, err := zlib.NewReader(bytes.NewReader(b)); err == nil {
			r = zr
		} else {
			r = flate.NewReader(bytes.NewReader(b))
		}
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(b), zstd.WithDecoderMaxWindow(8<<20), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		r = zr
	default:
		return nil, fmt.Errorf("unknown content coding %q", coding)
	}
	out, err := io.ReadAll(io.LimitReader(r, maxReexpandBody))
	if err != nil && len(out) == 0 {
		return nil, err
	}
	return out, nil // a cut stream keeps what decoded, as the collector does
}
