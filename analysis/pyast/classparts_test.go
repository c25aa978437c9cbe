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

// largeClass is a module with a class of about n bytes of methods in the
// shapes real classes have (decorators over several lines, comments,
// docstrings and strings holding lines that look like methods, nested
// classes, class attributes, continued lines), with middle inserted
// halfway through its body, and a function after it.
func largeClass(n int, header, middle string) []byte {
	var b strings.Builder
	b.WriteString("import torch\n\n\n")
	b.WriteString(header)
	b.WriteString("    \"\"\"A class of many methods.\n\n    def not_a_method(self):\n        pass\n    \"\"\"\n\n")
	method := func(i int) {
		switch i % 7 {
		case 0:
			fmt.Fprintf(&b, "    @decorator(\n        %d,\n    )\n    def m%d(self, x):\n        return x + %d\n\n", i, i, i)
		case 1:
			fmt.Fprintf(&b, "    # about m%d\n    def m%d(self, x):\n        s = '''\n    def fake%d(self):\n        pass\n'''\n        return s\n\n", i, i, i)
		case 2:
			fmt.Fprintf(&b, "    async def m%d(self, x):\n        y = x + \\\n            %d\n        # trailing comment inside\n        return y\n    # a comment at the body's column\n\n", i, i)
		case 3:
			fmt.Fprintf(&b, "    class Inner%d:\n        def m(self):\n            return f\"{self!r} {'#'}\"\n\n    attribute%d = {\n        'a': 1,\n    }\n\n", i, i)
		case 4:
			fmt.Fprintf(&b, "    @property\n    def m%d(self):\n        if self:\n            return [\n                %d,\n            ]\n        else:\n            return None\n# a comment at column 0\n\n", i, i)
		case 5:
			fmt.Fprintf(&b, "    def m%d(self, x):  # a comment after the header\n        for k in range(x):\n            yield k\n\n", i)
		default:
			fmt.Fprintf(&b, "    def m%d(self, x): return x\n    def n%d(self, x):\n        with torch.no_grad():\n            return x * 2\n\n", i, i)
		}
	}
	i := 0
	for ; b.Len() < n/2; i++ {
		method(i)
	}
	b.WriteString(middle)
	for ; b.Len() < n; i++ {
		method(i)
	}
	b.WriteString("\ndef after():\n    return Big()\n")
	return []byte(b.String())
}

