package pyast

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// checkLayout checks that t mirrors src exactly: when it has no syntax
// error, the tree of a fresh parse, which has none either (a syntax error
// stays in the statements around an edit, where a whole parse may spread
// it further; see reparse); every node's text in t.Src equal to its text
// in src; and Real and Virtual inverse to each other on the source.
func checkLayout(t *testing.T, tree *Tree, src []byte) {
	t.Helper()
	fresh, err := Parse(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	if tree.HasError() && ParsesCleanly(src) {
		t.Fatalf("the tree has a syntax error, the text parses cleanly; source %q", src)
	}
	if !tree.HasError() {
		if got, want := tree.Root.Kind()+renderStatements(tree), fresh.Root.Kind()+renderStatements(fresh); got != want {
			t.Fatalf("the laid-out mirror differs from a fresh parse\ngot  %s\nwant %s\nsource %q", got, want, src)
		}
		if fresh.HasError() {
			t.Fatalf("the tree has no syntax error, a fresh parse has; source %q", src)
		}
	}
	if !bytes.Equal(tree.src, src) {
		t.Fatal("the tree's source is not the text")
	}
	if len(tree.Src) != tree.Root.End() {
		t.Fatalf("Src has %d bytes, the root ends at %d", len(tree.Src), tree.Root.End())
	}
	if tree.LaidOut() {
		afresh := *tree
		afresh.spares = nil // written into new memory
		if !bytes.Equal(tree.Src, afresh.fill(tree.Root.End(), nil)) {
			t.Fatal("Src, updated from the last version's or a spare, differs from one written afresh")
		}
	}
	// Between segments there are only spaces, and only before a line
	// break or at the end.
	if i := bytes.IndexByte(tree.Src, 0); i >= 0 && bytes.IndexByte(src, 0) < 0 {
		t.Fatalf("Src has a byte the source does not have at %d", i)
	}
	for i, s := range tree.Segments {
		if s.padAt < 0 && i+1 < len(tree.Segments) && tree.pad(i) != 0 {
			t.Fatalf("segment %d has no place for spaces but has %d", i, tree.pad(i))
		}
		// SegmentNumber finds each segment from its first byte to its last
		// space, and the one before just before it.
		for _, off := range []int{s.Base - 1, s.Base, s.Base + s.Len()/2, tree.segmentEnd(i) - 1} {
			want := i
			if off < s.Base {
				want = i - 1
			}
			if got := tree.SegmentNumber(off); off >= 0 && off < tree.segmentEnd(i) && got != want {
				t.Fatalf("SegmentNumber(%d) = %d, want %d (segment %d at %d)", off, got, want, i, s.Base)
			}
		}
	}
	tree.Walk(tree.Root, func(n *Node) bool {
		if n == tree.Root {
			return true
		}
		if got, want := string(tree.Src[n.Start():n.End()]), string(src[tree.Real(n.Start()):tree.Real(n.End())]); got != want {
			t.Fatalf("%s: laid-out text %q, source text %q", n.Kind(), got, want)
		}
		return true
	})
	for r := 0; r <= len(src); r++ {
		if got := tree.Real(tree.Virtual(r)); got != r {
			t.Fatalf("Real(Virtual(%d)) = %d", r, got)
		}
	}
	if got, want := strings.Count(string(tree.Src), "\n"), strings.Count(string(src), "\n"); got != want {
		t.Fatalf("Src has %d lines, the source %d", got, want)
	}
}

const threeFunctions = "import torch\n\n\ndef a():\n    return 1\n\n\ndef b(x):\n    y = x * 2\n    return y\n\n\nclass C:\n    def f(self):  # note\n        pass\nz = a(); w = b(z)\n"

func TestLayoutForEditing(t *testing.T) {
	for _, src := range []string{"", "\n\n", "x", "# only a comment", "def f(:\n  return (", threeFunctions,
		strings.ReplaceAll(threeFunctions, "\n", "\r\n"), strings.ReplaceAll(threeFunctions, "\n", "\r"),
		"\n\nx = '''a\nb'''\ny = 1", "if x:\n    pass\nelse:\n    pass\n\n\n"} {
		tree, err := ParseForEditing(context.Background(), []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		checkLayout(t, tree, []byte(src))
		if src == threeFunctions && len(tree.Src) <= len(src) {
			t.Errorf("a layout for editing leaves no room: %d bytes for %d", len(tree.Src), len(src))
		}
	}
}

// edit applies one change to src through an Editor, and parses the result.
func edit(t *testing.T, tree *Tree, src []byte, start, end int, text string) (*Tree, []byte) {
	t.Helper()
	ed := NewEditor(tree, src)
	ed.Replace(start, end, text)
	out, err := ed.Parse(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return out, ed.Text()
}

func TestEditReusesUntouchedSegments(t *testing.T) {
	src := []byte(threeFunctions)
	tree, _ := ParseForEditing(context.Background(), src)
	if len(tree.Segments) != 5 {
		t.Fatalf("%d segments, want 5 (import, a, b, C, the two statements of the last line)", len(tree.Segments))
	}
	// Type into b's body: the statements before and after stay.
	at := strings.Index(string(src), "y = x") + 1
	next, nsrc := edit(t, tree, src, at, at, "yy")
	checkLayout(t, next, nsrc)
	for i, s := range next.Segments {
		if reused := s == tree.Segments[i]; reused != (i != 2) {
			t.Errorf("segment %d reused: %v", i, reused)
		}
	}
	if next.Root != tree.Root {
		t.Error("the module node was not kept")
	}
	for _, s := range next.Segments {
		for _, n := range s.Nodes {
			if n.Parent() != next.Root {
				t.Error("a statement's parent is not the module")
			}
		}
	}
}

// grownSegment returns the tree of a file of 40 functions, and the tree
// and text after an edit that grew the 21st (segment 20) by 400 bytes,
// more than the room after it, and where that edit was.
func grownSegment(t *testing.T) (tree, next *Tree, nsrc []byte, at int) {
	t.Helper()
	var b strings.Builder
	for i := range 40 {
		fmt.Fprintf(&b, "def f%d(x):\n    y = x + %d\n    return y\n\n", i, i)
	}
	src := []byte(b.String())
	tree, _ = ParseForEditing(context.Background(), src)
	at = strings.Index(string(src), "x + 20")
	next, nsrc = edit(t, tree, src, at, at, strings.Repeat("x + ", 100))
	checkLayout(t, next, nsrc)
	return tree, next, nsrc, at
}

func TestGrowingASegmentMovesOnlyItsNeighbours(t *testing.T) {
	tree, next, nsrc, at := grownSegment(t)
	reused := 0
	for i, s := range next.Segments {
		if s == tree.Segments[i] {
			reused++
		}
	}
	if reused < 30 || next.Segments[20] == tree.Segments[20] {
		t.Errorf("%d of 40 segments reused after growing one by 400 bytes", reused)
	}
	// Past all the room there is, the file is laid out afresh.
	huge, hsrc := edit(t, next, nsrc, at, at, strings.Repeat("x + ", 10000))
	checkLayout(t, huge, hsrc)
	if huge.Root == next.Root {
		t.Error("a layout without room kept its module node")
	}
}

// A segment an edit moves in the laid-out text without changing it (to
// make room for the edited one) keeps its code, the edited one has a code
// of its own (see Segment.Code).
func TestAMovedSegmentKeepsItsCode(t *testing.T) {
	tree, next, _, _ := grownSegment(t)
	last := map[uint64]*Segment{} // the last version's segments by code
	for _, s := range tree.Segments {
		last[s.Code()] = s
	}
	moved := 0
	for i, s := range next.Segments {
		old, had := last[s.Code()]
		switch {
		case i == 20:
			if had {
				t.Errorf("the edited segment has the code of the last version's %q", old.Text())
			}
		case slices.Contains(tree.Segments, s):
		case !had:
			t.Errorf("segment %d (%q), moved unchanged, has a code of its own", i, s.Text())
		case !bytes.Equal(old.Text(), s.Text()) || old.Shape() != s.Shape() || old.Base == s.Base:
			t.Errorf("segment %d (%q at %d) has the code of %q at %d", i, s.Text(), s.Base, old.Text(), old.Base)
		default:
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("growing a segment by 400 bytes moved none of its neighbours: the test tests nothing")
	}
}

// Random edits, each checked against a fresh parse. They often leave a
// syntax error, so the tree is also checked after each edit is undone.
func TestRandomEditsKeepTheLayoutExact(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	pieces := []string{"x", " ", "\n", "\n    ", "(", ")", ":", "def g():\n    return 2\n", "class D:\n", "\r\n", "'''", "#", "\t", "é😀", "", "\n# note\n", "# "}
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, "def f%d(x):\n    y = x + %d\n    return y\n\n", i, i)
	}
	src := []byte(b.String())
	tree, _ := ParseForEditing(context.Background(), src)
	undone, exact := 0, 0
	for range 400 {
		start := rng.Intn(len(src) + 1)
		end := min(len(src), start+rng.Intn(3)*rng.Intn(8))
		if rng.Intn(10) == 0 {
			end = min(len(src), start+rng.Intn(300))
		}
		text := ""
		for n := rng.Intn(3); n > 0; n-- {
			text += pieces[rng.Intn(len(pieces))]
		}
		// Keep edits on character boundaries.
		for start > 0 && start < len(src) && src[start]&0xC0 == 0x80 {
			start--
		}
		for end < len(src) && src[end]&0xC0 == 0x80 {
			end++
		}
		end = max(start, end)
		removed := string(src[start:end])
		tree, src = edit(t, tree, src, start, end, text)
		checkLayout(t, tree, src)
		if tree.HasError() {
			// Undone, the text is the last one, which may have none.
			tree, src = edit(t, tree, src, start, start+len(text), removed)
			checkLayout(t, tree, src)
			undone++
			if !tree.HasError() {
				exact++
			}
		}
	}
	if exact < 50 {
		t.Errorf("only %d of %d undone edits gave a text without syntax errors", exact, undone)
	}
}

// Typing a statement into one function, key by key, re-mirrors that
// function only (and now and then a neighbour whose room it takes).
func TestTypingReusesTheRest(t *testing.T) {
	var b strings.Builder
	for i := range 40 {
		fmt.Fprintf(&b, "def f%d(x):\n    y = x + %d\n    return y\n\n\n", i, i)
	}
	src := []byte(b.String())
	tree, _ := ParseForEditing(context.Background(), src)
	at := strings.Index(string(src), "    return y\n\n\ndef f21")
	for _, key := range "    history.append(loss.item())  # 数 😀\n" + strings.Repeat("    z = x * 2\n", 12) {
		prev := tree
		tree, src = edit(t, tree, src, at, at, string(key))
		at += len(string(key))
		checkLayout(t, tree, src)
		kept := 0
		for i, s := range tree.Segments {
			if i < len(prev.Segments) && s == prev.Segments[i] {
				kept++
			}
		}
		if kept < len(tree.Segments)-3 {
			t.Fatalf("typing %q re-mirrored %d of %d segments", key, len(tree.Segments)-kept, len(tree.Segments))
		}
	}
}

// checkReusedMirrors checks that every segment of tree that keeps its
// tree-sitter tree has the mirror a fresh walk of that tree gives, and the
// same seen table: also when most of its nodes were copied from the version
// before (see mirror), syntax errors included. It returns how many such
// segments it checked.
func checkReusedMirrors(t *testing.T, tree *Tree) int {
	t.Helper()
	checked := 0
	for _, seg := range tree.Segments {
		if seg.tree == nil || seg.seen == nil {
			continue
		}
		tops := topLevel(seg.tree, 0)
		if seg.tree.RootNode().Type() != "module" {
			// A region that parses as no module at all: one statement,
			// its root (see spliceRegion).
			tops = []top{wholeTop(seg.tree, 0)}
		}
		if len(tops) != 1 || len(seg.Nodes) != 1 {
			t.Fatalf("a segment with a seen table has %d statements, its tree %d", len(seg.Nodes), len(tops))
		}
		var buf scratch
		want, wantSeen, _ := mirror(flatten(tops[0].node, &buf, nil), seg.Base, tree.rootNumber, nil, true, nil)
		got := unsafe.Slice(seg.Nodes[0], len(seg.seen))
		if len(want) != len(got) || len(wantSeen) != len(seg.seen) {
			t.Fatalf("the mirror has %d nodes (seen: %d), a fresh walk %d (%d)", len(got), len(seg.seen), len(want), len(wantSeen))
		}
		for i := range want {
			g, w := &got[i], &want[i]
			same := g.start == w.start && g.end == w.end && g.kind == w.kind && g.field == w.field && g.Named == w.Named &&
				g.firstAt == w.firstAt && g.nextAt == w.nextAt && seg.seen[i] == wantSeen[i]
			if i == 0 {
				same = same && g.Parent() == tree.Root
			} else {
				same = same && indexIn(got, g.Parent()) == indexIn(want, w.Parent())
			}
			if !same {
				t.Fatalf("node %d of the mirror differs from a fresh walk's: %s %d-%d, want %s %d-%d", i, g.Kind(), g.start, g.end, w.Kind(), w.start, w.end)
			}
		}
		if shape := shapeOfMirror(shapeBasis, got, seg.Base); shape != seg.Shape() || shape != shapeOf(tops, 0, &buf) {
			t.Fatal("the segment's shape is not its mirror's, or not its tree's")
		}
		checked++
	}
	return checked
}

// A panic in one of Parallel's goroutines reaches its caller, whose
// recovery (the server's, check's) then sees it, instead of ending the
// process.
func TestParallelRaisesPanicsInTheCaller(t *testing.T) {
	defer func() {
		if p := recover(); p != "boom" {
			t.Errorf("recovered %v, want the worker's panic", p)
		}
	}()
	done := make([]bool, 3)
	Parallel(3, func(w int) {
		done[w] = true
		if w == 1 {
			panic("boom")
		}
	})
	t.Error("parallel returned after a worker panicked")
}

// A MISSING node the parser puts at the very end of a file is a top-level
// node of no length there: telling separators apart read the byte after
// the file (found by FuzzAnalyze; it ended the process).
func TestEmptyTopLevelNodeAtTheEnd(t *testing.T) {
	src := []byte("for epoch in 3:\n for x in erate(loader):\n        try:\n            out = model(x)\n" +
		"              except RuntimeError:\n            torch.cuda.empty_cache()\n    zN        continue\n" +
		"#       if step % 100 == 0:\n      \x7f     torch.cuda.empty_cache()")
	for _, parse := range []func(context.Context, []byte) (*Tree, error){Parse, ParseForEditing} {
		if _, err := parse(context.Background(), src); err != nil {
			t.Fatal(err)
		}
	}
}

// Opening a file keeps the tree of a large class decorated at column 0 (a
// chunk starts at its first decorator) and of one followed by comments at
// column 0 (they go with the statement after them, as the parser reads
// them), as real files have them (ray's @PublicAPI Dataset, tensordict's
// TensorDictBase): the first edit inside either is then parsed
// incrementally. The chunked parse is the whole parse's.
func TestLargeClassesKeepTheirTreesAtOpen(t *testing.T) {
	class := func(name string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "class %s:\n", name)
		for i := range 600 { // 36 KB: above keepTreeFrom
			fmt.Fprintf(&b, "    def method%d(self, x):\n        return self.step(x) * %d\n\n", i, i)
		}
		return b.String()
	}
	src := []byte("import torch\n\n\n@public_api\n@register(\"a\")\n" + class("Decorated") +
		"\n# Bind the class where the mixins look for it.\n\n# (two comment lines, a blank between)\nBOUND = Decorated\n\n\n" +
		class("Commented") + "\n\n# a comment before the last statement\nfor m in MIXINS:\n    m.Commented = Commented\n")
	tree, err := ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{}
	for _, seg := range tree.Segments {
		if seg.tree != nil {
			kept[string(seg.text[:bytes.IndexByte(seg.text, ':')])] = true
		}
	}
	if want := map[string]bool{"@public_api\n@register(\"a\")\nclass Decorated": true, "class Commented": true}; !maps.Equal(kept, want) {
		t.Errorf("the open kept the trees of %q, want the two classes'", slices.Sorted(maps.Keys(kept)))
	}
	if want, _, _, _ := piecewise(t, src); renderStatements(tree) != want {
		t.Error("the chunked parse differs from the whole parse")
	}
	for _, name := range []string{"method300", "method599(self, x):\n        return self.step(x) * 599\n\n\n\n# a comment"} {
		before := reparsed.Load()
		at := bytes.LastIndex(src, []byte(name)) + 3
		if tree, src = edit(t, tree, src, at, at, "x"); reparsed.Load() != before+1 {
			t.Errorf("the first edit at %s was not parsed incrementally", name[:9])
		}
	}
}

// An edit inside a large statement (a table of thousands of lines in one
// literal) is parsed incrementally from the tree the statement kept, and
// gives what a fresh parse gives; the kept trees are freed with their
// segments.
func TestLargeStatementsReparseIncrementally(t *testing.T) {
	var b strings.Builder
	b.WriteString("import torch\n\ntable = [\n")
	for i := range 700 { // 49 KB: above keepTreeFrom
		fmt.Fprintf(&b, "    Op('op%d', sample=lambda x: x * %d, dtypes=(torch.float32,)),\n", i, i)
	}
	b.WriteString("]\n\n\ndef after(x):\n    return x\n")
	src := []byte(b.String())
	tree, err := ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	// Opened, the table keeps its tree already (see aroundLargeStatements),
	// so even the first edit inside it is parsed incrementally.
	kept := 0
	for _, seg := range tree.Segments {
		if seg.tree != nil {
			kept++
		}
	}
	if kept != 1 {
		t.Fatalf("the open kept the trees of %d statements, want the table's", kept)
	}
	// Past keepAtOpen, an open keeps none.
	defer func(budget int64) { keepAtOpen = budget }(keepAtOpen)
	keepAtOpen = 0 // not keptBytes: trees of earlier tests are freed meanwhile as their segments are collected
	if bounded, err := ParseForEditing(context.Background(), src); err != nil {
		t.Fatal(err)
	} else {
		for _, seg := range bounded.Segments {
			if seg.tree != nil {
				t.Fatal("an open past keepAtOpen kept a tree")
			}
		}
	}
	if checkReusedMirrors(t, tree) != 1 {
		t.Fatal("the table's mirror has no seen table after the open")
	}
	first, copiedFirst := reparsed.Load(), reusedNodes.Load()
	at := bytes.Index(src, []byte("op350"))
	if tree, src = edit(t, tree, src, at, at, "x"); reparsed.Load() != first+1 {
		t.Fatal("the first edit inside the table was not parsed incrementally")
	}
	if checkReusedMirrors(t, tree) != 1 || reusedNodes.Load() == copiedFirst {
		t.Fatal("the first edit's mirror of the table copied nothing from the open's")
	}
	rng := rand.New(rand.NewSource(11))
	pieces := []string{"x", " ", "(", ")", ",", "\n", "\r\n", "\r", "'", "#", "1", "é", ""}
	before, copied := reparsed.Load(), reusedNodes.Load()
	defer func(size uint32) { reuseWalkFirst = size }(reuseWalkFirst)
	for i := range 80 {
		// Every other walk finds its first buffer full.
		reuseWalkFirst = []uint32{64, 1 << 14}[i%2]
		lo := bytes.Index(src, []byte("table = [")) + len("table = [")
		hi := bytes.Index(src, []byte("]\n\n\ndef after"))
		start := lo + rng.Intn(hi-lo)
		end := min(hi, start+rng.Intn(4))
		for start > lo && src[start]&0xC0 == 0x80 {
			start--
		}
		for end < hi && src[end]&0xC0 == 0x80 {
			end++
		}
		tree, src, _ = editChecked(t, tree, src, start, end, pieces[rng.Intn(len(pieces))])
	}
	if n := reparsed.Load() - before; n < 60 {
		t.Errorf("%d of about 100 edits inside the table were parsed incrementally", n)
	}
	// The table has about 20,000 nodes; an edit changes a few dozen.
	if n := reusedNodes.Load() - copied; n < 60*15_000 {
		t.Errorf("the mirrors of about 100 edits copied %d nodes from the version before", n)
	}
	tree = nil
	for deadline := time.Now().Add(5 * time.Second); LiveTrees() != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d tree-sitter trees still live after their segments were dropped", LiveTrees())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// A version's laid-out text is written into the text of an earlier version
// that nothing reaches any more (see spare.go), rewriting the segments
// that differ: the texts stay exact, and a text something still reads (a
// string viewing it) is never written over.
func TestSpareTextsAreReusedOnlyWhenUnreachable(t *testing.T) {
	src := []byte(strings.Repeat(threeFunctions, 40))
	tree, err := ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	// A view of the first version's text, held to the end.
	first := tree.Statements[len(tree.Statements)/2]
	view, want := first.Text(tree.Src), string(src[tree.Real(first.Start()):tree.Real(first.End())])
	took := tookSpare.Load()
	rng := rand.New(rand.NewSource(3))
	for i := range 60 {
		at := rng.Intn(len(src))
		text := []string{"x", "\n", "", "(", ")"}[i%5]
		end := min(len(src), at+rng.Intn(2))
		for at > 0 && src[at]&0xC0 == 0x80 {
			at--
		}
		for end < len(src) && src[end]&0xC0 == 0x80 {
			end++
		}
		tree, src = edit(t, tree, src, at, end, text)
		checkLayout(t, tree, src)
		if i%3 == 0 {
			runtime.GC() // the unreachable versions' texts become spares
			runtime.Gosched()
		}
	}
	if n := tookSpare.Load() - took; n < 20 {
		t.Errorf("%d of 60 versions were written into a spare text", n)
	}
	if view != want {
		t.Fatalf("a text still viewed was written over: %q, was %q", view, want)
	}
	// At a pause the spares go, and none comes back until the next edit.
	checkSparesDropped(t, tree)
}

// checkSparesDropped gives memory back as at a pause, and fails unless the
// tree's layout then holds no spare text or source.
func checkSparesDropped(t *testing.T, tree *Tree) {
	t.Helper()
	ReleaseMemory()
	runtime.GC()
	tree.spares.mu.Lock()
	defer tree.spares.mu.Unlock()
	if len(tree.spares.texts) != 0 || len(tree.spares.sources) != 0 || len(tree.spares.nodeArrays) != 0 || len(tree.spares.seenArrays) != 0 {
		t.Errorf("%d spare texts, %d sources and %d+%d mirror arrays are kept after ReleaseMemory", len(tree.spares.texts), len(tree.spares.sources), len(tree.spares.nodeArrays), len(tree.spares.seenArrays))
	}
}

// suiteOf is a class Suite of n methods step0, step1, ... with body (a
// format of the method's number), and a function after it.
func suiteOf(n int, body string) string {
	var b strings.Builder
	b.WriteString("class Suite:\n")
	for i := range n {
		fmt.Fprintf(&b, "    def step%d(self, x):\n", i)
		fmt.Fprintf(&b, body, i)
		b.WriteString("\n")
	}
	b.WriteString("\ndef run(suite):\n    return suite.step0(None)\n")
	return b.String()
}

// The mirror arrays of a large class typed into become spares once
// unreachable, and later mirrors of the class are written into them: each
// one as a fresh walk of its tree would be, and no array still reached
// written over.
func TestMirrorArraysAreReusedOnlyWhenUnreachable(t *testing.T) {
	src := []byte(suiteOf(400, "        y = self.model(x, [1, 2]) * %[1]d\n        return {'loss': y.sum(), 'n': len(x)}\n"))
	tree := parseForEditing(t, src)
	at := bytes.Index(src, []byte("        return {'loss': y.sum(), 'n': len(x)}\n\n    def step200")) + len("        ")
	// Typing in the class once gives it a kept tree; then a node of that
	// version's mirror is held to the end.
	tree, src = edit(t, tree, src, at, at, "z")
	at++
	class := tree.Segments[tree.segmentOfSource(at)]
	if class.tree == nil || len(class.seen)*int(unsafe.Sizeof(Node{})) < spareArrayFrom {
		t.Fatalf("the class keeps no tree, or its mirror is too small to keep (%d nodes)", len(class.seen))
	}
	held := &class.Nodes[0].subtree()[len(class.seen)/2]
	heldNode := *held
	took := tookSpareArray.Load()
	for i := range 60 {
		key := []string{"x", ".", "(", ")", "\n        "}[i%5]
		tree, src, _ = editChecked(t, tree, src, at, at, key)
		at += len(key)
		if i%3 == 0 {
			runtime.GC() // the unreachable versions' arrays become spares
			runtime.Gosched()
		}
	}
	if n := tookSpareArray.Load() - took; n < 20 {
		t.Errorf("%d mirror arrays of 60 or more versions were spares", n)
	}
	if *held != heldNode {
		t.Fatalf("a node still reached was written over: %+v, was %+v", *held, heldNode)
	}
	checkSparesDropped(t, tree)
}

// With no spare text left (after a pause, or between two collections), a
// version's text is copied in the background for the next one (prepare):
// without a collection, every version after the first writes into the
// copy of the one before, and the texts stay exact.
func TestSpareTextsArePreparedWhenNoneIsLeft(t *testing.T) {
	src := []byte(strings.Repeat(threeFunctions, 40))
	tree, err := ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	ReleaseMemory() // no spares, of this layout or any other
	waitPrepared := func() {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			tree.spares.mu.Lock()
			ready := !tree.spares.preparing && len(tree.spares.texts) > 0
			tree.spares.mu.Unlock()
			if ready {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("no spare text was prepared")
			}
		}
	}
	took := tookSpare.Load()
	rng := rand.New(rand.NewSource(9))
	for i := range 20 {
		at := rng.Intn(len(src))
		for at > 0 && src[at]&0xC0 == 0x80 {
			at--
		}
		tree, src = edit(t, tree, src, at, at, []string{"x", "\n", "(", ")"}[i%4])
		checkLayout(t, tree, src)
		waitPrepared()
	}
	if n := tookSpare.Load() - took; n < 19 {
		t.Errorf("%d of 20 versions were written into a spare text, want every one after the first", n)
	}
	// A layout with a spare does not prepare another.
	before := prepared.Load()
	tree.spares.prepare(tree.Src, tree.placed)
	tree.spares.mu.Lock()
	preparing := tree.spares.preparing
	tree.spares.mu.Unlock()
	if preparing || prepared.Load() != before {
		t.Error("a layout with a spare prepared another")
	}
}

// A version parsed while its spares are still being made waits for them
// rather than copying the last text itself: every version of a buffer
// edited with no pause, each prepared only after the last (as the server
// does, see Editor.PrepareSparesLater), is written into a prepared spare.
func TestAVersionWaitsForTheSpareBeingMade(t *testing.T) {
	// Large enough (about 6 MB laid out) that its copy takes longer than
	// the next edit's parse takes to need it.
	src := []byte(strings.Repeat(threeFunctions, 4000))
	tree, err := ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	ReleaseMemory() // no spares, of this layout or any other
	tree.PrepareForEdits()
	took := tookSpare.Load()
	for i := range 6 {
		at := len(src) / 2
		for at > 0 && src[at-1] != '\n' {
			at--
		}
		ed := NewEditor(tree, src)
		ed.PrepareSparesLater()
		ed.Replace(at, at, []string{"x = 1\n", ""}[i%2])
		if i%2 == 1 {
			ed.Replace(at, at+len("x = 1\n"), "")
		}
		next, err := ed.Parse(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		tree, src = next, ed.Text()
		checkLayout(t, tree, src)
		tree.PrepareForEdits()
	}
	if n := tookSpare.Load() - took; n != 6 {
		t.Errorf("%d of 6 versions were written into a spare text, want all", n)
	}
}

// A version's source is written into the source of an earlier version
// that nothing reaches any more (see spare.go): each version's source is
// the text as edited, and a source something still holds is never written
// over.
func TestSpareSourcesAreReusedOnlyWhenUnreachable(t *testing.T) {
	ReleaseMemory()                                    // no spares of other tests
	src := []byte(strings.Repeat(threeFunctions, 600)) // 100 KB: large enough to be kept
	tree, err := ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	var held []byte // the source of one of the first versions, held to the end
	var heldWas string
	want := string(src) // the text, edited apart from the editor
	took := tookSpareSource.Load()
	rng := rand.New(rand.NewSource(5))
	for i := range 60 {
		at := rng.Intn(len(src))
		text := []string{"x", "\n", "", "(", ")", "yy"}[i%6]
		end := min(len(src), at+rng.Intn(3))
		tree, src = edit(t, tree, src, at, end, text)
		want = want[:at] + text + want[end:]
		if string(src) != want {
			t.Fatalf("version %d: the source differs from the text as edited", i)
		}
		if i == 2 {
			held, heldWas = src, string(src)
		}
		if i%3 == 0 {
			runtime.GC() // the unreachable versions' sources become spares
			runtime.Gosched()
		}
	}
	if n := tookSpareSource.Load() - took; n < 20 {
		t.Errorf("%d of 60 sources were written into a spare", n)
	}
	if string(held) != heldWas {
		t.Fatal("a source still held was written over")
	}
	checkLayout(t, tree, src)
	checkSparesDropped(t, tree)
}

// With no spare source left (after a pause, or between two collections),
// an empty one, its pages touched, is made ready in the background for the
// next version (prepareSource); after ReleaseMemory let the spares go,
// PrepareForEdits makes a text and a source ready. Without a collection,
// every version then writes into spares, and the texts stay exact.
func TestSparesArePreparedForTheNextEdit(t *testing.T) {
	src := []byte(strings.Repeat(threeFunctions, 600)) // 100 KB: large enough for a spare source
	tree, err := ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	checkSparesDropped(t, tree)
	tree.PrepareForEdits()
	waitReady := func() {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			tree.spares.mu.Lock()
			ready := len(tree.spares.texts) > 0 && len(tree.spares.sources) > 0
			tree.spares.mu.Unlock()
			if ready {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("no spare text and source were prepared")
			}
		}
	}
	waitReady()
	tookText, tookSource := tookSpare.Load(), tookSpareSource.Load()
	want := string(src)
	rng := rand.New(rand.NewSource(11))
	for i := range 20 {
		at := rng.Intn(len(src))
		for at > 0 && src[at]&0xC0 == 0x80 {
			at--
		}
		text := []string{"x", "\n", "(", ")"}[i%4]
		tree, src = edit(t, tree, src, at, at, text)
		want = want[:at] + text + want[at:]
		if string(src) != want {
			t.Fatalf("version %d: the source differs from the text as edited", i)
		}
		checkLayout(t, tree, src)
		waitReady()
	}
	if n := tookSpare.Load() - tookText; n < 20 {
		t.Errorf("%d of 20 versions were written into a spare text", n)
	}
	if n := tookSpareSource.Load() - tookSource; n < 20 {
		t.Errorf("%d of 20 sources were written into a spare", n)
	}
	// A layout with a spare source does not prepare another.
	before := preparedSources.Load()
	tree.spares.prepareSource(withRoom(len(src)))
	tree.spares.mu.Lock()
	preparing := tree.spares.preparingSource
	tree.spares.mu.Unlock()
	if preparing || preparedSources.Load() != before {
		t.Error("a layout with a spare source prepared another")
	}
}

// The spare texts of every buffer together stay within one budget
// (maxSpareBytes), however many buffers are edited.
func TestSpareTextsOfAllBuffersShareOneBudget(t *testing.T) {
	ReleaseMemory() // no spares of other tests
	src := []byte(strings.Repeat(threeFunctions, 40))
	var trees []*Tree
	var srcs [][]byte
	for range 3 {
		tree, err := ParseForEditing(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		trees, srcs = append(trees, tree), append(srcs, src)
	}
	size := len(trees[0].Src)
	defer maxSpareBytes.Store(maxSpareBytes.Load())
	maxSpareBytes.Store(int64(5 * size))
	most := 0
	for k := range trees {
		// Eight versions between two collections: seven texts become
		// spares at once.
		for range 8 {
			at := len(srcs[k]) / 2
			trees[k], srcs[k] = edit(t, trees[k], srcs[k], at, at, "\n")
		}
		runtime.GC()
		runtime.Gosched()
		runtime.GC() // the finalizers that keep spares have run
		most = max(most, spareBytesHeld())
		if held := spareBytesHeld(); int64(held) > maxSpareBytes.Load() {
			t.Fatalf("after editing %d buffers the spares hold %d bytes, over the budget of %d", k+1, held, maxSpareBytes.Load())
		}
	}
	if most < 3*size {
		t.Errorf("the spares never held more than %d bytes of a budget of %d: the test tests nothing", most, maxSpareBytes.Load())
	}
}

// Own gives the text of a segment's nodes as views of the segment's own
// text, and anything else (the spaces after it, another segment's text, a
// string from elsewhere) as a copy.
func TestSegmentOwnViewsOnlyItsOwnText(t *testing.T) {
	src := []byte("import torch\n\n\ndef f(x):\n    return x.cuda()  # move\n\nclass A:\n    y = f(1)\n")
	tree, err := ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	if !tree.LaidOut() || len(tree.Segments) < 3 {
		t.Fatalf("want a laid-out tree of at least 3 segments, got %d", len(tree.Segments))
	}
	within := func(s string, b []byte) bool {
		p, lo := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		return p >= lo && p+uintptr(len(s)) <= lo+uintptr(len(b))
	}
	for i, seg := range tree.Segments {
		for _, stmt := range seg.Nodes {
			Walk(stmt, func(n *Node) bool {
				text := n.Text(tree.Src)
				got := seg.Own(text, tree.Src)
				if got != text {
					t.Errorf("segment %d: Own(%q) = %q", i, text, got)
				}
				if len(text) > 0 && !within(got, seg.Text()) {
					t.Errorf("segment %d: Own(%q) is not a view of the segment's text", i, text)
				}
				return true
			})
		}
		// The spaces after the segment, and the next segment's first byte.
		end := tree.segmentEnd(i)
		if end+1 > len(tree.Src) {
			continue
		}
		for _, s := range []string{unsafe.String(&tree.Src[end-2], 2), unsafe.String(&tree.Src[end-1], 2)} {
			if got := seg.Own(s, tree.Src); got != s || within(got, seg.Text()) || within(got, tree.Src) {
				t.Errorf("segment %d: Own(%q) = %q, a view where a copy was wanted", i, s, got)
			}
		}
	}
	other := strings.Clone("torch")
	if got := tree.Segments[0].Own(other, tree.Src); got != other || unsafe.StringData(got) == unsafe.StringData(other) {
		t.Errorf("Own of a string from elsewhere: %q, not a copy", got)
	}
}

// A file opened with a bracket left open in its middle parses, whole, to
// an ERROR root over the statements before the error and the error, which
// takes in the rest of the file. An edit among the statements before it
// that leaves them without an error is reparsed alone, as in any file (it
// parsed the whole file again before: 470 ms a keystroke at 10,000
// lines), and gives the tree a whole parse gives; an edit that writes an
// error there, or reaches the error, parses the whole file again.
func TestEditsBeforeASwallowingErrorAreReparsedAlone(t *testing.T) {
	// lspbench's generated training file, with `broken = foo(` put
	// before the middle dataset.
	src, err := os.ReadFile(filepath.Join("testdata", "swallowing_error.py"))
	if err != nil {
		t.Fatal(err)
	}
	// Parsed whole, as ParseForEditing parses a file it cannot cut (a
	// small one, or one with no definition after the error, see
	// parseChunked); this one it opens in parts (see
	// TestEditsAfterABracketLeftOpenAreReparsedAlone).
	tree := layOutWhole(t, src)
	if tree.Root.Kind() != "ERROR" || !tree.Segments[len(tree.Segments)-1].hasError || tree.Segments[0].hasError {
		t.Fatalf("root %s, %d segments: not the case this test is about", tree.Root.Kind(), len(tree.Segments))
	}
	// An edit reparsed alone keeps the whole parse's tree; one that
	// parses the whole file again gets ParseForEditing's.
	// A name typed longer in train0, before the error: alone.
	at := bytes.Index(src, []byte("history = []")) + 1
	next, nsrc := edit(t, tree, src, at, at, "y")
	sameTree(t, next, layOutWhole(t, nsrc))
	if n := keptSegments(next, tree); n != len(tree.Segments)-1 {
		t.Errorf("%d of %d segments kept: the edit was not parsed alone", n, len(tree.Segments))
	}
	// A bracket opened in train0 as well: the whole file again.
	at = bytes.Index(nsrc, []byte("return history")) + len("return history")
	broken, bsrc := edit(t, next, nsrc, at, at, " + (")
	sameTree(t, broken, parseForEditing(t, bsrc))
	if n := keptSegments(broken, next); n != 0 {
		t.Errorf("%d segments kept by an edit that wrote a second error", n)
	}
	// The bracket closed: the whole file again, which is a module now.
	at = bytes.Index(nsrc, []byte("foo(")) + len("foo(")
	mended, msrc := edit(t, next, nsrc, at, at, ")")
	sameTree(t, mended, parseForEditing(t, msrc))
	if mended.Root.Kind() != "module" || mended.HasError() {
		t.Errorf("the mended file's root is %s (error: %v)", mended.Root.Kind(), mended.HasError())
	}
	// An edit inside the error: the whole file again.
	at = bytes.LastIndex(nsrc, []byte("history = []")) + 1
	inside, isrc := edit(t, next, nsrc, at, at, "y")
	sameTree(t, inside, parseForEditing(t, isrc))
	if n := keptSegments(inside, next); n != 0 {
		t.Errorf("%d segments kept by an edit inside the error", n)
	}
}

// A file opened with a bracket left open before a definition is parsed in
// parts (see statementStarts' recoveries): an edit after the error, next
// to it or far from it, is parsed alone and leaves the definitions after
// the error as they were, and the edit that closes the bracket mends the
// file.
func TestEditsAfterABracketLeftOpenAreReparsedAlone(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "swallowing_error.py"))
	if err != nil {
		t.Fatal(err)
	}
	tree, err := ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	errorAt := bytes.Index(src, []byte("broken = foo("))
	data7 := bytes.Index(src, []byte("class Data7"))
	k := tree.segmentOfSource(errorAt)
	if tree.Root.Kind() != "module" || !tree.Segments[k].hasError || tree.starts[k+1] != data7 || tree.Segments[k+1].hasError {
		t.Fatalf("root %s, %d segments: the file was not opened in parts", tree.Root.Kind(), len(tree.Segments))
	}
	for _, c := range []struct {
		name string
		at   int
	}{
		{"in the definition right after the error", bytes.Index(src[data7:], []byte("self.x = ")) + data7 + 1},
		{"far after it", bytes.LastIndex(src, []byte("history = []")) + 1},
	} {
		next, nsrc := edit(t, tree, src, c.at, c.at, "y")
		sameTree(t, next, parseForEditing(t, nsrc))
		if n := keptSegments(next, tree); n != len(tree.Segments)-1 {
			t.Errorf("%s: %d of %d segments kept: the edit was not parsed alone", c.name, n, len(tree.Segments))
		}
		if next.Statements[k+1].Kind() != "class_definition" || next.Segments[k+1].hasError {
			t.Errorf("%s: the class after the error is now a %s", c.name, next.Statements[k+1].Kind())
		}
	}
	// The bracket closed: a file without an error, as a fresh parse
	// gives it, from the segments around the error.
	at := errorAt + len("broken = foo(")
	mended, msrc := edit(t, tree, src, at, at, ")")
	sameTree(t, mended, parseForEditing(t, msrc))
	if mended.HasError() {
		t.Error("the mended file has an error")
	}
	if n := keptSegments(mended, tree); n < len(tree.Segments)-3 {
		t.Errorf("%d of %d segments kept by the edit that closed the bracket", n, len(tree.Segments))
	}
}

