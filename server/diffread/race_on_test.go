//go:build race

package diffread_test

// raceEnabled says the race detector is on: it makes each page about
// seven times slower, so the memory test reads fewer.
const raceEnabled = true
