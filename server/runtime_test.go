package server

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/pyast"
)

func TestCollectionDue(t *testing.T) {
	for _, c := range []struct {
		goal, live, heap uint64
		due              bool
	}{
		{goal: 200, live: 100, heap: 100, due: false},
		{goal: 200, live: 100, heap: 174, due: false},
		{goal: 200, live: 100, heap: 175, due: true},
		{goal: 200, live: 100, heap: 250, due: true},
		{goal: 100, live: 100, heap: 150, due: false}, // no way to go
		{goal: 0, live: 0, heap: 0, due: false},
	} {
		if got := collectionDue(c.goal, c.live, c.heap); got != c.due {
			t.Errorf("collectionDue(goal %d, live %d, heap %d) = %v, want %v", c.goal, c.live, c.heap, got, c.due)
		}
	}
}

// collectIfDue collects once the heap is three quarters of its way to the
// goal, and not again right after.
func TestCollectIfDue(t *testing.T) {
	read := func() (goal, live, heap uint64) {
		s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64(), s[1].Value.Uint64(), s[2].Value.Uint64()
	}
	var keep [][]byte
	// Another test's goroutines may allocate meanwhile (right after the
	// collection too: a loaded CI machine once saw a collection due
	// there), and the collector may run between the check and the call:
	// a few tries.
	for try := 0; ; try++ {
		runtime.GC()
		if collectIfDue() {
			if try == 4 {
				t.Fatal("collected right after a collection, in every try")
			}
			continue
		}
		keep = keep[:0]
		for !collectionDue(read()) {
			keep = append(keep, make([]byte, 64<<10)) // garbage once dropped
		}
		keep = nil
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		if collectIfDue() {
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if after.NumGC == before.NumGC {
				t.Fatal("collectIfDue said it collected, and no collection ran")
			}
			return
		}
		if try == 4 {
			t.Fatal("no collection when one was due")
		}
	}
}

// After a version's diagnostics, the server collects once the editor
// pauses: not between keystrokes closer together than the pause.
func TestServerCollectsWhenIdle(t *testing.T) {
	collected := make(chan struct{}, 16)
	oldWait, oldCollect := collectPause, collectionInPause
	t.Cleanup(func() { collectPause, collectionInPause = oldWait, oldCollect })
	collectPause = 1500 * time.Millisecond // far longer than a keystroke's round trip
	collectionInPause = func() bool { collected <- struct{}{}; return true }

	c := startServer(t, Options{})
	c.initialize(map[string]any{}, nil)
	uri := "file:///typed.py"
	c.open(uri, trainingFile(300, 3))
	c.diagnostics(uri, 1)
	for range 5 { // keystrokes closer together than the pause
		at := strings.Index(c.texts[uri], "def train1(")
		pos := clientPosition(c.texts[uri], at, analysis.UTF16)
		v := c.change(uri, analysis.UTF16, lspTextEdit{Range: lspRange{pos, pos}, NewText: "#"})
		c.diagnostics(uri, v)
		select {
		case <-collected:
			t.Fatal("collected between keystrokes")
		default:
		}
	}
	select {
	case <-collected:
	case <-time.After(hungAfter):
		t.Fatal("no collection after the pause")
	}
	select {
	case <-collected:
		t.Fatal("collected twice for one pause")
	case <-time.After(time.Second):
	}
}

// recordPrepared replaces prepareForEdits's hook for the test: wasPrepared
// reports whether a tree's spares were made ready since the last forget.
// (Other tests' servers may release meanwhile: their trees are others.)
func recordPrepared(t *testing.T) (wasPrepared func(*pyast.Tree) bool, forget func()) {
	var mu sync.Mutex
	prepared := map[*pyast.Tree]bool{}
	record := func(tree *pyast.Tree) { mu.Lock(); prepared[tree] = true; mu.Unlock() }
	old := prepareHook.Swap(&record)
	t.Cleanup(func() { prepareHook.Store(old) })
	wasPrepared = func(tree *pyast.Tree) bool {
		mu.Lock()
		defer mu.Unlock()
		return prepared[tree]
	}
	forget = func() { mu.Lock(); clear(prepared); mu.Unlock() }
	return wasPrepared, forget
}

