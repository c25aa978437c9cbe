package analysis

import (
	"context"
	"slices"
	"testing"

	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/semantic"
)

func parseFile(t *testing.T, src string) *semantic.File {
	t.Helper()
	tree, err := pyast.Parse(context.Background(), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return semantic.NewFile("t.py", []byte(src), tree)
}

func apply(t *testing.T, f *semantic.File, e Edit) string {
	t.Helper()
	out, err := ApplyEdits(f.Src, []Edit{e})
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestInsertLinesAfter(t *testing.T) {
	cases := []struct {
		src  string
		off  int // inserted after the line holding off
		want string
	}{
		{"a = 1\nb = 2\n", 0, "a = 1\nx\nb = 2\n"},
		{"a = 1", 0, "a = 1\nx"},
		{"a = 1\r\nb = 2\r\n", 0, "a = 1\r\nx\r\nb = 2\r\n"},
		{"a = 1\r\nb = 2", 8, "a = 1\r\nb = 2\r\nx"},
	}
	for _, c := range cases {
		f := parseFile(t, c.src)
		if got := apply(t, f, InsertLinesAfter(f, c.off, "x"+f.LineEnding())); got != c.want {
			t.Errorf("%q: got %q, want %q", c.src, got, c.want)
		}
	}
}

func TestRemoveStatement(t *testing.T) {
	cases := []struct{ src, stmt, want string }{
		{"for i in x:\n    a()\n    b()\n", "b()", "for i in x:\n    a()\n"},
		{"for i in x:\n    a()\n    b()  # note\n", "b()", "for i in x:\n    a()\n    # note\n"},
		{"for i in x:\n    b()\n", "b()", "for i in x:\n    pass\n"},
		{"for i in x:\n    a(); b()\n", "b()", "for i in x:\n    a(); pass\n"},
	}
	for _, c := range cases {
		f := parseFile(t, c.src)
		var stmt *pyast.Node
		f.Tree.Walk(f.Tree.Root, func(n *pyast.Node) bool {
			if n.Kind() == "expression_statement" && f.Text(n) == c.stmt {
				stmt = n
			}
			return true
		})
		if got := apply(t, f, RemoveStatement(f, stmt)); got != c.want {
			t.Errorf("%q: got %q, want %q", c.src, got, c.want)
		}
	}
}

func TestDeviceBindings(t *testing.T) {
	f := parseFile(t, `import torch
from torch import device as D
from torch.cuda import current_device

a = D("cuda")
b = torch.device("cuda:1")
c = current_device()
d = "cuda" if torch.cuda.is_available() else "cpu"
e = model(x)
g = torch.device("cpu")
h = torch.randn(3)
`)
	var got []string
	for _, a := range semantic.DeviceBindings.Of(f) {
		got = append(got, f.Text(a.Child("left")))
	}
	if want := []string{"a", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("device bindings %v, want %v", got, want)
	}
}
