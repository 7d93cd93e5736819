//go:build !linux

package gatewaytest

import "os/exec"

// TiedToParent does nothing where the kernel cannot tie a child's life to
// its parent's (parentdeath_linux.go).
func TiedToParent(*exec.Cmd) {}
