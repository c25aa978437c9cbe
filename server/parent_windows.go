//go:build windows

package server

import "syscall"

// processQueryLimitedInformation is PROCESS_QUERY_LIMITED_INFORMATION,
// the least access that can read an exit code (syscall lacks the name).
const processQueryLimitedInformation = 0x1000

// stillActive is STILL_ACTIVE, the exit code of a running process.
const stillActive = 259

// processGone reports whether the process with this id has ended: it
// cannot be opened (no such process), or it has an exit code.
func processGone(pid int) bool {
	h, err := syscall.OpenProcess(processQueryLimitedInformation, false, uint32(pid))
	if err != nil {
		// ERROR_ACCESS_DENIED: it exists, but belongs to someone else.
		return err != syscall.ERROR_ACCESS_DENIED
	}
	defer syscall.CloseHandle(h)
	var code uint32
	if err := syscall.GetExitCodeProcess(h, &code); err != nil {
		return false
	}
	return code != stillActive
}
