package workspace

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vramlint/vramlint/analysis/semantic"
)

// A model asked for while it is being built is that build's: the second
// ask waits for it rather than parsing the file again.
func TestModelAskedDuringItsBuildIsBuiltOnce(t *testing.T) {
	var c modelCache
	src := []byte("x = 1\n")
	var builds atomic.Int32
	building, release := make(chan struct{}), make(chan struct{})
	build := func() *semantic.File {
		if builds.Add(1) == 1 {
			close(building)
			<-release
		}
		return &semantic.File{}
	}
	var first, second *semantic.File
	var wg sync.WaitGroup
	wg.Go(func() { first = c.get("/p/m.py", src, build) })
	<-building
	wg.Go(func() { second = c.get("/p/m.py", src, build) })
	// Released once the second ask waits for the build (without the wait
	// it builds at once, and the count says so).
	for waiting := 0; waiting == 0 && builds.Load() == 1; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		if b := c.building["/p/m.py"]; b != nil {
			waiting = b.waiting
		}
		c.mu.Unlock()
	}
	close(release)
	wg.Wait()
	if n := builds.Load(); n != 1 {
		t.Errorf("built %d times, want once", n)
	}
	if first == nil || first != second {
		t.Errorf("the two asks got different models")
	}
	if m := c.get("/p/m.py", []byte("x = 2\n"), build); m == first || builds.Load() != 2 {
		t.Errorf("a new text was not built anew")
	}
}

// A build that panics leaves nothing behind: those waiting get no model,
// and the next ask builds again.
func TestModelBuildThatPanicsIsForgotten(t *testing.T) {
	var c modelCache
	src := []byte("x = 1\n")
	func() {
		defer func() { _ = recover() }()
		c.get("/p/m.py", src, func() *semantic.File { panic("model") })
	}()
	if m := c.get("/p/m.py", src, func() *semantic.File { return &semantic.File{} }); m == nil {
		t.Error("the ask after a panic got no model")
	}
}
