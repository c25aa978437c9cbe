//go:build !unix

package server

// minorFaults is not counted here (see faults_unix.go).
func minorFaults() int64 { return 0 }
