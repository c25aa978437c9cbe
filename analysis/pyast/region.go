package pyast

import (
	"bytes"
	"context"
	"sync"

	sitter "github.com/smacker/go-tree-sitter"
)

// A Region is a piece of source (whole top-level statements) parsed on
// its own, so that edits to it can be checked by an incremental reparse:
// the cost is that of the edits, not of the region.
type Region struct {
	src    []byte
	tree   *sitter.Tree
	errors int
	// walking guards walks of tree: fixes are verified side by side, and
	// the binding's nodes cache themselves in a map of their tree.
	walking sync.Mutex
}

// Replacement replaces the bytes [Start, End) of a region with Text.
type Replacement struct {
	Start, End int
	Text       string
}

// ParseRegion parses src as a region. Close it when done.
func ParseRegion(src []byte) (*Region, error) {
	tree, err := parse(context.Background(), src)
	if err != nil {
		return nil, err
	}
	return &Region{src: src, tree: tree, errors: ErrorCount(tree.RootNode())}, nil
}

// KeptRegion returns the segment's text as a Region parsed already, from
// a copy of the tree the segment keeps (see Segment.tree): edits of a large
// statement being typed into are then checked at the cost of the edits,
// where parsing the statement again took 40-80 ms in a class of 9,000
// lines. Nil when the segment keeps no tree. Close it when done.
func (s *Segment) KeptRegion() *Region {
	kept, _ := s.keptTree()
	if kept == nil {
		return nil
	}
	tree := track(kept.Copy())
	return &Region{src: s.text, tree: tree, errors: ErrorCount(tree.RootNode())}
}

// KeepsTree reports whether the segment keeps its tree (see KeptRegion).
func (s *Segment) KeepsTree() bool {
	tree, _ := s.keptTree()
	return tree != nil
}

// Text is the region's text.
func (r *Region) Text() []byte { return r.src }

// Errors is the number of syntax errors in the region.
func (r *Region) Errors() int { return r.errors }

// Close frees the region's tree.
func (r *Region) Close() { free(r.tree) }

// ErrorsAfter returns the number of syntax errors in after, the region's
// text with the replacements (sorted, not overlapping) applied, parsed
// incrementally from a copy of the region's tree, and whether the blocks
// that hold the replacements are aligned there as Python requires (see
// ParsesCleanly), which tree-sitter does not check.
func (r *Region) ErrorsAfter(after []byte, sorted []Replacement) (errors int, aligned bool, err error) {
	r.walking.Lock()
	edited := track(r.tree.Copy())
	r.walking.Unlock()
	defer free(edited)
	shift := 0
	spans := make([][2]int, len(sorted))
	for i, e := range sorted {
		editTree(edited, after[:e.Start+shift], r.src[e.Start:e.End], []byte(e.Text))
		spans[i] = [2]int{e.Start + shift, nextLineEnd(after, e.Start+shift+len(e.Text))}
		shift += len(e.Text) - (e.End - e.Start)
	}
	at, err := parseFrom(context.Background(), edited, after)
	if err != nil {
		return 0, false, err
	}
	defer free(at)
	return ErrorCount(at.RootNode()), alignedBlocks(at.RootNode(), after, spans), nil
}

// AlignedAround reports whether the blocks of the region that hold the
// replacements' ranges are aligned as Python requires: a fix that leaves
// them as unaligned as they were makes nothing worse.
func (r *Region) AlignedAround(sorted []Replacement) bool {
	spans := make([][2]int, len(sorted))
	for i, e := range sorted {
		spans[i] = [2]int{e.Start, nextLineEnd(r.src, e.End)}
	}
	r.walking.Lock()
	defer r.walking.Unlock()
	return alignedBlocks(r.tree.RootNode(), r.src, spans)
}

// nextLineEnd returns the end of the line after the one holding off in
// text: a block a replacement opens starts there, past the replacement.
func nextLineEnd(text []byte, off int) int {
	for range 2 {
		i := bytes.IndexAny(text[min(off, len(text)):], "\r\n")
		if i < 0 {
			return len(text)
		}
		off += i + 1
	}
	return off
}

// editTree tells t, before it is parsed again, that the bytes removed of
// its text, right after before (the new text up to them), became
// inserted.
func editTree(t *sitter.Tree, before, removed, inserted []byte) {
	start := len(before)
	startPoint := advance(sitter.Point{}, before)
	t.Edit(sitter.EditInput{
		StartIndex: uint32(start), OldEndIndex: uint32(start + len(removed)), NewEndIndex: uint32(start + len(inserted)),
		StartPoint:  startPoint,
		OldEndPoint: advance(startPoint, removed),
		NewEndPoint: advance(startPoint, inserted),
	})
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
