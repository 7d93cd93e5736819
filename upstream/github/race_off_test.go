//go:build !race

package github

const raceEnabled = false
