package server

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
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
//
// It also gives the scheduler spareProcs more Ps than the cores, unless
// GOMAXPROCS is set. A keystroke's parse and mirror are calls into C, and
// a goroutine coming back from one needs a P: with one P a core, the P it
// left may meanwhile run a background goroutine (the collector's worker,
// a tree being freed in C, a spare text being copied), and the keystroke
// waited for it, up to the scheduler's 10 ms time slice. At 50,000 lines
// one or two of 20 edits after an open took 10-13 ms in their parse alone
// (instead of under 1 ms), which put the edits' 99th percentile over 15
// ms in half the sessions; with two spare Ps none did in seven sessions of
// eight, the kernel sharing the cores among the threads in finer slices
// (see docs/PERFORMANCE.md). The
// work an open spreads over GOMAXPROCS goroutines (its parse in chunks,
// their mirrors) is spread over the spare Ps too: that measured no slower,
// and spread over the cores alone, the slow parses came back.
func TuneRuntime() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(2 << 30)
	}
	addSpareProcs.Do(func() {
		if os.Getenv("GOMAXPROCS") == "" {
			runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + spareProcs)
		}
	})
}

// addSpareProcs adds the spare Ps once, however often TuneRuntime runs.
var addSpareProcs sync.Once

// spareProcs is how many Ps TuneRuntime adds to one a core.
const spareProcs = 2

// A collection's mark takes one of the machine's cores (on two, half of
// it) for its whole length, 10-20 ms with a 50,000-line file open, and a
// keystroke analysed meanwhile waits for it: while typing, the slowest 1%
// of keystrokes were all ones a mark ran beside. The collector starts a
// cycle when the heap reaches its goal, which it does while a keystroke is
// being analysed (that is when the server allocates). So when the editor
// pauses after a version's diagnostics (collectPause), and the heap has used
// three quarters of its way to the goal since the last collection, the
// server collects itself, in the pause: the next keystrokes find the heap
// far from its goal. Keys sent with no pause between them (a paste, a key
// held down, a benchmark) leave no pause, and the collector runs as it
// would anyway. At 50,000 lines, typing with 50 ms between keys, the
// slowest 1% went from 22-37 ms to 11-13 and the peak memory from about
// 430 to 265 MiB, for twice as many collections (134 against 65 in a
// session), all of them in the pauses. Collecting at half the way made
// three times as many and no key faster (see docs/PERFORMANCE.md).

// collectPause is how long after a version's analysis the server waits for
// the next change before collecting (see collectWhenIdle).
var collectPause = 15 * time.Millisecond

// collectionDue reports whether the heap has used three quarters of its way
// from what lived after the last collection to the collector's goal.
func collectionDue(goal, live, heap uint64) bool {
	return goal > live && heap >= live+(goal-live)/4*3
}

// collectionInPause is collectIfDue (a variable for tests).
var collectionInPause = collectIfDue

// collectIfDue collects garbage now when collectionDue says so, and
// reports whether it did.
func collectIfDue() bool {
	samples := []metrics.Sample{
		{Name: "/gc/heap/goal:bytes"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
	}
	metrics.Read(samples)
	for _, s := range samples {
		if s.Value.Kind() != metrics.KindUint64 {
			return false // not in this runtime
		}
	}
	if !collectionDue(samples[0].Value.Uint64(), samples[1].Value.Uint64(), samples[2].Value.Uint64()) {
		return false
	}
	runtime.GC()
	return true
}

// collectorSoFar returns how many collections the process has finished and
// the milliseconds of CPU its goroutines spent helping them mark (see
// phaseTrace).
func collectorSoFar() (cycles uint64, assistMs float64) {
	samples := []metrics.Sample{
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/cpu/classes/gc/mark/assist:cpu-seconds"},
	}
	metrics.Read(samples)
	if samples[0].Value.Kind() == metrics.KindUint64 {
		cycles = samples[0].Value.Uint64()
	}
	if samples[1].Value.Kind() == metrics.KindFloat64 {
		assistMs = samples[1].Value.Float64() * 1000
	}
	return cycles, assistMs
}
