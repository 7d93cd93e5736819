//go:build !race

package evidence_test

const raceEnabled = false
