//go:build !linux

package main

import (
	"errors"
	"time"
)

// fullDisk needs Linux's prlimit(2) to lower another process's file size
// limit.
func fullDisk(int, time.Duration) error {
	return errors.New("the full-disk fault needs Linux (prlimit)")
}
