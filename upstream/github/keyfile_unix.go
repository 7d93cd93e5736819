//go:build unix

package github

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// keyFileProtected refuses a key file another user could read, change or
// replace: one whose mode grants group or others any permission (0600 and
// 0400 pass), or that the gateway's effective user does not own (the
// owner decides the mode, and so who reads the key).
func keyFileProtected(path string, fi fs.FileInfo) error {
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%s has mode %04o, which lets group or others at the key: run chmod 600 %s", path, perm, path)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: the file's owner cannot be read", path)
	}
	if euid := os.Geteuid(); int64(st.Uid) != int64(euid) {
		return fmt.Errorf("%s is owned by uid %d, not by uid %d the gateway runs as: run chown %d %s (and chmod 600 %s)", path, st.Uid, euid, euid, path, path)
	}
	return nil
}
