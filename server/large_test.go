package server

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/pyast"
)

// bigTrainingFile is about size bytes of training code with one finding
// per block of helpers.
func bigTrainingFile(size int) string {
	var b strings.Builder
	b.WriteString(leakyDataset)
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "\n\ndef helper_%d(model, x):\n    y = model(x) * %d\n    return torch.relu(y).mean()\n", i, i)
	}
	return b.String()
}

// A document over maxLiveFileSize is analysed when opened and when saved,
// not as it is typed, and the editor is told once; it keeps no syntax tree
// or model, and its fixes and noqa actions still work from the last save.
func TestLargeDocumentsAreAnalysedOnSave(t *testing.T) {
	c := startServer(t, Options{})
	c.initialize(map[string]any{}, map[string]any{"maxLiveFileSize": 4096})
	uri := "file:///big.py"
	text := bigTrainingFile(20000)
	c.open(uri, text)
	c.await("the notice", func(m message) bool {
		return m.Method == "window/showMessage" && strings.Contains(string(m.Params), "analysed when opened and saved")
	})
	if diags := c.diagnostics(uri, 1); len(diags) != 2 {
		t.Fatalf("on open: %+v", diags)
	}
	// Typing: nothing analysed, nothing published.
	v := c.change(uri, analysis.UTF16, lspTextEdit{Range: lspRange{lspPosition{7, 0}, lspPosition{7, 0}}, NewText: "for b in loader:\n    torch.cuda.empty_cache()\n"})
	v = c.change(uri, analysis.UTF16, lspTextEdit{Range: lspRange{lspPosition{0, 0}, lspPosition{0, 0}}, NewText: "# x\n"})
	c.srv.mu.Lock()
	snap := c.srv.docs[uri].snap
	c.srv.mu.Unlock()
	if snap.tree != nil || !snap.onSave {
		t.Error("a large document is parsed as it is typed")
	}
	c.notify("textDocument/didSave", map[string]any{"textDocument": map[string]any{"uri": uri}})
	// Typing right after the save does not discard the save's analysis.
	c.change(uri, analysis.UTF16, lspTextEdit{Range: lspRange{lspPosition{0, 0}, lspPosition{0, 0}}, NewText: " "})
	if diags := c.diagnostics(uri, v); len(diags) != 3 {
		t.Fatalf("after the save: %+v", diags)
	}
	v = c.change(uri, analysis.UTF16, lspTextEdit{Range: lspRange{lspPosition{0, 0}, lspPosition{0, 1}}, NewText: ""})
	c.notify("textDocument/didSave", map[string]any{"textDocument": map[string]any{"uri": uri}})
	if diags := c.diagnostics(uri, v); len(diags) != 3 {
		t.Fatalf("after the second save: %+v", diags)
	}
	c.srv.mu.Lock()
	res := c.srv.docs[uri].snap.result
	c.srv.mu.Unlock()
	if res == nil || res.Model() != nil {
		t.Error("a large document's model is kept")
	}
	actions := c.codeActions(uri, lspRange{lspPosition{9, 4}, lspPosition{9, 10}}, nil, 0)
	titles := ""
	for _, a := range actions {
		titles += a.Title + "; "
	}
	if !strings.Contains(titles, "Move `torch.cuda.empty_cache()` after the loop") || !strings.Contains(titles, "Disable GPU005 for this line") {
		t.Errorf("actions after the save: %s", titles)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.msgs {
		if m.Method == "window/showMessage" && strings.Contains(string(m.Params), "analysed when opened") {
			t.Error("the notice was shown twice")
		}
	}
}

// A large document held open costs memory in proportion to its size (its
// text, line index and compacted findings), far below its model.
func TestLargeDocumentMemory(t *testing.T) {
	c := startServer(t, Options{})
	c.initialize(map[string]any{}, nil) // the default limit, 1 MB
	text := bigTrainingFile(3 << 20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	uri := "file:///huge.py"
	c.open(uri, text)
	c.diagnostics(uri, 1)
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("holding a %d KB document: %d KB", len(text)>>10, held>>10)
	// The text is held twice: the client's copy in this test, and the
	// server's.
	if held > 8*int64(len(text)) {
		t.Errorf("a %d KB document holds %d KB", len(text)>>10, held>>10)
	}
	c.notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": uri}})
	c.await("cleared", func(m message) bool {
		return m.Method == "textDocument/publishDiagnostics" && strings.Contains(string(m.Params), `"diagnostics":[]`)
	})
}

// catchReleases makes the servers the test starts send on the channel it
// returns where they would give memory back, after a pause of wait for the
// releases that wait for one; the test's end restores what it changed.
func catchReleases(t *testing.T, wait time.Duration) <-chan struct{} {
	released := make(chan struct{}, 16)
	oldWait, oldRelease, oldAfter := idleRelease, releaseMemory, releaseAfter.Load()
	t.Cleanup(func() {
		idleRelease, releaseMemory = oldWait, oldRelease
		releaseAfter.Store(oldAfter)
	})
	idleRelease = wait
	releaseMemory = func() { released <- struct{}{} }
	return released
}

// awaitRelease fails the test unless memory is given back within d.
func awaitRelease(t *testing.T, released <-chan struct{}, d time.Duration, after string) {
	t.Helper()
	select {
	case <-released:
	case <-time.After(d):
		t.Fatalf("memory was not given back %s", after)
	}
}

// noRelease fails the test if memory is given back within d, or for 0 if
// it has been already.
func noRelease(t *testing.T, released <-chan struct{}, d time.Duration, after string) {
	t.Helper()
	if d == 0 {
		select {
		case <-released:
			t.Fatalf("memory was given back %s", after)
		default:
		}
		return
	}
	select {
	case <-released:
		t.Fatalf("memory was given back %s", after)
	case <-time.After(d):
	}
}

// After the diagnostics of a large document, memory goes back to the
// system once the editor pauses: not between keystrokes, once after them.
func TestMemoryGoesBackWhenIdle(t *testing.T) {
	// A pause far longer than a keystroke's round trip, even under the
	// race detector on a loaded machine (CI once took over 500 ms).
	released := catchReleases(t, 1500*time.Millisecond)
	c := startServer(t, Options{})
	c.initialize(map[string]any{}, nil)
	small, large := "file:///small.py", "file:///large.py"
	c.open(small, trainingFile(100, 3))
	c.diagnostics(small, 1)
	text := trainingFile(12000, 7)
	if len(text) < largeDocument {
		t.Fatalf("%d bytes is not a large document", len(text))
	}
	c.open(large, text)
	c.diagnostics(large, 1)
	for range 5 { // keystrokes closer together than the pause
		at := strings.Index(c.texts[large], "def train3(")
		v := c.change(large, analysis.UTF16, lspTextEdit{Range: lspRange{clientPosition(c.texts[large], at, analysis.UTF16), clientPosition(c.texts[large], at, analysis.UTF16)}, NewText: "#"})
		c.diagnostics(large, v)
		noRelease(t, released, 0, "between keystrokes")
	}
	awaitRelease(t, released, hungAfter, "after the pause")
	noRelease(t, released, time.Second, "twice for one pause")
	// A small document alone never costs a collection.
	c.change(small, analysis.UTF16, lspTextEdit{Range: lspRange{lspPosition{0, 0}, lspPosition{0, 0}}, NewText: "#"})
	c.diagnostics(small, 2)
	noRelease(t, released, time.Second, "after a small document's diagnostics")
}

// A change that comes while a release waits for the pause starts the wait
// again once it is analysed, whatever document it is in: its analysis never
// shares the machine with a collection, and the release is not lost.
func TestAChangeRestartsTheWaitForARelease(t *testing.T) {
	const pause = 500 * time.Millisecond
	released := catchReleases(t, pause)
	c := startServer(t, Options{})
	c.initialize(map[string]any{}, nil)
	small, large := "file:///small.py", "file:///large.py"
	c.open(small, trainingFile(100, 3))
	c.diagnostics(small, 1)
	c.open(large, trainingFile(12000, 7))
	c.diagnostics(large, 1) // the release now waits
	changed := time.Now()
	c.change(small, analysis.UTF16, lspTextEdit{Range: lspRange{lspPosition{0, 0}, lspPosition{0, 0}}, NewText: "#"})
	c.diagnostics(small, 2)
	awaitRelease(t, released, hungAfter, "after the change's pause")
	// The wait began after the change, so it ends a pause after it at the
	// earliest; a wait the change left running ended sooner.
	if waited := time.Since(changed); waited < pause {
		t.Errorf("memory went back %v after a change, before the %v pause", waited, pause)
	}
	noRelease(t, released, time.Second, "twice for one pause")
}

// A change to a document analysed on save only, typed while a release
// waits, is followed by no analysis: the wait starts again at once, and
// the memory of the open's analysis still goes back.
func TestAChangeAnalysedOnSaveKeepsTheRelease(t *testing.T) {
	released := catchReleases(t, 300*time.Millisecond)
	c := startServer(t, Options{})
	c.initialize(map[string]any{}, map[string]any{"maxLiveFileSize": 4096})
	uri := "file:///big.py"
	c.open(uri, trainingFile(12000, 7))
	c.diagnostics(uri, 1) // the release now waits
	c.change(uri, analysis.UTF16, lspTextEdit{Range: lspRange{lspPosition{0, 0}, lspPosition{0, 0}}, NewText: "#"})
	awaitRelease(t, released, hungAfter, "after a change analysed on save only")
}

// Many documents, none of them large, that together allocate much give
// their memory back at the pause as one large document does: fifty open
// 250 KB files otherwise left the server holding twice what lives. So do
// documents closed.
func TestMemoryGoesBackAfterManySmallDocuments(t *testing.T) {
	released := catchReleases(t, 300*time.Millisecond)
	c := startServer(t, Options{})
	c.initialize(map[string]any{}, nil)
	open := func(name string) {
		uri := "file:///" + name + ".py"
		text := trainingFile(1000, 3)
		if len(text) >= largeDocument {
			t.Fatalf("%d bytes is a large document", len(text))
		}
		c.open(uri, text)
		c.diagnostics(uri, 1)
	}
	releaseAfter.Store(math.MaxUint64)
	open("first")
	noRelease(t, released, time.Second, "after a small document below the allocation threshold")
	releaseAfter.Store(1 << 20) // less than one 1,000-line document's analysis allocates
	open("second")
	open("third")
	awaitRelease(t, released, hungAfter, "after the pause")
	// Closing documents, small ones too, leaves their memory to the
	// collector: it goes back at the pause after the last close.
	releaseAfter.Store(math.MaxUint64)
	for _, name := range []string{"first", "second"} {
		c.notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": "file:///" + name + ".py"}})
	}
	awaitRelease(t, released, hungAfter, "after documents were closed")
	noRelease(t, released, time.Second, "twice for one pause")
}

// Indexing a workspace folder gives back what it took once it is done,
// with no document open.
func TestMemoryGoesBackAfterIndexing(t *testing.T) {
	released := catchReleases(t, idleRelease)
	folder := t.TempDir()
	if err := os.WriteFile(filepath.Join(folder, "train.py"), []byte(trainingFile(1000, 3)), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, Options{})
	c.initializeFolders(map[string]any{}, nil, folder)
	awaitRelease(t, released, 10*time.Second, "after indexing")
}

// Closing a large document gives memory back once the index is done with
// the file, not beside it: the index reads a buffer closed unsaved from
// disk again (a parse as large as the open's), and gathers the facts of
// one closed as it is on disk from the buffer's model, which it holds
// meanwhile. Given back beside that work, a closed 50,000-line file left
// the server holding 80-160 MiB, where it had 20 before the open.
func TestClosingALargeDocumentGivesMemoryBackAfterTheIndex(t *testing.T) {
	text := trainingFile(12000, 7)
	if len(text) < largeDocument {
		t.Fatalf("%d bytes is not a large document", len(text))
	}
	// Only the indexing and the close give memory back; catchReleases
	// puts the hooks back after the test, whose own releaseMemory each
	// server below is made with.
	catchReleases(t, time.Hour)
	for _, unsaved := range []bool{false, true} {
		// What the index has done with the file when memory goes back,
		// once the test asks (see done below).
		var mu sync.Mutex
		var done func() bool
		doneAtRelease := make(chan bool, 4)
		indexed := make(chan struct{}, 4)
		releaseMemory = func() {
			mu.Lock()
			defer mu.Unlock()
			if done == nil {
				indexed <- struct{}{}
				return
			}
			doneAtRelease <- done()
		}
		folder := t.TempDir()
		path := filepath.Join(folder, "big.py")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		c := startServer(t, Options{})
		c.initializeFolders(map[string]any{}, map[string]any{"maxLiveFileSize": 0}, folder)
		for _, after := range []string{"after the indexing's build", "after the indexing"} {
			select {
			case <-indexed:
			case <-time.After(hungAfter):
				t.Fatalf("memory was not given back %s", after)
			}
		}
		uri := "file://" + path
		c.open(uri, text)
		c.diagnostics(uri, 1)
		// An edit, undone unless unsaved: the buffer's summary is then
		// its own, without the facts the index gathers from disk.
		v := c.change(uri, analysis.UTF16, lspTextEdit{Range: lspRange{lspPosition{0, 0}, lspPosition{0, 0}}, NewText: "import os\n"})
		c.diagnostics(uri, v)
		if !unsaved {
			v = c.change(uri, analysis.UTF16, lspTextEdit{Range: lspRange{lspPosition{0, 0}, lspPosition{1, 0}}})
			c.diagnostics(uri, v)
		}
		c.srv.mu.Lock()
		ix := c.srv.projects.For(path)
		c.srv.mu.Unlock()
		if ix == nil {
			t.Fatal("the folder is not indexed")
		}
		// The buffer's summary comes at the editor's pause.
		for deadline := time.Now().Add(hungAfter); ix.EveryFactKept(path); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("unsaved %v: the buffer's summary never came", unsaved)
			}
		}
		parses := ix.Parses()
		mu.Lock()
		done = func() bool {
			if unsaved {
				return ix.Parses() > parses // read from disk
			}
			return ix.EveryFactKept(path)
		}
		mu.Unlock()
		c.notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": uri}})
		select {
		case ok := <-doneAtRelease:
			if !ok {
				t.Errorf("unsaved %v: memory went back before the index was done with the closed file", unsaved)
			}
		case <-time.After(hungAfter):
			t.Fatalf("unsaved %v: memory was not given back after the close", unsaved)
		}
		c.shutdownAndExit()
	}
}

