//go:build !race

package forgejo_test

const raceEnabled = false