// A class of thousands of lines is parsed in parts on several cores when
// opened, and gives the tree of a whole parse; where a part does not parse
// cleanly, or the text cannot be cut, it is parsed whole, and the tree,
// errors and all, is the one the open gave before classes were parsed in
// parts. Parsed whole later (KeepSplitTrees), it keeps its tree, which
// matches its mirror, and its next edit is parsed incrementally from it.
func TestLargeClassParsedInPartsEqualsWholeParse(t *testing.T) {
	const plain = "class Big(torch.nn.Module):\n"
	cases := []struct {
		name, header, middle string
		inParts              bool
		crlf, tabs           bool
	}{
		{name: "plain", header: plain, inParts: true},
		{name: "decorated, a header over lines", header: "@dataclass(frozen=True)\nclass Big(\n    torch.nn.Module,  # base\n    metaclass=Meta,\n):\n", inParts: true},
		{name: "a string open over the middle", header: plain, middle: "    table = '''\n" + strings.Repeat("    def looks_like_a_method(self):\n        pass\n", 2000) + "'''\n\n", inParts: true},
		{name: "a bracket open over the middle", header: plain, middle: "    table = [\n" + strings.Repeat("    1,\n", 8000) + "    ]\n\n", inParts: true},
		{name: "CRLF", header: plain, inParts: true, crlf: true},
		{name: "tabs", header: plain, inParts: true, tabs: true},
		{name: "code at column 0 ends the class", header: plain, middle: "x = 1\n\n", inParts: true},
		{name: "a syntax error", header: plain, middle: "    def broken(self:\n        pass\n\n"},
		{name: "a bracket never closed", header: plain, middle: "    def opened(self):\n        x = (\n\n"},
		{name: "a body on the header's line", header: "class Big: pass\n"},
	}
	for _, procs := range []int{2, 4} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s, %d cores", c.name, procs), func(t *testing.T) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				src := largeClass(3*splitClassFrom, c.header, c.middle)
				if c.tabs {
					src = bytes.ReplaceAll(src, []byte("    "), []byte("\t"))
				}
				if c.crlf {
					src = bytes.ReplaceAll(src, []byte("\n"), []byte("\r\n"))
				}
				got, err := ParseForEditing(context.Background(), src)
				if err != nil {
					t.Fatal(err)
				}
				var class *Segment // the one parsed in parts
				for _, seg := range got.Segments {
					if seg.later != nil {
						class = seg
					}
				}
				if inParts := class != nil; inParts != c.inParts {
					t.Fatalf("parsed in parts: %v, want %v", inParts, c.inParts)
				}
				// What the open gave when every class was parsed whole.
				defer func(from int) { splitClassFrom = from }(splitClassFrom)
				splitClassFrom = len(src) + 1
				whole, err := ParseForEditing(context.Background(), src)
				if err != nil {
					t.Fatal(err)
				}
				if got.HasError() != whole.HasError() || renderStatements(got) != renderStatements(whole) || flags(got, 0) != flags(whole, 0) {
					t.Fatalf("the tree differs from the class parsed whole (error: %v and %v; segments with errors at %s and %s)", got.HasError(), whole.HasError(), flags(got, 0), flags(whole, 0))
				}
				if !c.inParts {
					return
				}
				if want, _, _, wantError := piecewise(t, src); got.HasError() != wantError || renderStatements(got) != want {
					t.Fatalf("the tree differs from a whole parse of the file (error: %v, a whole parse's: %v)", got.HasError(), wantError)
				}
				if class.KeepsTree() {
					t.Fatal("the class keeps a tree before it is parsed whole")
				}
				mismatches := splitMismatches.Load()
				got.KeepSplitTrees(context.Background())
				if !class.KeepsTree() || splitMismatches.Load() != mismatches {
					t.Fatalf("parsed whole, the class keeps its tree: %v; its nodes differ from its mirror's: %v", class.KeepsTree(), splitMismatches.Load() != mismatches)
				}
				if slices.ContainsFunc(got.Segments, func(s *Segment) bool { return s.hasError }) {
					return // an edit next to a segment with an error parses that one too
				}
				// An edit inside the class is parsed from that tree.
				at := bytes.Index(src, []byte("return x + 7"))
				incremental := reparsed.Load()
				next, nsrc := edit(t, got, src, at, at, "y = 1; ")
				if reparsed.Load() == incremental {
					t.Fatal("the edit parsed the class afresh")
				}
				checkLayout(t, next, nsrc)
			})
		}
	}
}

// Only a text that holds one class is cut into parts: a chunk of several
// classes (one of 64 KB or more, after a file's cut at its middle) would
// have every part fail as more than one class, and be parsed whole after
// them, for nothing.
func TestClassPartsCutOneClassOnly(t *testing.T) {
	class := func(name string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "@register(\n    %q,\n)\nclass %s:\n", name, name)
		for i := range 300 {
			fmt.Fprintf(&b, "    def m%d(self, x):\n        return x + %d\n\n", i, i)
		}
		return b.String()
	}
	one := class("A")
	cases := []struct {
		name, text string
		cut        bool
	}{
		{"one class", one, true},
		{"one class, comments at column 0 in it and after it", strings.Replace(one, "    def m150", "# a note\n    def m150", 1) + "\n# about what follows\n", true},
		{"three classes", one + "\n\n" + class("B") + "\n\n" + class("C"), false},
		{"a class and a statement", one + "x = A()\n", false},
	}
	for _, c := range cases {
		if _, ok := classParts([]byte(c.text), 2); ok != c.cut {
			t.Errorf("%s: cut %v, want %v", c.name, ok, c.cut)
		}
	}
}
