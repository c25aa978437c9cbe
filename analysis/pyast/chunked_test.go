package pyast

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"slices"
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
		{"u = (\n" + strings.Repeat("1,\n", 20000), true, false},                                     // never closed: parsed apart from the classes after it (see TestChunkedParseWithSyntaxErrors)
		{"if x:\n    pass\n" + strings.Repeat("elif y:\n    pass\n", 4000) + "else:\n    pass\n", true, false},
		{"@decorator\n" + strings.Repeat("# between\n", 8000) + "def decorated():\n    pass\n", true, false},                        // not cut from its decorator
		{"@decorator(\n" + strings.Repeat("    1,\n", 8000) + ")\n@another(\n    2,\n)\nclass Decorated:\n    pass\n", true, false}, // nor from decorators over several lines
		{"def broken(:\n    pass\n", true, false},                                                                                   // a syntax error: the clean chunks before it, then the rest as one
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
		wantRender, _, _, _ := piecewise(t, src)
		if got.Root.Kind() != want.Root.Kind() || renderStatements(got) != wantRender {
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
// that has an error and parses the rest as one region, up to a definition
// that shows a bracket was left open (a recovery, see statementStarts):
// the tree, its errors and the segments that hold them are those of a
// whole parse of each part of the file between recoveries, wherever the
// error is and however the file is cut.
func TestChunkedParseWithSyntaxErrors(t *testing.T) {
	broken := []struct {
		text      string
		recovered bool // a bracket is left open before the next definition
	}{
		{"def broken(:\n    pass\n", true},
		{"x = (1,\ny = 2\n", true},
		{"    indented = 1\n", false},
		{"else:\n    pass\n", false},
		{"class C:\n    def f(self):\n        return [\n", true},
		{"print('unterminated\n", true},
		{"def f():\nreturn 1\n", false},
		{"@decorator\n", false},
		{")\n", false},
		{"x = 1 +\n", false},
		{"def g(): pass; def h(): pass\n", false},
		{"s = \"\"\"never closed\n", false},
		{"broken = foo(\n@decorator(x)\n# between\n@another\n", true},
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
				src = append(append(append([]byte{}, src[:cut]...), bad.text...), src[cut:]...)
				got, err := ParseForEditing(context.Background(), src)
				if err != nil {
					t.Fatal(err)
				}
				want, wantFlags, recoveries, wantError := piecewise(t, src)
				if recovered := len(recoveries) > 0; recovered != (bad.recovered && at < 1) {
					t.Errorf("GOMAXPROCS %d, error %d at %.0f%%: recovered at %v", procs, i, at*100, recoveries)
				}
				if got.Root.Kind() != "module" && len(recoveries) > 0 || renderStatements(got) != want || got.HasError() != wantError {
					t.Errorf("GOMAXPROCS %d, error %d at %.0f%%: the tree differs from a whole parse of each part", procs, i, at*100)
					continue
				}
				if len(recoveries) == 0 {
					if whole := layOutWhole(t, src); got.Root.Kind() != whole.Root.Kind() {
						t.Errorf("GOMAXPROCS %d, error %d at %.0f%%: root %s, a whole parse's %s", procs, i, at*100, got.Root.Kind(), whole.Root.Kind())
					}
				}
				if flags(got, 0) != wantFlags {
					t.Errorf("GOMAXPROCS %d, error %d at %.0f%%: segments with errors at %s, the parts' at %s", procs, i, at*100, flags(got, 0), wantFlags)
				}
				next, nsrc := edit(t, got, src, cut, cut, "\n\nz = 1\n")
				checkLayout(t, next, nsrc)
			}
		}
	}
}

