package pyast

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// Random changes applied through an Editor give the text and, where it
// parses without an error, the tree a fresh parse of that text gives, CR
// and CRLF line endings included.
func TestEditorEqualsFreshParse(t *testing.T) {
	src := []byte("import torch\r\n\r\nfor x in loader:\r    y = model(x)\n    total += y\nprint(total)\n")
	pieces := []string{"x", "\n", "\r\n", "\r", "(", ")", ":", "    ", "for i in range(3):\n", "#", "'''", "", "\n# note\n", "\n    "}
	rng := rand.New(rand.NewSource(1))
	tree, err := ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	for step := 0; step < 300; step++ {
		ed := NewEditor(tree, src)
		for n := 1 + rng.Intn(3); n > 0; n-- {
			text := ed.Text()
			start := rng.Intn(len(text) + 2) // past the end: clamped
			end := start + rng.Intn(4) - 1   // before start: empty
			ed.Replace(start, end, pieces[rng.Intn(len(pieces))])
		}
		next, err := ed.Parse(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		checkLayout(t, next, ed.Text())
		src, tree = ed.Text(), next
	}
}

// An editor given a text that is not its tree's source parses it afresh
// rather than splice statements into the wrong places.
func TestEditorOfAnotherText(t *testing.T) {
	tree, _ := ParseForEditing(context.Background(), []byte("def f():\n    return 1\n\n\ndef g():\n    return 2\n"))
	other := []byte("x = 1\n\n\nclass C:\n    pass\n")
	ed := NewEditor(tree, other)
	ed.Replace(0, 0, "y = 2\n")
	next, err := ed.Parse(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkLayout(t, next, ed.Text())
	if next.Root == tree.Root {
		t.Error("the tree of another text was reused")
	}
}

// A comment at column 0 does not end a block: code indented after it goes
// on the statement before. So an edit that leaves indented code after such
// a comment (commenting out a loop's header, writing after a comment, a
// block indented under a comment) gives the tree a fresh parse gives, where
// the statement before takes in the comment and the code, however many
// comments lie between.
func TestCodeIndentedAfterACommentGoesOnTheStatementBefore(t *testing.T) {
	const base = "for step in steps:\n    a = 1\n\n# Reset every step.\n# And again.\nfor x in loader:\n    b = 2\n\nprint(a)\n"
	for _, c := range []struct{ old, new string }{
		{"for x in loader:\n", "# for x in loader:\n"},                  // the header commented out
		{"again.\n", "again. with torch.no_grad():\n    "},              // the fuzzer's: indentation typed after a comment
		{"for x in loader:\n    b = 2\n", "    if x:\n        b = 2\n"}, // the block indented under the comments
	} {
		src := []byte(base)
		tree, err := ParseForEditing(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		at := bytes.Index(src, []byte(c.old))
		tree, src = edit(t, tree, src, at, at+len(c.old), c.new)
		if tree.HasError() {
			t.Fatalf("%q: a syntax error, where a fresh parse has none", src)
		}
		checkLayout(t, tree, src)
		if first := tree.Statements[0]; first.End() < tree.Virtual(bytes.Index(src, []byte("b = 2"))) {
			t.Errorf("%q: the first loop ends before the code indented under the comments", src)
		}
	}
}

// A statement left unfinished at the end of its line (`total = `, an
// operator, a dot) reads on into the next line in tree-sitter, which skips
// a line break where it expects more: a whole parse takes the statement
// after it in, without an error, and so does an edit that leaves one. Not
// a definition or a loop, which nothing reads on into: the error stays
// where it is, and the statements after it keep their segments.
func TestAStatementLeftUnfinishedReadsOnIntoTheNext(t *testing.T) {
	const base = "import torch\n\ntotal = 0.0\n\nrunning = 0\nfor x in loader:\n    y = x\n\n\ndef f():\n    return 1\n\n\nlast = 2\n"
	for _, c := range []struct {
		old, new string
		joined   bool // the statement after the edit is taken in
	}{
		{"0.0", "", true},
		{"0.0", "torch.", true},
		{"0.0", "  # a comment", true},
		{"0.0", "(", false}, // a bracket: the error stays before the definition
		{"    return 1\n", "    return 1 +\n", false},
		{"total = 0.0\n\nrunning = 0\n", "total = 0.0\n\nrunning = \n", false}, // the loop after it
		{"total = 0.0\n\nrunning = 0\nfor x in loader:\n    y = x\n", "total = ", false},
	} {
		src := []byte(base)
		tree, err := ParseForEditing(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		at := bytes.Index(src, []byte(c.old))
		next, nsrc := edit(t, tree, src, at, at+len(c.old), c.new)
		checkLayout(t, next, nsrc)
		if got := next.HasError(); got == c.joined {
			t.Errorf("%q: syntax error %v, want %v", nsrc, got, !c.joined)
		}
		if last := next.Segments[len(next.Segments)-1]; last != tree.Segments[len(tree.Segments)-1] {
			t.Errorf("%q: the last statement, after a definition, was parsed again", nsrc)
		}
		// Typing on mends it: the statements part again.
		mended, msrc := edit(t, next, nsrc, at+len(c.new), at+len(c.new), " 1")
		checkLayout(t, mended, msrc)
	}
	// A line of a method left unfinished: tree-sitter's recovery makes the
	// class one ERROR up to its end, which nothing after it mends. The
	// statement after the class is not taken in (which parsed a class of
	// thousands of lines again on every such key).
	class := "class Trainer:\n    def fit(self, model):\n        model.train()\n        for step in range(3):\n            pass\n\n    def evaluate(self):\n        return 1\n\n\nlast = 2\n"
	src := []byte(class)
	tree, err := ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(src, []byte("()")) + 2
	next, nsrc := edit(t, tree, src, at, at, " +")
	checkLayout(t, next, nsrc)
	if !next.HasError() {
		t.Fatalf("%q: no syntax error", nsrc)
	}
	if next.Segments[len(next.Segments)-1] != tree.Segments[len(tree.Segments)-1] {
		t.Errorf("%q: the statement after the class was parsed again", nsrc)
	}
}

// CommonEnds compares large blocks, small ones and then bytes; it finds
// what comparing byte by byte alone finds, for changes anywhere in texts
// shorter and longer than each block.
func TestCommonEndsFindsWhatChanged(t *testing.T) {
	byteByByte := func(a, b []byte) (prefix, suffix int) {
		for prefix < len(a) && prefix < len(b) && a[prefix] == b[prefix] {
			prefix++
		}
		for suffix < len(a)-prefix && suffix < len(b)-prefix && a[len(a)-1-suffix] == b[len(b)-1-suffix] {
			suffix++
		}
		return prefix, suffix
	}
	rng := rand.New(rand.NewSource(3))
	for i := range 2000 {
		size := 300
		if i%4 == 0 {
			size = 20000 // several of the largest blocks
		}
		a := make([]byte, rng.Intn(size))
		for i := range a {
			a[i] = "ab\n"[rng.Intn(3)]
		}
		at := rng.Intn(len(a) + 1)
		end := min(len(a), at+rng.Intn(5))
		insert := bytes.Repeat([]byte{"ab\n"[rng.Intn(3)]}, rng.Intn(70))
		b := append(append(append([]byte{}, a[:at]...), insert...), a[end:]...)
		p, s := CommonEnds(a, b)
		wp, ws := byteByByte(a, b)
		if p != wp || s != ws {
			t.Fatalf("CommonEnds(%q, %q) = %d, %d, want %d, %d", a, b, p, s, wp, ws)
		}
	}
}

// SameShape tells apart subtrees of other shapes, wherever they are: what
// it compares besides shapes is left to the caller (the text).
func TestSameShapeComparesSubtrees(t *testing.T) {
	parse := func(src string) *Tree {
		tree, err := ParseForEditing(context.Background(), []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return tree
	}
	const method = "    def f(self, x):\n        return self.g(x) + 1\n"
	a := parse("class A:\n" + method)
	b := parse("import os\n\n\nclass B:\n    y = 2\n\n" + method)
	c := parse("class C:\n" + strings.Replace(method, "self.g(x)", "self.h(x)", 1))
	d := parse("class D:\n" + strings.Replace(method, "self.g(x) + 1", "(self.g(x) + 1)", 1))
	last := func(tree *Tree) *Node {
		var fn *Node
		tree.Walk(tree.Root, func(n *Node) bool {
			if n.Is("function_definition") {
				fn = n
			}
			return true
		})
		return fn
	}
	if !SameShape(last(a), last(b)) {
		t.Error("the same method in two classes: not the same shape")
	}
	if !SameShape(last(a), last(c)) {
		t.Error("a name's text differs, not the shape: want the same shape")
	}
	if SameShape(last(a), last(d)) {
		t.Error("a parenthesised sum has another shape")
	}
}

// SameShape compares two runs of the mirrors' arrays: it answers as a
// walk of both trees comparing each node and its children does, on every
// pair of functions and classes of a file of many alike and a few not
// (some as long as others, with another tree).
func TestSameShapeAnswersAsAWalk(t *testing.T) {
	var src strings.Builder
	for i := range 30 {
		body := "self.g(x) + %d"
		if i%4 == 3 {
			body = "(self.g(x)+%d)" // as long, another tree
		}
		fmt.Fprintf(&src, "class C%d:\n    def f(self, x):\n        return "+body+"\n\n", i%3, i%2)
		if i%5 == 0 {
			src.WriteString("    def h(self):\n        pass\n\n")
		}
		if i%7 == 0 {
			src.WriteString("def f(self, x):\n    return (self.g(x) + 1)\n\n")
		}
	}
	tree, err := ParseForEditing(context.Background(), []byte(src.String()))
	if err != nil {
		t.Fatal(err)
	}
	var units []*Node
	tree.Walk(tree.Root, func(n *Node) bool {
		if n.Is("function_definition", "class_definition", "block", "return_statement") {
			units = append(units, n)
		}
		return true
	})
	same := 0
	for _, a := range units {
		for _, b := range units {
			want := sameShapeByWalk(a, b)
			if got := SameShape(a, b); got != want {
				t.Fatalf("SameShape(%q, %q) = %v, a walk says %v", a.Text(tree.Src), b.Text(tree.Src), got, want)
			}
			if want && a != b {
				same++
			}
		}
	}
	if same == 0 || same == len(units)*(len(units)-1) {
		t.Errorf("%d pairs of the same shape among %d units: the test tests nothing", same, len(units))
	}
}

// sameShapeByWalk is SameShape by a walk of both trees.
func sameShapeByWalk(a, b *Node) bool {
	da, db := a.start, b.start
	var same func(x, y *Node) bool
	same = func(x, y *Node) bool {
		if x.kind != y.kind || x.field != y.field || x.Named != y.Named || x.start-da != y.start-db || x.end-da != y.end-db {
			return false
		}
		cx, cy := x.FirstChild(), y.FirstChild()
		for ; cx != nil && cy != nil; cx, cy = cx.NextSibling(), cy.NextSibling() {
			if !same(cx, cy) {
				return false
			}
		}
		return cx == nil && cy == nil
	}
	return same(a, b)
}

// A node's subtree (the run of its mirror's array from it to its last
// descendant) is the node and what a walk from it visits, in that order:
// for every node of a file parsed whole and of one parsed for editing and
// then edited (whose mirror copies subtrees of the last one), nodes
// without a next sibling, the last in their arrays, included.
func TestSubtreeIsWhatAWalkVisits(t *testing.T) {
	src := []byte("import torch\n\n\nclass A:\n    def f(self, x):\n        if x:\n            return [y for y in x]\n        return None\n\n    class B:\n        def g(self):\n            pass\n\n\ndef h(a, b=lambda q: q):\n    return a(b)\n\nx = h(1, 2)\n")
	whole, err := Parse(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	editing, err := ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	ed := NewEditor(editing, src)
	at := bytes.Index(src, []byte("pass"))
	ed.Replace(at, at+len("pass"), "return self")
	edited, err := ed.Parse(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, tree := range []*Tree{whole, editing, edited} {
		tree.Walk(tree.Root, func(n *Node) bool {
			if n == tree.Root {
				return true // not a run of one array: its statements are arrays of their own
			}
			var visited []*Node
			Walk(n, func(m *Node) bool {
				visited = append(visited, m)
				return true
			})
			run := n.subtree()
			if len(run) != len(visited) {
				t.Fatalf("%s %q: a run of %d nodes, a walk visits %d", n.Kind(), n.Text(tree.Src), len(run), len(visited))
			}
			for i := range run {
				if &run[i] != visited[i] {
					t.Fatalf("%s %q: node %d of the run is not the walk's", n.Kind(), n.Text(tree.Src), i)
				}
			}
			checked++
			return true
		})
	}
	if checked < 250 {
		t.Errorf("%d nodes checked", checked)
	}
}
