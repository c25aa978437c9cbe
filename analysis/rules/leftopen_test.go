package rules_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/rules"
)

// A file saved with a bracket left open before a dataset: the error ends
// at the class (see pyast's recoveries), whose worker-side .cuda() is
// found by `check` (Runner.Run) as by the server (a buffer's tree), with
// the same findings.
func TestABracketLeftOpenHidesNothingAfterIt(t *testing.T) {
	src := []byte(`import torch
from torch.utils.data import DataLoader, Dataset

broken = foo(

class Samples(Dataset):
    def __init__(self):
        self.x = torch.randn(100, 8)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i].cuda()


loader = DataLoader(Samples(), batch_size=4, num_workers=2)
`)
	runner := &analysis.Runner{Rules: rules.All()}
	checked, err := runner.Run(context.Background(), "left_open.py", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range checked.Diagnostics {
		found = found || d.Code == "GPU001" && strings.Contains(string(src[d.Start:d.End]), "cuda")
	}
	if !found {
		t.Errorf("check: no GPU001 on the dataset after the error: %+v", checked.Diagnostics)
	}
	tree, err := pyast.ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	compareResults(t, "the server's tree against check's", runner.AnalyzeTree(nil, "left_open.py", src, tree, nil), checked)
}

// A dict left open in a function nested in a method of a large class:
// tree-sitter's recovery makes the class's later methods statements of
// that method's body (semantic's stray methods, paired as methods are).
// Keys typed in the method before the dict (a name its strays read bound
// and unbound again, a call under no_grad) and in the dict's entry: each
// version's findings and fixes are a fresh analysis's of the same tree.
func TestKeysBesideABracketLeftOpenAnalyseAsAFreshModel(t *testing.T) {
	src := string(largeClass(t, 36))
	head := strings.Index(src, "def step7")
	head += strings.Index(src[head:], "        losses = []\n") + len("        losses = []\n")
	src = src[:head] + "        def inner():\n            x = {\n                'a': 1,\n" + src[head:]
	runner := &analysis.Runner{Rules: rules.All()}
	text := []byte(src)
	tree, err := pyast.ParseForEditing(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	if strays := countStrayMethods(tree); strays < 50 {
		t.Fatalf("%d methods inside another: tree-sitter recovers otherwise than it did", strays)
	}
	prev := runner.AnalyzeTree(nil, "open.py", text, tree, nil)
	// edit replaces [at, end) with insert, and compares the version it
	// makes with a fresh analysis of its tree.
	edits := 0
	edit := func(at, end int, insert string) {
		ed := pyast.NewEditor(tree, text)
		ed.Replace(at, end, insert)
		if tree, err = ed.Parse(context.Background()); err != nil {
			t.Fatal(err)
		}
		text = ed.Text()
		got := runner.AnalyzeTree(prev, "open.py", text, tree, nil)
		compareResults(t, fmt.Sprintf("edit %d ([%d, %d) -> %q)", edits, at, end, insert), got, runner.AnalyzeTree(nil, "open.py", text, tree, nil))
		checkRanges(t, text, got)
		prev = got
		edits++
	}
	typeAt := func(at int, typed string) {
		for _, r := range typed {
			edit(at, at, string(r))
			at += len(string(r))
		}
	}
	for _, typed := range []string{"        torch = None\n", "        with torch.no_grad():\n            self.fit(None, None)\n"} {
		typeAt(head, typed)
		if t.Failed() {
			t.FailNow()
		}
		if strays := countStrayMethods(tree); strays < 50 {
			t.Fatalf("after %q, %d methods inside another", typed, strays)
		}
		for range len(typed) {
			edit(head, head+1, "")
		}
	}
	typeAt(strings.Index(string(text), "'a': 1")+5, "2 + ")
}

// countStrayMethods counts the function definitions of a class's body's
// indentation (four spaces) inside another function.
func countStrayMethods(tree *pyast.Tree) int {
	strays := 0
	tree.Walk(tree.Root, func(n *pyast.Node) bool {
		if n.Is("function_definition") && n.Parent().Parent().Is("function_definition") {
			line := bytes.LastIndexByte(tree.Src[:n.Start()], '\n') + 1
			if n.Start()-line == 4 {
				strays++
			}
		}
		return true
	})
	return strays
}