// Text typed in one segment that completes the statement starting the
// next one, or that an edit in the next one completes, joins them: a
// file without a syntax error gets the tree of a fresh parse, whichever
// segments the keys went to.
func TestTypingThatJoinsSegments(t *testing.T) {
	const base = "import torch\n\nx = 1\n\n\ndef f():\n    return torch.zeros(1)\n\n\ny = 2\n"
	cases := []struct {
		name string
		keys []struct {
			before string // typed just before the first occurrence of this
			text   string
		}
	}{
		{"a decorator on the blank line above a function", []struct{ before, text string }{
			{"\ndef f", "@torch.no_grad()"},
		}},
		{"a decorator typed at the start of the function's line", []struct{ before, text string }{
			{"def f", "@torch.no_grad()\n"},
		}},
		{"a string opened above a function and closed after it", []struct{ before, text string }{
			{"\ndef f", "s = \"\"\""},
			{"\n\n\ny = 2", "\n\"\"\""},
		}},
	}
	for _, c := range cases {
		src := []byte(base)
		tree, err := ParseForEditing(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range c.keys {
			at := bytes.Index(src, []byte(k.before))
			for _, r := range k.text { // one key at a time
				tree, src = edit(t, tree, src, at, at, string(r))
				checkLayout(t, tree, src)
				at += len(string(r))
			}
		}
		fresh, err := ParseForEditing(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		if fresh.HasError() {
			t.Fatalf("%s: %q has a syntax error: not the case this test is about", c.name, src)
		}
		if tree.HasError() || renderStatements(tree) != renderStatements(fresh) {
			t.Errorf("%s: %q typed key by key differs from a fresh parse (error: %v)", c.name, src, tree.HasError())
		}
	}
}

// keptSegments counts the segments of next that prev has too: the
// statements an edit left alone.
func keptSegments(next, prev *Tree) int {
	n := 0
	for _, s := range next.Segments {
		if slices.Contains(prev.Segments, s) {
			n++
		}
	}
	return n
}

// sameTree fails unless the edited tree got (whose layout it checks) has
// want's root and statements.
func sameTree(t *testing.T, got, want *Tree) {
	t.Helper()
	checkLayout(t, got, got.src)
	if g, w := got.Root.Kind()+renderStatements(got), want.Root.Kind()+renderStatements(want); g != w {
		t.Fatalf("the edited tree differs from a fresh parse\ngot  %s\nwant %s", g, w)
	}
}

// parseForEditing is ParseForEditing, failing t on an error.
func parseForEditing(t *testing.T, src []byte) *Tree {
	t.Helper()
	tree, err := ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// Quotes typed below a string left open above (its closing quotes
// deleted) close it: the text between, which tree-sitter had parsed as
// statements after the error, is the string's, and the edited tree is a
// fresh parse's. The statements after the error were segments without
// one, and the quotes' segment was parsed alone (a real file's edits in
// TestIncrementalMatchesFreshOnRealCode found it).
func TestQuotesThatCloseAStringLeftOpenAbove(t *testing.T) {
	src := []byte("\"\"\"Docs.\"\"\"\n\nx = 1\n\n\ndef f():\n    return 2\n")
	tree := parseForEditing(t, src)
	at := bytes.Index(src, []byte("Docs.")) + len("Docs.")
	tree, src = edit(t, tree, src, at, at+3, "")
	if !tree.HasError() {
		t.Fatalf("%q: no syntax error with the string left open", src)
	}
	at = bytes.Index(src, []byte("return 2")) + len("return 2")
	for _, r := range `"""` {
		tree, src = edit(t, tree, src, at, at, string(r))
		checkLayout(t, tree, src)
		at++
	}
	fresh := parseForEditing(t, src)
	if fresh.HasError() {
		t.Fatalf("%q has a syntax error: not the case this test is about", src)
	}
	if tree.HasError() {
		t.Fatalf("%q: the closing quotes left a syntax error", src)
	}
	sameTree(t, tree, fresh)
}

// A class that keeps its tree is mirrored after an edit inside one method
// by copying what tree-sitter reused from the last version's mirror:
// CopiedFrom says so for the methods copied whole alone, and they have
// their old shapes.
func TestCopiedMethodsHaveTheirShape(t *testing.T) {
	var b strings.Builder
	b.WriteString("import torch\n\n\nclass Big:\n")
	for i := range 400 { // about 44 KB: above keepTreeFrom
		fmt.Fprintf(&b, "    def m%d(self, x):\n        y = self.f(x, %d)\n        return [y * k for k in range(%d)]\n\n", i, i, i)
	}
	src := []byte(b.String())
	tree := parseForEditing(t, src)
	methods := func(tree *Tree) (*Segment, []*Node) {
		for _, seg := range tree.Segments {
			if len(seg.Nodes) == 1 && seg.Nodes[0].Is("class_definition") {
				var ms []*Node
				for c := range seg.Nodes[0].Child("body").Children() {
					if c.Is("function_definition") {
						ms = append(ms, c)
					}
				}
				return seg, ms
			}
		}
		t.Fatal("no class segment")
		return nil, nil
	}
	first, _ := methods(tree)
	at := bytes.Index(src, []byte("y = self.f(x, 150)"))
	tree, src = edit(t, tree, src, at, at, "z")
	oldSeg, oldMethods := methods(tree)
	tree, _ = edit(t, tree, src, at, at+1, "")
	seg, cur := methods(tree)
	if len(cur) != len(oldMethods) {
		t.Fatalf("%d methods, %d before", len(cur), len(oldMethods))
	}
	copied := 0
	for i, m := range cur {
		if !seg.CopiedFrom(oldSeg, oldMethods[i], m) {
			continue
		}
		copied++
		if i == 150 {
			t.Error("the edited method is said to be copied")
		}
		if !SameShape(oldMethods[i], m) {
			t.Errorf("method %d is said to be copied but has another shape", i)
		}
		if j := (i + 1) % len(cur); seg.CopiedFrom(oldSeg, oldMethods[j], m) || seg.CopiedFrom(first, oldMethods[i], m) {
			t.Errorf("method %d is said to be a copy of method %d, or of a version it was not mirrored from", i, j)
		}
	}
	// Tree-sitter reuses the methods before the edit whole, and those
	// after it statement by statement.
	if copied < 140 {
		t.Errorf("%d of the %d methods are said to be copied, want the 150 before the edited one", copied, len(cur))
	}
}

// A letter typed before the first statement of a method's body (next to
// the indent token) or before the last one (next to the dedent) in a large
// class is parsed incrementally, and the parse reuses the rest of the
// class. Stock tree-sitter, finding the scanner's state before a
// reusable node different from the parser's (the indent token next to the
// edit not lexed yet), skipped that node whole instead of looking inside
// it, and then skipped the next method the same way, out of the class: it
// lexed and parsed the rest of the class again, 10 to 70 ms a keystroke
// in PyTorch's distributed_test.py. The tree-sitter built in looks inside
// such a node (see internal/go-tree-sitter/README.md).
func TestAnEditAtABlocksEdgeReusesTheRestOfTheClass(t *testing.T) {
	var b strings.Builder
	b.WriteString("import torch\n\n\nclass DistributedTest:\n    class _DistTestBase:\n")
	for i := range 150 { // about 70 KB: above keepTreeFrom
		fmt.Fprintf(&b, `        @skip_if_small_worldsize
        @sandcastle_skip_if(BACKEND == "nccl", "Nccl does not support CPU tensors")
        def test_broadcast_group_%[1]d(self):
            group, group_id, rank = self._init_group_test()
            self._test_broadcast_helper(group, group_id, rank)

        def _test_state_dict_%[1]d(self, local_model, net):
            for (_, local_tensor), (_, dist_tensor) in zip(
                local_model.state_dict().items(), net.module.state_dict().items()
            ):
                self.assertEqual(local_tensor, dist_tensor)

`, i)
	}
	b.WriteString("\ninstantiate_parametrized_tests(DistributedTest)\n")
	src := []byte(b.String())
	tree, err := ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	class := func(tree *Tree) *Segment { return segmentStarting(t, tree, "class DistributedTest") }
	if class(tree).tree == nil {
		t.Fatal("the class did not keep its tree at the open")
	}
	for _, place := range []string{
		"group, group_id, rank = self._init_group_test()\n            self._test_broadcast_helper(group, group_id, rank)\n\n        def _test_state_dict_50(",
		"self.assertEqual(local_tensor, dist_tensor)\n\n        @skip_if_small_worldsize\n        @sandcastle_skip_if(BACKEND == \"nccl\", \"Nccl does not support CPU tensors\")\n        def test_broadcast_group_51(",
	} {
		at := bytes.Index(src, []byte(place))
		for _, text := range []string{"x", ""} {
			before, copied := reparsed.Load(), reusedNodes.Load()
			end := at
			if text == "" {
				end = at + 1 // the letter typed, deleted again
			}
			tree, src = edit(t, tree, src, at, end, text)
			if reparsed.Load() != before+1 {
				t.Fatalf("the edit at %.30q was not parsed incrementally", place)
			}
			checkLayout(t, tree, src)
			checkReusedMirrors(t, tree)
			// An edit changes a few dozen nodes. Stock tree-sitter's
			// parse, skipping the methods after the edit up to where its
			// balanced tree of the class's body resumes, left a quarter
			// of them to be walked again here.
			if nodes, n := len(class(tree).seen), reusedNodes.Load()-copied; n < int64(nodes)-100 {
				t.Errorf("typing %q at %.30q: the mirror copied %d of the class's %d nodes from the last version's", text, place, n, nodes)
			}
		}
	}
}

// Random edits inside a large class that keeps its tree (indentation,
// brackets and strings opened and closed, blocks started, lines joined)
// give what a fresh parse gives whenever the result has no syntax error,
// and a mirror equal to a fresh walk of the kept tree: where the scanner's
// state before an old subtree differs from the parser's, the tree-sitter
// built in looks inside it (internal/go-tree-sitter), and what it reuses
// there must be what a fresh parse builds.
func TestEditsInsideALargeClassReparseAsFresh(t *testing.T) {
	var b strings.Builder
	b.WriteString("import torch\n\n\nclass Suite(torch.nn.Module):\n    \"\"\"Steps.\"\"\"\n\n    scale = 2\n\n")
	for i := range 75 { // about 34 KB: above keepTreeFrom
		fmt.Fprintf(&b, `    @torch.no_grad()
    def evaluate%[1]d(self, loader):
        outs = []
        for x, y in loader:
            if x is None:
                continue
            outs.append((self.model(x) - y).abs().mean())
        return outs

    def step%[1]d(self, loader, opt):
        total = 0
        for x in loader:
            try:
                loss = self.model(x).sum() * %[1]d
            except RuntimeError as e:
                print(f"step {e!r}: {x.shape}")
                raise
            with torch.autocast("cuda"):
                loss.backward()
            total += loss.item()
        return {
            "total": total,  # a comment
            "steps": len(loader),
        }

`, i)
	}
	b.WriteString("\ndef run(suite):\n    return suite.step0([], None)\n")
	src := []byte(b.String())
	tree, err := ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(29))
	pieces := []string{"x", " ", "    ", "(", ")", "[", "]", ",", ":", "\n", "\n        ", "'", "\"", "\"\"\"", "#", "\\\n", "pass\n", "if x:\n", "def f(self):\n", "f\"{", ""}
	before, incremental := reparsed.Load(), 0
	for range 150 {
		lo := bytes.Index(src, []byte("class Suite"))
		hi := bytes.Index(src, []byte("\ndef run"))
		if lo < 0 || hi < lo {
			t.Fatalf("the class or the function after it is gone: %q", src)
		}
		start := lo + len("class Suite(torch.nn.Module):\n") + rng.Intn(hi-lo-len("class Suite(torch.nn.Module):\n"))
		end := min(hi, start+rng.Intn(6))
		var inc bool
		if tree, src, inc = editChecked(t, tree, src, start, end, pieces[rng.Intn(len(pieces))]); inc {
			incremental++
		}
	}
	if n := reparsed.Load() - before; incremental < 100 {
		t.Errorf("%d of 150 edits (%d reparses in all) were parsed incrementally from the class's tree", incremental, n)
	}
}

// A letter typed before the name a table of thousands of lines is bound
// to, and deleted again, is parsed incrementally from the table's kept
// tree, which the table keeps: the change begins at the statement's first
// byte and leaves a statement of its own there, which the statement
// before cannot take in. A change that may join the two (an else, an
// indent, a comment) takes the statement before in, and every version
// gives what a fresh parse gives.
func TestAnEditAtALargeStatementsStartParsesItIncrementally(t *testing.T) {
	var b strings.Builder
	b.WriteString("import torch\n\nif torch.cuda.is_available():\n    DEVICE = 'cuda'\nTABLE = dict(\n")
	for i := range 800 { // about 40 KB: above keepTreeFrom
		fmt.Fprintf(&b, "    op%d=('cuda_op%d', 'hip_op%d', (%d, 'kind')),\n", i, i, i, i)
	}
	b.WriteString(")\n\n\ndef after(x):\n    return x\n")
	src := []byte(b.String())
	tree, err := ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(src, []byte("TABLE = dict("))
	for i, step := range []struct {
		start, end int
		text       string
		// incremental: parsed from a kept tree; kept: the table, a
		// statement of its own, keeps its tree.
		incremental, kept bool
	}{
		{at, at, "x", true, true},
		{at, at + 1, "", true, true},
		// What may join the table to the if before it: parsed with it,
		// as a fresh parse has it (checkLayout).
		{at, at, "else:\n    DEVICE = 'cpu'\n", false, false},
		{at, at + len("else:\n    DEVICE = 'cpu'\n"), "", false, false},
		{at, at, "    ", false, false},
		// The table, indented, went on the if's block: the two are one
		// large statement now, with its own tree.
		{at, at + 4, "", true, false},
		{at, at, "# ", false, false},
		{at, at + 2, "", false, false},
	} {
		before := reparsed.Load()
		tree, src = edit(t, tree, src, step.start, step.end, step.text)
		checkLayout(t, tree, src)
		checkReusedMirrors(t, tree)
		if got := reparsed.Load() > before; got != step.incremental {
			t.Errorf("step %d (%q at the table's start): parsed incrementally %v, want %v", i, step.text, got, step.incremental)
		}
		if step.kept && segmentStarting(t, tree, "TABLE", "xTABLE").tree == nil {
			t.Errorf("step %d (%q at the table's start): the table lost its tree", i, step.text)
		}
	}
}

// editChecked replaces bytes [start, end) of src with text, checks the
// tree against a fresh parse and its kept mirrors against fresh walks, and
// undoes the edit (checked again) when it leaves a syntax error, as a user
// mends what they broke: the next edits start from a text without one.
// incremental says whether the edit was parsed from a kept tree.
func editChecked(t *testing.T, tree *Tree, src []byte, start, end int, text string) (_ *Tree, _ []byte, incremental bool) {
	t.Helper()
	removed, before := string(src[start:end]), reparsed.Load()
	tree, src = edit(t, tree, src, start, end, text)
	incremental = reparsed.Load() > before
	checkLayout(t, tree, src)
	checkReusedMirrors(t, tree)
	if tree.HasError() {
		tree, src = edit(t, tree, src, start, start+len(text), removed)
		checkLayout(t, tree, src)
		checkReusedMirrors(t, tree)
	}
	return tree, src, incremental
}

// segmentStarting returns the segment of tree whose text starts with one
// of prefixes.
func segmentStarting(t *testing.T, tree *Tree, prefixes ...string) *Segment {
	t.Helper()
	for _, seg := range tree.Segments {
		for _, p := range prefixes {
			if bytes.HasPrefix(seg.text, []byte(p)) {
				return seg
			}
		}
	}
	t.Fatalf("no segment starts with %q", prefixes)
	return nil
}
