package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	sitter "github.com/smacker/go-tree-sitter"
	"github.com/vramlint/vramlint/internal/generated"
)

// TestReparseFloorKeepsTheTreeOfTheText types the benchmark's function
// into a file key by key, deletes a few letters, and compares the floor's
// tree with a fresh parse of the text at every step: a reparse timed on a
// tree that was edited wrongly would time another parse than the
// server's.
func TestReparseFloorKeepsTheTreeOfTheText(t *testing.T) {
	text := "import torch\n\n\nclass Net:\n    def forward(self, x):\n        return x  # é\n\n\nx = 1\n"
	floor, err := newReparseFloor(text)
	if err != nil {
		t.Fatal(err)
	}
	defer floor.close()
	at := strings.Index(text, "    def forward")
	typed := generated.AsMethod(generated.TypedFunction, "    ")
	step := 0
	compare := func() {
		t.Helper()
		fresh, err := floorParser.ParseCtx(context.Background(), nil, []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		defer fresh.Close()
		if got, want := withOffsets(floor.tree.RootNode()), withOffsets(fresh.RootNode()); got != want {
			t.Fatalf("after change %d the floor's tree differs from a fresh parse:\n%s\nwant\n%s", step, got, want)
		}
	}
	for _, r := range typed {
		edited := text[:at] + string(r) + text[at:]
		if _, err := floor.apply(text, edited, at, at, string(r)); err != nil {
			t.Fatal(err)
		}
		text = edited
		at += len(string(r))
		step++
		if step%40 == 0 || r == '\n' {
			compare()
		}
	}
	// Deletions after a multi-byte character, and of a whole line.
	for _, cut := range []string{"é", "model.train()\n"} {
		k := strings.Index(text, cut)
		edited := text[:k] + text[k+len(cut):]
		if _, err := floor.apply(text, edited, k, k+len(cut), ""); err != nil {
			t.Fatal(err)
		}
		text = edited
		step++
		compare()
	}
}

// withOffsets writes a tree's nodes, each with its type, its bytes and its
// start point.
func withOffsets(n *sitter.Node) string {
	var b strings.Builder
	var walk func(n *sitter.Node)
	walk = func(n *sitter.Node) {
		p := n.StartPoint()
		fmt.Fprintf(&b, "(%s %d-%d %d:%d", n.Type(), n.StartByte(), n.EndByte(), p.Row, p.Column)
		for i := range int(n.ChildCount()) {
			walk(n.Child(i))
		}
		b.WriteString(")")
	}
	walk(n)
	return b.String()
}

// TestReparseFloorReusesWhatTheEditLeft: after a letter typed in the
// first statement, the reparse keeps most of the tree's inner nodes (the
// same subtrees, shared with the old tree), as the server's tree-sitter
// does. An edit described wrongly to tree-sitter still parses right, by
// lexing everything after it again: the floor would then time a whole
// parse.
func TestReparseFloorReusesWhatTheEditLeft(t *testing.T) {
	text := "x = 1\n" + strings.Repeat("def f():\n    return [1, 2, 3]\n\n", 100) + "def last():\n    return 'é' + 2\n"
	floor, err := newReparseFloor(text)
	if err != nil {
		t.Fatal(err)
	}
	defer floor.close()
	before := map[uintptr]bool{}
	innerNodes(floor.tree.RootNode(), before)
	// The letter typed, then deleted again.
	edited := text[:1] + "a" + text[1:]
	for _, change := range []struct {
		old, new   string
		start, end int
		text       string
	}{{text, edited, 1, 1, "a"}, {edited, text, 1, 2, ""}} {
		if _, err := floor.apply(change.old, change.new, change.start, change.end, change.text); err != nil {
			t.Fatal(err)
		}
		after := map[uintptr]bool{}
		innerNodes(floor.tree.RootNode(), after)
		reused := 0
		for id := range after {
			if before[id] {
				reused++
			}
		}
		if reused < len(after)/2 {
			t.Fatalf("%d of %d inner nodes reused after %q replaced [%d, %d) in the first statement", reused, len(after), change.text, change.start, change.end)
		}
		before = after
	}
}

// innerNodes adds the identity of every node of n's tree that has
// children to ids: tree-sitter's subtree, which a reparse that reuses it
// shares (a leaf may be stored in its node, and is left out).
func innerNodes(n *sitter.Node, ids map[uintptr]bool) {
	if n.ChildCount() == 0 {
		return
	}
	ids[n.ID()] = true
	for i := range int(n.ChildCount()) {
		innerNodes(n.Child(i), ids)
	}
}
