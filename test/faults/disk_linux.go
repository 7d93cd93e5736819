package main

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// fullDiskBytes is the file size past which the full disk's writes fail:
// below SQLite's first WAL frame, so no write of the database fits.
const fullDiskBytes = 4096

// fullDisk lowers the soft RLIMIT_FSIZE of process pid to fullDiskBytes
// for d, then puts it back: meanwhile every write that would grow a file
// of the gateway past it fails with EFBIG, as on a full disk (the Go
// runtime ignores SIGXFSZ). Lowering a soft limit and raising it again up
// to the hard limit needs no privilege.
func fullDisk(pid int, d time.Duration) error {
	var was unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, nil, &was); err != nil {
		return fmt.Errorf("read the SQLite gateway's file size limit: %w", err)
	}
	full := unix.Rlimit{Cur: fullDiskBytes, Max: was.Max}
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &full, nil); err != nil {
		return fmt.Errorf("fill the SQLite gateway's disk: %w", err)
	}
	time.Sleep(d)
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &was, nil); err != nil {
		return fmt.Errorf("free the SQLite gateway's disk: %w", err)
	}
	return nil
}
