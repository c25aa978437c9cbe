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
		{"s = '''\n" + strings.Repeat("def inside_a_string(): pass\n", 8000), false, false},          // it never closes
		{"s = '''\n" + strings.Repeat("def inside_a_string(): pass\n", 8000) + "'''\n", true, false}, // cut after it
		{"s = f(\n" + strings.Repeat("x\n+ 1,\n", 12000) + ")\n", true, false},                       // cut after the call
		{"t = (\n" + strings.Repeat("1,\n", 20000) + ")\n", true, false},                             // no cut after a comma
		{"u = (\n" + strings.Repeat("1,\n", 20000), false, false},                                    // never closed
		{"if x:\n    pass\n" + strings.Repeat("elif y:\n    pass\n", 4000) + "else:\n    pass\n", true, false},
		{"@decorator\n" + strings.Repeat("# between\n", 8000) + "def decorated():\n    pass\n", true, false}, // not cut from its decorator
		{"def broken(:\n    pass\n", false, false},                                                           // a syntax error anywhere: parsed whole
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
