package pyast

import (
	"bytes"
	"context"
	"math/rand"
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
