package main

import (
	"testing"

	"github.com/kspider/kspider/communicator"
)

// The summary's line for a peer that is down counts the URLs waiting for
// it, not the hellos and rounds beside them: a peer gone with only its
// hello queued said "1 URLs wait for it (1 in the spill file)".
func TestDownLineLeavesOutControl(t *testing.T) {
	for _, tc := range []struct {
		p    communicator.PeerStats
		want string
	}{
		{communicator.PeerStats{ID: 1, Down: true, SpillItems: 1, ControlItems: 1, SpillControlItems: 1},
			"node 1 is down: 0 URLs wait for it (0 in the spill file)"},
		{communicator.PeerStats{ID: 2, Down: true, Queued: 3, UnackedItems: 4, SpillItems: 10, ControlItems: 3, SpillControlItems: 2},
			"node 2 is down: 14 URLs wait for it (8 in the spill file)"},
	} {
		if got := downLine(tc.p); got != tc.want {
			t.Errorf("downLine(%+v) = %q; want %q", tc.p, got, tc.want)
		}
	}
}
