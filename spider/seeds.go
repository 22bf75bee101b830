package spider

import (
	"fmt"

	"github.com/kspider/kspider/spider/urlnorm"
)

// CheckSeeds reports the first of seeds that cannot start a crawl: not an
// absolute http(s) URL, or one without a canonical form (the node would
// drop it).
func CheckSeeds(seeds []string) error {
	for _, s := range seeds {
		if err := checkSeed(s); err != nil {
			return err
		}
		if _, err := urlnorm.Canonical(nil, s, nil); err != nil {
			return fmt.Errorf("%q: %v", s, err)
		}
	}
	return nil
}
