package spider

import (
	"fmt"
	"strings"

	"github.com/kspider/kspider/collector"
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
		if body, err = collector.DecodeBody(collector.ContentCoding(h), p.Body, maxReexpandBody); err != nil {
			return pl, fmt.Errorf("page %d (%s): %w", id, p.URL, err)
		}
	}
	pl = n.extractLinks(id, 0, p.URL, body, h, redirect)
	// A redirect's target read back counts its hops as when it was
	// fetched: counted from 0, a chain cut at the limit went 10 hops
	// further with every pass over the store.
	n.followRedirect(id, p.URL, redirect, &pl)
	return pl, nil
}
