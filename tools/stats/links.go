package stats

import (
	"net/http"

	"github.com/kspider/kspider/spider/links"
)

// CrawlerLinks returns a LinkFunc over the crawler's own extractor
// (spider/links) that counts as outgoing links what a crawler follows to
// other documents: hyperlinks (a, area), frames and iframes, meta refresh and
// the Location, Link and Refresh headers; not images, scripts or style sheets,
// which the thesis's link counts leave out too. Links are not capped.
func CrawlerLinks() LinkFunc {
	var x links.Extractor
	var out []string
	return func(body []byte, pageURL string, header http.Header) ([]string, error) {
		res, err := x.Extract(body, pageURL, header, links.Options{MaxLinks: -1})
		if err != nil {
			return nil, err
		}
		out = out[:0]
		for _, l := range res.Links {
			switch l.Element {
			case "a", "area", "frame", "iframe", "meta", links.ElementHeader:
				out = append(out, l.URL)
			}
		}
		return out, nil
	}
}
