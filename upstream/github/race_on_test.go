//go:build race

package github

// raceEnabled says the race detector is on: it makes sync.Pool drop
// what is put back and instruments code so that values escape, so
// allocation counts mean nothing and their tests are skipped.
const raceEnabled = true
