package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// startCPUProfile starts a CPU profile (pprof) written to path when the
// returned stop is called; with no path it does nothing. ok is false, with
// the reason on stderr, when the file cannot be written.
func startCPUProfile(path string, stderr io.Writer) (stop func(), ok bool) {
	if path == "" {
		return func() {}, true
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(stderr, "vramlint: %v\n", err)
		return nil, false
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, true
}