// Editing a document for a long time leaks nothing: after 300 edits that
// end where they began, the Go heap is about what it was after opening,
// no tree-sitter tree is left, and closing the document gives its memory
// back.
func TestManyEditsLeakNothing(t *testing.T) {
	c := startServer(t, Options{})
	heap := func() int64 {
		c.forget() // the client's log of every message is not the server's memory
		// The server sends the diagnostics before it makes the next
		// version's spares ready (prepareWhenIdle), with its lock held:
		// once it is done, as at a pause, the spare laid-out texts kept
		// for the next versions go (see pyast's spare.go), and the rest
		// is collected.
		c.srv.mu.Lock()
		c.srv.mu.Unlock()
		pyast.ReleaseMemory()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	c.initialize(map[string]any{}, nil)
	noTrees(t, "before opening")
	baseline := heap()
	uri := "file:///edited.py"
	c.open(uri, trainingFile(3000, 5))
	c.diagnostics(uri, 1)
	noTrees(t, "after opening")
	opened := heap()

	statement := "        losses.append(loss)\n"
	for i := range 150 {
		text := c.texts[uri]
		at := strings.Index(text, fmt.Sprintf("def train%d(", i%30))
		at += strings.Index(text[at:], "        optimizer.step()\n")
		v := c.change(uri, analysis.UTF16, lspTextEdit{Range: lspRange{clientPosition(text, at, analysis.UTF16), clientPosition(text, at, analysis.UTF16)}, NewText: statement})
		c.diagnostics(uri, v)
		text = c.texts[uri]
		v = c.change(uri, analysis.UTF16, lspTextEdit{Range: lspRange{clientPosition(text, at, analysis.UTF16), clientPosition(text, at+len(statement), analysis.UTF16)}})
		c.diagnostics(uri, v)
	}
	noTrees(t, "after 300 edits")
	edited := heap()
	t.Logf("Go heap: %d KB before opening, %d KB opened, %d KB after 300 edits", baseline>>10, opened>>10, edited>>10)
	if grown := edited - opened; grown > (opened-baseline)/4+(1<<20) {
		t.Errorf("300 edits that end where they began grew the heap by %d KB (the document takes %d KB)", grown>>10, (opened-baseline)>>10)
	}
	c.notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": uri}})
	c.await("cleared", func(m message) bool {
		return m.Method == "textDocument/publishDiagnostics" && strings.Contains(string(m.Params), `"diagnostics":[]`)
	})
	if closed := heap(); closed-baseline > (opened-baseline)/4+(1<<20) {
		t.Errorf("after closing, the heap is %d KB over what it was before opening (the document took %d KB)", (closed-baseline)>>10, (opened-baseline)>>10)
	}
}

// noTrees waits until pyast holds no tree-sitter tree (analyses still
// running may hold some for a moment), and fails after hungAfter.
func noTrees(t *testing.T, when string) {
	t.Helper()
	deadline := time.Now().Add(hungAfter)
	for pyast.LiveTrees() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d tree-sitter trees are still alive", when, pyast.LiveTrees())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
