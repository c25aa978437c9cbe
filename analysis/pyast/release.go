package pyast

/*
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
static void vl_trim(void) { malloc_trim(0); }
#else
static void vl_trim(void) {}
#endif
*/
import "C"

import (
	"runtime"
	"runtime/debug"
)

// ReleaseMemory gives memory back to the system after a large file was
// parsed and analysed: the idle parsers (whose buffers grew to the file's
// size), C memory the allocator keeps for reuse (glibc's malloc_trim), and
// the Go heap's free pages. The next parse makes a parser again.
func ReleaseMemory() {
	for {
		select {
		case p := <-parsers:
			p.Close()
			continue
		default:
		}
		break
	}
	// A first collection queues the finalizers that free tree-sitter
	// trees; they run before the second returns the heap's free pages.
	// The spare texts go too, and none is kept until the next edit. The
	// trees of the last parses may still wait to be freed (freeLater):
	// under load, the 6 MB parse of TestReleaseMemoryAfterALargeParse
	// kept 100 MB of C memory the trim could not give back.
	dropSpares()
	runtime.GC()
	runtime.Gosched()
	debug.FreeOSMemory()
	freeQueued()
	C.vl_trim()
}
