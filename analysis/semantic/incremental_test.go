package semantic

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/vramlint/vramlint/analysis/pyast"
)

// A version of a buffer patches the previous version's indexes rather than
// building them again: its functions by name, its bindings by name and its
// line index (see NewModelFrom). After random edits that add, rename and
// remove functions and bindings, each must equal what a fresh model of the
// same tree builds.
func TestPatchedIndexesEqualFreshOnes(t *testing.T) {
	var b strings.Builder
	b.WriteString("import torch\n\n")
	for i := range 40 {
		fmt.Fprintf(&b, "\n\ndef f%d(x):\n    y = x + %d\n    self.w = y\n    return y\n", i%13, i)
		if i%5 == 0 {
			fmt.Fprintf(&b, "\n\nv%d = f%d(1)\n", i%7, i%13)
		}
	}
	snippets := []string{"def f3(a):\n    return a\n", "y = 2\n", "self.w = None\n", "v1 = f2(3)\n", "x", "\n", "("}
	rng := rand.New(rand.NewSource(7))
	src := []byte(b.String())
	tree, err := pyast.ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	prev := NewFile("p.py", src, tree)
	prev.Bindings("y")
	for i := range 200 {
		at := rng.Intn(len(src) + 1)
		end := at
		text := snippets[rng.Intn(len(snippets))]
		if rng.Intn(3) == 0 { // delete up to the end of the line instead
			end = at + strings.IndexByte(string(src[at:])+"\n", '\n')
			text = ""
		}
		ed := pyast.NewEditor(tree, src)
		ed.Replace(at, min(end, len(src)), text)
		next, err := ed.Parse(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		src, tree = ed.Text(), next
		got := NewFileFrom(prev, "p.py", src, tree)
		want := NewFile("p.py", src, tree)
		if !reflect.DeepEqual(got.Functions, want.Functions) {
			t.Fatalf("edit %d: functions %v, want %v", i, got.Functions, want.Functions)
		}
		got.Bindings("y")
		want.Bindings("y")
		if !reflect.DeepEqual(got.bindings.m, want.bindings.m) {
			t.Fatalf("edit %d: bindings %v, want %v", i, got.bindings.m, want.bindings.m)
		}
		if !reflect.DeepEqual(got.Mapper, want.Mapper) {
			t.Fatalf("edit %d: the line index differs from a fresh one", i)
		}
		prev = got
	}
}
