//go:build race

package evidence_test

// raceEnabled says the race detector is on: instrumented base64 makes the
// 256 MiB memory test take about a minute.
const raceEnabled = true
