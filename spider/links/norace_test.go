//go:build !race

package links

const raceEnabled = false