// After a recovery, the file goes on in parts whatever its next error: a
// second one at its end (a class left with a bracket open there makes the
// last part's root an ERROR) keeps the first recovery.
func TestChunkedParseWithTwoSyntaxErrors(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for i, bad := range []string{"y = [\n", "def broken(:\n    pass\n", "class C:\n    def f(self):\n        return [\n", "else:\n  pass\n", "s = '''\nabc\n"} {
		src := bigSource(120<<10, "")
		cut := len(src) * 3 / 10
		cut += bytes.IndexByte(src[cut:], '\n') + 1
		src = append(append(append(append([]byte{}, src[:cut]...), "broken = foo(\n"...), src[cut:]...), bad...)
		got, err := ParseForEditing(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		want, wantFlags, recoveries, _ := piecewise(t, src)
		if len(recoveries) == 0 || got.Root.Kind() != "module" || renderStatements(got) != want || !got.HasError() || flags(got, 0) != wantFlags {
			t.Errorf("error %d at the end: the tree differs from a whole parse of each part (root %s, recoveries at %v)", i, got.Root.Kind(), recoveries)
		}
	}
}

// piecewise renders src's statements, and lists where its segments with
// errors start, as whole parses of the parts of src between its
// recoveries (see statementStarts) give them, and whether one of them
// has a syntax error.
func piecewise(t *testing.T, src []byte) (render, errorsAt string, recoveries []int, hasError bool) {
	t.Helper()
	_, recoveries = statementStarts(src)
	cuts := append(append([]int{0}, recoveries...), len(src))
	for i := 1; i < len(cuts); i++ {
		part := layOutWhole(t, src[cuts[i-1]:cuts[i]])
		render += renderStatementsFrom(part, cuts[i-1])
		errorsAt += flags(part, cuts[i-1])
		hasError = hasError || part.HasError()
	}
	return render, errorsAt, recoveries, hasError
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
func flags(t *Tree, origin int) string {
	var b strings.Builder
	for i, seg := range t.Segments {
		if seg.hasError {
			fmt.Fprintf(&b, "%d ", origin+t.starts[i])
		}
	}
	return b.String()
}

// A definition at column 0 inside brackets ends them: the file is cut
// there (with the decorators right above it), and nowhere else a bracket,
// a string or a continued line holds.
// A decorated definition starts at its first decorator, and nowhere
// after it, however many lines its decorators' arguments take: the line
// of a definition after a closing bracket at column 0 is no cut.
func TestDecoratedDefinitionsStartAtTheirFirstDecorator(t *testing.T) {
	cases := []struct {
		src  string
		want []string // the lines that start statements, past the first
	}{
		{"x = 1\n@dec\ndef f():\n    pass\ny = 2\n", []string{"@dec", "y = 2"}},
		{"x = 1\n@dec(\n    1,\n)\ndef f():\n    pass\ny = 2\n", []string{"@dec(", "y = 2"}},
		{"x = 1\n@dec(\n    1,\n)\n@other(\n    2,\n)\nclass C:\n    pass\n", []string{"@dec("}},
		{"x = 1\n@dec(\n    1,\n)\n# a comment\n\nasync def f():\n    pass\ny = 2\n", []string{"@dec(", "y = 2"}},
		{"@dec(\n    1,\n)\ndef f():\n    pass\ny = 2\n", []string{"y = 2"}}, // the file's first line
		{"x = foo(\n    1,\n)\ndef f():\n    pass\n", []string{"def f():"}},  // a call's bracket, not a decorator's
	}
	for i, c := range cases {
		src := []byte(c.src)
		starts, _ := statementStarts(src)
		if got := linesAt(src, starts); !slices.Equal(got, c.want) {
			t.Errorf("case %d: statements start at %q, want %q", i, got, c.want)
		}
	}
}

// linesAt returns the lines of src from each of offsets to its end.
func linesAt(src []byte, offsets []int) []string {
	var lines []string
	for _, at := range offsets {
		line, _, _ := strings.Cut(string(src[at:]), "\n")
		lines = append(lines, line)
	}
	return lines
}

func TestRecoveriesAreDefinitionsInsideBrackets(t *testing.T) {
	cases := []struct {
		src  string
		want []string // the lines where a recovery starts
	}{
		{"x = foo(\nclass C:\n    pass\n", []string{"class C:"}},
		{"x = foo(\ndef f():\n    pass\n", []string{"def f():"}},
		{"x = [1,\nasync  def f():\n    pass\n", []string{"async  def f():"}},
		{"x = {\n\n@dec(1)\n# why\n\n@other\ndef f():\n    pass\n", []string{"@dec(1)"}},
		{"x = foo(\ny = 2\nz = 3\nclass C: pass\ndef g(): pass\n", []string{"class C: pass"}},
		{"x = foo(\nclassy = 1\ndefault = 2\n", nil},                               // names that start with a keyword
		{"x = (a\n@ b)\ndef f(): pass\n", nil},                                     // a matrix product continued: the brackets close
		{"s = '''\ndef in_a_string(): pass\n'''\n", nil},                           // a string, not brackets
		{"x = foo(  # a comment (\n    1)\ndef f(): pass\n", nil},                  // closed
		{"x = foo(\n    def_ = 1,\n    class_ = 2,\n)\n", nil},                     // indented and not definitions
		{"x = foo(\ndef f(\nclass C:\n    pass\n", []string{"def f(", "class C:"}}, // each one a recovery
	}
	for i, c := range cases {
		src := []byte(c.src)
		starts, recoveries := statementStarts(src)
		got := linesAt(src, recoveries)
		for _, r := range recoveries {
			if !slices.Contains(starts, r) {
				t.Errorf("case %d: recovery at %d is not among the starts %v", i, r, starts)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("case %d: recoveries at %q, want %q", i, got, c.want)
		}
		if !slices.IsSorted(starts) {
			t.Errorf("case %d: starts %v are not in order", i, starts)
		}
	}
}
