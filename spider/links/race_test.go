//go:build race

package links

// raceEnabled: the race detector makes the tokenizer that the scanner is
// compared with about ten times slower, so the real-page comparison reads
// a sample of the pages.
const raceEnabled = true
