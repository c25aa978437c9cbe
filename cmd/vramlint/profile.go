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

// startRuntimeTrace starts a Go execution trace (go tool trace) into path,
// or nothing when path is empty. It shows what a CPU profile cannot: a
// goroutine waiting for a core, a lock or a collection.
func startRuntimeTrace(path string, stderr io.Writer) (stop func(), ok bool) {
	if path == "" {
		return func() {}, true
	}
	f, err := os.Create(path)
	if err == nil {
		err = trace.Start(f)
	}
	if err != nil {
		fmt.Fprintf(stderr, "vramlint: %v\n", err)
		return nil, false
	}
	return func() {
		trace.Stop()
		f.Close()
	}, true
}
