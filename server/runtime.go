package server

import (
	"os"
	"runtime/debug"
)

// TuneRuntime sets the garbage collector for a language server. Every open
// file's syntax tree and model stay in memory, and each edit allocates a
// new version's laid-out text, line index and indexes (about 1 MB a
// keystroke at 10,000 lines). The collector keeps Go's default, collecting
// when the heap has doubled: GOGC=400, used before, saved a collection
// during some opens but let a typing session's memory grow to five times
// what is live (10,000 lines: 166 MiB after 1,120 edits against 80 MiB at
// the default, with the same latencies within the noise; see
// docs/PERFORMANCE.md). A soft limit of 2 GiB makes collection more
// frequent before memory use gets out of hand. GOGC and GOMEMLIMIT in the
// environment win. `vramlint server` calls it, and so do the benchmarks,
// which measure the server as it runs.
func TuneRuntime() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(2 << 30)
	}
}
