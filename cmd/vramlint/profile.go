package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// startCPUProfile starts a CPU profile (pprof) written to path when the
// returned stop is called; with no path it does nothing. ok is false, with
// the reason on stderr, when the file cannot be written.
func startCPUProfile(path string, stderr io.Writer) (stop func(), ok bool) {
	return startRecording(path, stderr, pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// startRuntimeTrace starts a Go execution trace (go tool trace) into path,
// like startCPUProfile. It shows what a CPU profile cannot: a goroutine
// waiting for a core, a lock or a collection.
func startRuntimeTrace(path string, stderr io.Writer) (stop func(), ok bool) {
	return startRecording(path, stderr, trace.Start, trace.Stop)
}

// startRecording creates path and starts a recording into it, which the
// returned stop ends; with no path it does nothing.
func startRecording(path string, stderr io.Writer, start func(io.Writer) error, end func()) (stop func(), ok bool) {
	if path == "" {
		return func() {}, true
	}
	f, err := os.Create(path)
	if err == nil {
		if err = start(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "vramlint: %v\n", err)
		return nil, false
	}
	return func() {
		end()
		f.Close()
	}, true
}
