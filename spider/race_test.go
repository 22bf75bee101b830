//go:build race

package spider

// raceDetector: tests built with -race scale heavy work down.
const raceDetector = true