// currentTree is the tree of uri's current version in c's server.
func currentTree(c *testClient, uri string) *pyast.Tree {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	return c.srv.docs[uri].snap.tree
}

// After giving memory back, the server makes spares ready for the document
// opened or changed last (the one being typed in), and for no other.
func TestReleasePreparesTheDocumentBeingEdited(t *testing.T) {
	oldRelease := releaseMemory
	t.Cleanup(func() { releaseMemory = oldRelease })
	releaseMemory = func() {}
	wasPrepared, forget := recordPrepared(t)

	c := startServer(t, Options{})
	c.initialize(map[string]any{}, nil)
	a, b := "file:///a.py", "file:///b.py"
	c.open(a, trainingFile(100, 1))
	c.diagnostics(a, 1)
	c.open(b, trainingFile(100, 2))
	c.diagnostics(b, 1)
	at := strings.Index(c.texts[a], "def train1(")
	pos := clientPosition(c.texts[a], at, analysis.UTF16)
	v := c.change(a, analysis.UTF16, lspTextEdit{Range: lspRange{pos, pos}, NewText: "#"})
	c.diagnostics(a, v)
	c.srv.giveMemoryBack()
	if !wasPrepared(currentTree(c, a)) || wasPrepared(currentTree(c, b)) {
		t.Errorf("after a.py was changed last, the release prepared a.py: %v, b.py: %v", wasPrepared(currentTree(c, a)), wasPrepared(currentTree(c, b)))
	}
	c.open(b, trainingFile(100, 3)) // opened again: b is the one being edited
	c.diagnostics(b, 1)
	c.srv.giveMemoryBack()
	if !wasPrepared(currentTree(c, b)) {
		t.Error("after b.py was opened last, the release did not prepare it")
	}
	closed := currentTree(c, b)
	c.notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": b}})
	awaitCodes(c, b, "")
	forget()
	c.srv.giveMemoryBack()
	if wasPrepared(closed) || wasPrepared(currentTree(c, a)) {
		t.Error("after the document edited last was closed, the release prepared spares")
	}
}

// A document of prepareOnOpen bytes or more gets its spares made ready when
// it is opened; a smaller one does not.
func TestLargeOpenPreparesItsSpares(t *testing.T) {
	wasPrepared, _ := recordPrepared(t)

	c := startServer(t, Options{})
	c.initialize(map[string]any{}, map[string]any{"maxLiveFileSize": 0})
	small, large := "file:///small.py", "file:///large.py"
	c.open(small, trainingFile(100, 1))
	c.diagnostics(small, 1)
	c.open(large, "table = \""+strings.Repeat("a", prepareOnOpen)+"\"\n")
	c.diagnostics(large, 1)
	if wasPrepared(currentTree(c, small)) {
		t.Error("opening a small document made its spares ready")
	}
	if !wasPrepared(currentTree(c, large)) {
		t.Error("opening a large document made no spares ready")
	}
}

// The server runs with spare Ps beyond the cores, added once however often
// it is tuned, and none when GOMAXPROCS is set.
func TestTuneRuntimeAddsSpareProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	cores := runtime.GOMAXPROCS(0)
	for _, set := range []string{"", fmt.Sprint(cores)} {
		runtime.GOMAXPROCS(cores)
		addSpareProcs = sync.Once{}
		t.Setenv("GOMAXPROCS", set)
		TuneRuntime()
		TuneRuntime()
		want := cores + spareProcs
		if set != "" {
			want = cores
		}
		if got := runtime.GOMAXPROCS(0); got != want {
			t.Errorf("GOMAXPROCS=%q in the environment: %d Ps, want %d", set, got, want)
		}
	}
}
