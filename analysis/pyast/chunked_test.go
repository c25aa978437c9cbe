package pyast

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// bigSource is about n bytes of top-level functions, with middle inserted
// halfway.
func bigSource(n int, middle string) []byte {
	var b strings.Builder
	for i := 0; b.Len() < n/2; i++ {
		fmt.Fprintf(&b, "def f%d(x):\n    y = [x,\n         %d]\n    return y\n\n\n", i, i)
	}
	b.WriteString(middle)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "class C%d:\n    def g(self):\n        return %d\n\n\n", i, i)
	}
	return []byte(b.String())
}

// Parsing in chunks gives the tree of the whole file, or falls back to
// parsing it whole where a cut would not be safe.
func TestChunkedParseEqualsWholeParse(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	cases := []struct {
		middle  string
		chunked bool
		crlf    bool
	}{
		{"", true, false},
		{"x = 1\n# a comment at column 0\n", true, false},
		{"s = '''\ndef not_code():\n    pass\n'''\n", true, false},                                   // the string closes before any cut
		{"s = '''\n" + strings.Repeat("def inside_a_string(): pass\n", 8000), true, false},           // it never closes: the chunks before it, then the rest as one
		{"s = '''\n" + strings.Repeat("def inside_a_string(): pass\n", 8000) + "'''\n", true, false}, // cut after it
		{"s = f(\n" + strings.Repeat("x\n+ 1,\n", 12000) + ")\n", true, false},                       // cut after the call
		{"t = (\n" + strings.Repeat("1,\n", 20000) + ")\n", true, false},                             // no cut after a comma
		{"u = (\n" + strings.Repeat("1,\n", 20000), false, false},                                    // never closed
		{"if x:\n    pass\n" + strings.Repeat("elif y:\n    pass\n", 4000) + "else:\n    pass\n", true, false},
		{"@decorator\n" + strings.Repeat("# between\n", 8000) + "def decorated():\n    pass\n", true, false}, // not cut from its decorator
		{"def broken(:\n    pass\n", true, false},                                                            // a syntax error: the clean chunks before it, then the rest as one
		{"# comments take the CR of their line\n# at the cut\n", true, true},
	}
	for i, c := range cases {
		src := bigSource(200<<10, c.middle)
		if c.crlf {
			src = bytes.ReplaceAll(src, []byte("\n"), []byte("\r\n"))
		}
		got, err := ParseForEditing(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := Parse(context.Background(), src)
		if got.Root.Kind() != want.Root.Kind() || renderStatements(got) != renderStatements(want) {
			t.Errorf("case %d: the tree differs from a whole parse", i)
		}
		if chunked := parseChunked(context.Background(), src) != nil; chunked != c.chunked {
			t.Errorf("case %d: parsed in chunks: %v, want %v", i, chunked, c.chunked)
		}
		if got.HasError() != want.HasError() {
			t.Errorf("case %d: HasError %v, a whole parse says %v", i, got.HasError(), want.HasError())
		}
		if at := bytes.IndexByte(got.Src, 0); at >= 0 {
			t.Errorf("case %d: Src has a NUL byte at %d", i, at)
		}
		// Edits continue from the tree.
		at := len(src) / 3
		next, nsrc := edit(t, got, src, at, at, "\n\nz = 1\n")
		checkLayout(t, next, nsrc)
	}
}

// A file opened with a syntax error keeps the chunks before the first one
// that has an error and parses the rest as one region: the tree, its
// errors and the segments that hold them are those of a whole parse,
// wherever the error is and however the file is cut.
func TestChunkedParseWithSyntaxErrorsEqualsWholeParse(t *testing.T) {
	broken := []string{
		"def broken(:\n    pass\n",
		"x = (1,\ny = 2\n",
		"    indented = 1\n",
		"else:\n    pass\n",
		"class C:\n    def f(self):\n        return [\n",
		"print('unterminated\n",
		"def f():\nreturn 1\n",
		"@decorator\n",
		")\n",
		"x = 1 +\n",
		"def g(): pass; def h(): pass\n",
		"s = \"\"\"never closed\n",
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{2, 4} {
		runtime.GOMAXPROCS(procs)
		for i, bad := range broken {
			for _, at := range []float64{0.05, 0.3, 0.5, 0.7, 0.95, 1} {
				src := bigSource(120<<10, "")
				cut := len(src)
				if at < 1 { // at the start of a line
					from := int(float64(len(src)) * at)
					cut = from + bytes.IndexByte(src[from:], '\n') + 1
				}
				src = append(append(append([]byte{}, src[:cut]...), bad...), src[cut:]...)
				got, err := ParseForEditing(context.Background(), src)
				if err != nil {
					t.Fatal(err)
				}
				whole := layOutWhole(t, src)
				if got.Root.Kind() != whole.Root.Kind() || renderStatements(got) != renderStatements(whole) || got.HasError() != whole.HasError() {
					t.Errorf("GOMAXPROCS %d, error %d at %.0f%%: the tree differs from a whole parse", procs, i, at*100)
					continue
				}
				if flags(got) != flags(whole) {
					t.Errorf("GOMAXPROCS %d, error %d at %.0f%%: segments with errors at %s, a whole parse's at %s", procs, i, at*100, flags(got), flags(whole))
				}
				next, nsrc := edit(t, got, src, cut, cut, "\n\nz = 1\n")
				checkLayout(t, next, nsrc)
			}
		}
	}
}

// layOutWhole parses src whole and lays it out for editing, as
// ParseForEditing does when it does not cut.
func layOutWhole(t *testing.T, src []byte) *Tree {
	t.Helper()
	ts, err := parse(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	defer free(ts)
	return layOut(ts, src, true)
}

// flags lists where the segments that hold a syntax error start in the
// source.
func flags(t *Tree) string {
	var b strings.Builder
	for i, seg := range t.Segments {
		if seg.hasError {
			fmt.Fprintf(&b, "%d ", t.starts[i])
		}
	}
	return b.String()
}
