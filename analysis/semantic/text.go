package semantic

import (
	"strings"

	"github.com/vramlint/vramlint/analysis/pyast"
)

// Facts about the file's text that fixes need to write code in its style.

// LineEnding is the file's line terminator: CRLF when most lines use it.
func (f *File) LineEnding() string {
	f.computeLazy()
	return f.lazy.lineEnding
}

func (f *File) lineEnding() string {
	// Counted per segment once (see segmentIndex.breaks), and added up
	// as segments come and go (see segmentTotals), not per version.
	crlf, lf, cr := f.totals.crlf, f.totals.lf, f.totals.cr
	if crOnly := cr - crlf; crOnly > lf {
		return "\r" // an old Mac file
	}
	if crlf > 0 && crlf*2 >= lf {
		return "\r\n"
	}
	return "\n"
}

// IndentUnit is one level of the file's indentation: a tab, or the step
// of spaces between a block and the block it opens that most of the
// file's top-level statements use (4 when the file has no indented block).
func (f *File) IndentUnit() string {
	f.computeLazy()
	return f.lazy.indentUnit
}

func (f *File) indentUnit() string {
	switch f.indent {
	case -1:
		return "\t"
	case 0:
		return "    "
	}
	return strings.Repeat(" ", f.indent)
}

// IndentAt is the leading whitespace of the line holding offset off.
func (f *File) IndentAt(off int) string { return indentAt(f.Src, off) }

func indentAt(src []byte, off int) string {
	start := off
	for start > 0 {
		if c := src[start-1]; c == '\n' || c == '\r' && (start == len(src) || src[start] != '\n') {
			break
		}
		start--
	}
	end := start
	for end < len(src) && (src[end] == ' ' || src[end] == '\t') {
		end++
	}
	return string(src[start:end])
}

// LineBounds returns the start of the line holding off and the offset just
// past that line's terminator (or the end of the source).
func (f *File) LineBounds(off int) (start, next int) {
	line := f.Mapper.LineOf(off)
	start = f.Mapper.LineStart(line)
	if line+1 < f.Mapper.LineCount() {
		return start, f.Mapper.LineStart(line + 1)
	}
	return start, len(f.Src)
}

// StatementLines returns the lines a statement occupies, which may be more
// than one (`f(\n)`): the start of its first line, the end of its last
// line before the terminator, and the offset just past that terminator.
func (f *File) StatementLines(stmt *pyast.Node) (start, lastEnd, next int) {
	start, _ = f.LineBounds(stmt.Start())
	last := f.Mapper.LineOf(stmt.End())
	_, next = f.LineBounds(stmt.End())
	return start, f.Mapper.LineEnd(last), next
}

// TorchNameAt is the local name the torch module is bound to where n
// runs: by an import at module level that runs (not one under `if
// TYPE_CHECKING:`), or by one earlier in a function around n. It is ""
// when none is: a library that keeps torch optional imports it inside the
// functions that use it, so another function of the file may not see it.
func (f *File) TorchNameAt(n *pyast.Node) string {
	name := ""
	for _, ix := range f.indexes {
		for _, imp := range ix.imports {
			local := torchBinding(f, imp)
			if local == "" || typeCheckingOnly(f, imp) {
				continue
			}
			if fn := EnclosingFunction(imp); fn != nil && (!fn.Contains(n) || imp.Start() > n.Start()) {
				continue
			}
			if local == "torch" {
				return local
			}
			name = local
		}
	}
	return name
}

// torchBinding returns the name an import statement binds the torch
// module to (`import torch`, `import torch.nn`: torch; `import torch as
// th`: th; `th = _safe_import("torch")`: th), or "".
func torchBinding(f *File, imp *pyast.Node) string {
	if imp.Kind() == "assignment" {
		if name, path := importedByCall(imp, f.Src); path == "torch" {
			return name // torch = _safe_import("torch")
		}
		return ""
	}
	if imp.Kind() != "import_statement" {
		return ""
	}
	name := ""
	for _, c := range imp.ChildrenOf("name") {
		switch {
		case c.Is("dotted_name") && (f.Text(c) == "torch" || strings.HasPrefix(f.Text(c), "torch.")):
			return "torch"
		case c.Is("aliased_import") && f.Text(c.Child("name")) == "torch":
			name = f.Text(c.Child("alias"))
		}
	}
	return name
}

// typeCheckingOnly reports whether n is in the body of an `if
// TYPE_CHECKING:` (or `if typing.TYPE_CHECKING:`), which runs only for
// type checkers.
func typeCheckingOnly(f *File, n *pyast.Node) bool {
	for p := n.Parent(); p != nil; p = p.Parent() {
		if p.Is("if_statement") && p.Child("consequence").Contains(n) &&
			strings.HasSuffix(f.Text(p.Child("condition")), "TYPE_CHECKING") {
			return true
		}
	}
	return false
}

// TorchName is the local name torch is imported as anywhere in the file
// ("" when the file has no `import torch`).
func (f *File) TorchName() string {
	if _, ok := f.Imports["torch"]; ok && f.Imports["torch"] == "torch" {
		return "torch"
	}
	for local, q := range f.Imports {
		if q == "torch" {
			return local
		}
	}
	return ""
}
