//go:build !race

package toolset

const raceEnabled = false
