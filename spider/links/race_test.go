//go:build race

package links

// raceEnabled: the race detector makes large allocations cost more than
// in proportion to their size, so TestLinearTime allows a wider margin.
const raceEnabled = true
