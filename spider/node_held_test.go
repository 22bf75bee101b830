package spider

import (
	"testing"
	"time"
)

// Pages whose records pass heldSyncBytes in one list (40 incompressible
// pages of 64 KiB behind one index, lists of 20) are all stored once, and
// the bytes counted as waiting for their links' sync go back to zero.
func TestNodeHeldBytes(t *testing.T) {
	const pages, size = 40, 64 << 10
	cfg := streamConfig(t, streamWeb(t, pages, size, nil)[:1]) // node_result_test.go; the index alone as seed
	cfg.SyncInterval = time.Hour                               // only the held bytes, a waiting page and idleness ask for syncs
	_, _, held := crawlStream(t, cfg, pages+1)
	if held != 0 {
		t.Errorf("%d bytes still counted as waiting for a sync after the crawl", held)
	}
}
