package gatewaytest

import (
	"fmt"
	"os/exec"
)

// BuildRelease builds agent-gateway as it ships, without the race
// detector, to bin: the load, abuse and fault runs report figures of the
// production build, not of one slowed by race instrumentation.
func BuildRelease(bin string) error {
	root, err := ModuleRoot()
	if err != nil {
		return err
	}
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	return nil
}
