//go:build linux

package proc

import "syscall"

// sysProcAttr puts the child in its own process group and asks the kernel to SIGKILL it
// when fencecheck dies, so no server outlives a killed run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
