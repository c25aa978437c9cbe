package pyast

import (
	"bytes"

	sitter "github.com/smacker/go-tree-sitter"
)

// A Region is a piece of source (whole top-level statements) parsed on
// its own, so that edits to it can be checked by an incremental reparse:
// the cost is that of the edits, not of the region.
type Region struct {
	src    []byte
	tree   *sitter.Tree
	errors int
}

// Replacement replaces the bytes [Start, End) of a region with Text.
type Replacement struct {
	Start, End int
	Text       string
}

// ParseRegion parses src as a region. Close it when done.
func ParseRegion(src []byte) (*Region, error) {
	tree, err := ParseTree(nil, src)
	if err != nil {
		return nil, err
	}
	track(tree)
	return &Region{src: src, tree: tree, errors: ErrorCount(tree.RootNode())}, nil
}

// Errors is the number of syntax errors in the region.
func (r *Region) Errors() int { return r.errors }

// Close frees the region's tree.
func (r *Region) Close() { free(r.tree) }

// ErrorsAfter returns the number of syntax errors in after, the region's
// text with the replacements (sorted, not overlapping) applied, parsed
// incrementally from a copy of the region's tree.
func (r *Region) ErrorsAfter(after []byte, sorted []Replacement) (int, error) {
	edited := track(r.tree.Copy())
	defer free(edited)
	shift := 0
	for _, e := range sorted {
		start, oldEnd := e.Start+shift, e.End+shift
		newEnd := start + len(e.Text)
		startPoint := advance(sitter.Point{}, after[:start])
		edited.Edit(sitter.EditInput{
			StartIndex: uint32(start), OldEndIndex: uint32(oldEnd), NewEndIndex: uint32(newEnd),
			StartPoint:  startPoint,
			OldEndPoint: advance(startPoint, r.src[e.Start:e.End]),
			NewEndPoint: advance(startPoint, []byte(e.Text)),
		})
		shift += len(e.Text) - (e.End - e.Start)
	}
	at, err := ParseTree(edited, after)
	if err != nil {
		return 0, err
	}
	track(at)
	defer free(at)
	return ErrorCount(at.RootNode()), nil
}

// advance moves p (a row and byte column) over text. Rows end at "\n", as
// tree-sitter counts them.
func advance(p sitter.Point, text []byte) sitter.Point {
	rows, last := bytes.Count(text, []byte{'\n'}), bytes.LastIndexByte(text, '\n')
	if bytes.IndexByte(text, '\r') >= 0 {
		// The parser sees a lone "\r" as "\n" (see withNewlines).
		for i, b := range text {
			if loneCR(text, i, b) {
				rows, last = rows+1, max(last, i)
			}
		}
	}
	if last >= 0 {
		return sitter.Point{Row: p.Row + uint32(rows), Column: uint32(len(text) - last - 1)}
	}
	return sitter.Point{Row: p.Row, Column: p.Column + uint32(len(text))}
}
