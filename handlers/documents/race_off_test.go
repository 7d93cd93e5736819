//go:build !race

package documents

const raceEnabled = false
