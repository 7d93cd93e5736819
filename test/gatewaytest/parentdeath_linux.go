package gatewaytest

import (
	"os/exec"
	"syscall"
)

// TiedToParent makes cmd's process be killed when this one dies, however
// it dies (kill -9 included): a load, abuse or fault run stopped by force
// otherwise leaves its gateways serving, and the next run measures them
// too. The kernel sends the signal when the thread that started cmd
// exits; Go keeps its threads for the process's life unless a goroutine
// locked to one ends, which these programs never do.
func TiedToParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
