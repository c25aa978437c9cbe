package server

import (
	"os"
	"runtime/debug"
)

// TuneRuntime sets the garbage collector for a language server: every open
// file's syntax tree and model stay in memory (a 10,000-line file's take
// about 14 MB) and opening one allocates about as much, so at the default
// GOGC=100 a collection runs during most opens of a large file and adds
// 4-6 ms to it. Collecting when the heap has grown 5x instead of 2x makes
// that rare; a soft limit of 2 GiB makes collection frequent again before
// memory use gets out of hand. GOGC and GOMEMLIMIT in the environment win.
// `vramlint server` calls it, and so do the benchmarks, which measure the
// server as it runs.
func TuneRuntime() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(2 << 30)
	}
}
