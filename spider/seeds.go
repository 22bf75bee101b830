package spider

import (
	"fmt"

	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/spider/urlnorm"
)

// CheckSeeds reports the first of seeds that cannot start a crawl: not an
// absolute http(s) URL, one without a canonical form, or one whose host
// and port the scheduler cannot take (the node would drop it).
func CheckSeeds(seeds []string) error {
	for _, s := range seeds {
		if err := checkSeed(s); err != nil {
			return err
		}
		c, err := urlnorm.Canonical(nil, s, nil)
		if err != nil {
			return fmt.Errorf("%q: %v", s, err)
		}
		if k := hostKey(c); len(k) > scheduler.MaxHostLen {
			return fmt.Errorf("%q: its host and port (%d bytes) are longer than the %d the scheduler takes", s, len(k), scheduler.MaxHostLen)
		}
	}
	return nil
}
