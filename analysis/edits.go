package analysis

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/semantic"
)

// ApplyEdits applies non-overlapping edits to src. Edits may touch (one
// ending where the next starts); insertions at the same offset apply in the
// order given.
func ApplyEdits(src []byte, edits []Edit) ([]byte, error) {
	sorted, err := sortEdits(len(src), edits)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	last := 0
	for _, e := range sorted {
		out.Write(src[last:e.Start])
		out.WriteString(e.NewText)
		last = e.End
	}
	out.Write(src[last:])
	return out.Bytes(), nil
}

// sortEdits returns the edits in the order ApplyEdits applies them, or
// why they cannot apply to a source of size bytes.
func sortEdits(size int, edits []Edit) ([]Edit, error) {
	sorted := append([]Edit(nil), edits...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Start < sorted[j].Start })
	last := 0
	for _, e := range sorted {
		if e.Start < last || e.End < e.Start || e.End > size {
			return nil, fmt.Errorf("edit [%d,%d) overlaps another or lies outside the source", e.Start, e.End)
		}
		last = e.End
	}
	return sorted, nil
}

// Overlaps reports whether two edit lists touch the same bytes. Two
// insertions at one offset overlap too: their order would be a guess.
func Overlaps(a, b []Edit) bool {
	for _, x := range a {
		for _, y := range b {
			if x.Start < y.End && y.Start < x.End || x.Start == y.Start {
				return true
			}
		}
	}
	return false
}

// InsertLinesAfter returns the edit that inserts text, whole lines each
// ending in the file's line ending, after the line holding offset off; at
// the end of a file without a final line break, the break comes first.
func InsertLinesAfter(f *semantic.File, off int, text string) Edit {
	_, next := f.LineBounds(off)
	if next == len(f.Src) && len(f.Src) > 0 && f.Src[len(f.Src)-1] != '\n' && f.Src[len(f.Src)-1] != '\r' {
		eol := f.LineEnding()
		return Edit{Start: next, End: next, NewText: eol + strings.TrimSuffix(text, eol)}
	}
	return Edit{Start: next, End: next, NewText: text}
}

// RemoveStatement deletes a statement: its whole line when it is alone
// there, keeping a trailing comment in its place; `pass` instead when it
// is the only statement of its block or shares its line with code.
func RemoveStatement(f *semantic.File, stmt *pyast.Node) Edit {
	if len(stmt.Parent().NamedChildren()) == 1 {
		return Edit{Start: stmt.Start(), End: stmt.End(), NewText: "pass"}
	}
	lineStart, lineEnd, next := f.StatementLines(stmt)
	rest := strings.TrimSpace(string(f.Src[stmt.End():lineEnd]))
	switch {
	case strings.TrimSpace(string(f.Src[lineStart:stmt.Start()])) != "" || rest != "" && !strings.HasPrefix(rest, "#"):
		return Edit{Start: stmt.Start(), End: stmt.End(), NewText: "pass"} // shares its line
	case rest != "":
		return Edit{Start: stmt.Start(), End: lineEnd, NewText: rest}
	}
	return Edit{Start: lineStart, End: next}
}

// Primary reports whether e can take a method call without parentheses:
// `loss.item()` but `(a * b).item()`.
func Primary(e *pyast.Node) bool {
	return e.Is("identifier", "attribute", "call", "subscript", "parenthesized_expression", "string", "integer", "float", "list", "dictionary")
}

// WrapMethod returns the edits that call method on expression e, adding
// parentheses when e needs them.
func WrapMethod(e *pyast.Node, method string) []Edit {
	if Primary(e) {
		return []Edit{{Start: e.End(), End: e.End(), NewText: "." + method}}
	}
	return []Edit{{Start: e.Start(), End: e.Start(), NewText: "("}, {Start: e.End(), End: e.End(), NewText: ")." + method}}
}

// MinimalEdit is one edit that turns old into new, covering only the bytes
// between their common prefix and suffix.
func MinimalEdit(old, new []byte) Edit {
	pre, suf := pyast.CommonEnds(old, new)
	return Edit{Start: pre, End: len(old) - suf, NewText: string(new[pre : len(new)-suf])}
}
