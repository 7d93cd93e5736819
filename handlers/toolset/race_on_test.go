//go:build race

package toolset

// raceEnabled says the race detector is on: it makes sync.Pool drop
// what is put back and instruments code so that values escape, so
// allocation figures mean nothing and their tests are skipped.
const raceEnabled = true
