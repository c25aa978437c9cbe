//go:build unix

package server

import "syscall"

// minorFaults is how many minor page faults the process has taken so far
// (pages the system mapped on first touch), for --trace-phases.
func minorFaults() int64 {
	var usage syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &usage) != nil {
		return 0
	}
	return int64(usage.Minflt)
}
