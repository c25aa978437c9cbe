//go:build unix

package server

import (
	"errors"
	"syscall"
)

// processGone reports whether no process has this id (signal 0 probes
// without sending anything; EPERM means it exists but is not ours).
func processGone(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err != nil && errors.Is(err, syscall.ESRCH)
}
