//go:build race

package forgejo_test

// raceEnabled says the race detector is on: instrumented code makes
// streaming 256 MiB take minutes, so memory tests use a smaller diff.
const raceEnabled = true
