package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/vramlint/vramlint/analysis/rules"
	"github.com/vramlint/vramlint/server"
)

func runServer(args []string, stdin io.ReadCloser, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	logFile := fs.String("log-file", "", "append the server's log to this file (default: stderr)")
	debounce := fs.Duration("debounce", 100*time.Millisecond, "delay between an edit and its diagnostics")
	// Language clients (vscode-languageclient, LSP4IJ templates) add
	// --stdio to say which transport they use; stdio is the only one.
	fs.Bool("stdio", true, "speak LSP over stdin/stdout (the only transport; accepted for clients that pass it)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile (pprof) of the whole session to this file")
	memProfile := fs.String("memprofile", "", "write a profile (pprof) of what the whole session allocated to this file")
	runtimeTrace := fs.String("runtime-trace", "", "write a Go execution trace (go tool trace) of the whole session to this file: where the server waited for a core, a lock or a collection")
	tracePhases := fs.String("trace-phases", "", "write a line of JSON to this file for every version whose diagnostics are sent: the milliseconds of each phase, from reading the change to sending the diagnostics, the page faults so far, and the files of the project the index parsed meanwhile")
	if err := fs.Parse(args); err != nil {
		return exitError
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "vramlint server: unexpected arguments %v (it speaks LSP over stdin/stdout)\n", fs.Args())
		return exitError
	}
	logOut := stderr
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintf(stderr, "vramlint server: %v\n", err)
			return exitError
		}
		defer f.Close()
		logOut = f
	}
	stopProfile, ok := startCPUProfile(*cpuProfile, stderr)
	if !ok {
		return exitError
	}
	defer stopProfile() // written when the session ends (exit, or end of input)
	stopTrace, ok := startRuntimeTrace(*runtimeTrace, stderr)
	if !ok {
		return exitError
	}
	defer stopTrace()
	if *memProfile != "" {
		f, err := os.Create(*memProfile)
		if err != nil {
			fmt.Fprintf(stderr, "vramlint server: %v\n", err)
			return exitError
		}
		defer func() {
			// Every sample of the session: what it allocated (alloc_space)
			// and, after this collection, what still lives (inuse_space).
			runtime.GC()
			if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
				fmt.Fprintf(stderr, "vramlint server: %v\n", err)
			}
			f.Close()
		}()
	}
	var trace io.Writer
	if *tracePhases != "" {
		f, err := os.Create(*tracePhases)
		if err != nil {
			fmt.Fprintf(stderr, "vramlint server: %v\n", err)
			return exitError
		}
		defer f.Close()
		trace = f
	}
	server.TuneRuntime()
	// Nothing but protocol messages may go to stdout.
	status := server.Run(context.Background(), stdin, stdout, server.Options{
		Rules:      rules.All(),
		Log:        logOut,
		Debounce:   *debounce,
		Version:    version,
		PhaseTrace: trace,
	})
	return status
}
