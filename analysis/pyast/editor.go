package pyast

import (
	"context"

	sitter "github.com/smacker/go-tree-sitter"
)

// Editor applies a client's text changes to a parsed buffer and parses the
// result incrementally: the one way a buffer's tree changes while it is
// edited. Changes apply in order, each to the text the previous ones left
// (as LSP's didChange sends them).
type Editor struct {
	prev *Tree
	ts   *sitter.Tree // prev's tree-sitter tree, edited; nil: parse afresh
	src  []byte
}

// NewEditor starts editing src, the text prev was parsed from (prev may be
// nil). prev stays as it was: the edits go to a copy of its tree.
func NewEditor(prev *Tree, src []byte) *Editor {
	e := &Editor{prev: prev, src: src}
	if prev != nil && prev.TS != nil {
		e.ts = prev.TS.Copy()
	}
	return e
}

// Text is the text after the changes so far.
func (e *Editor) Text() []byte { return e.src }

// Replace replaces the bytes [start, end) of the current text with text.
// Offsets outside the text are clamped, and an end before start is taken
// as start.
func (e *Editor) Replace(start, end int, text string) {
	start = min(max(start, 0), len(e.src))
	end = min(max(end, start), len(e.src))
	next := make([]byte, 0, len(e.src)-(end-start)+len(text))
	next = append(append(append(next, e.src[:start]...), text...), e.src[end:]...)
	if e.ts != nil {
		e.ts.Edit(sitter.EditInput{
			StartIndex:  uint32(start),
			OldEndIndex: uint32(end),
			NewEndIndex: uint32(start + len(text)),
			StartPoint:  advance(sitter.Point{}, e.src[:start]),
			OldEndPoint: advance(sitter.Point{}, e.src[:end]),
			NewEndPoint: advance(sitter.Point{}, next[:start+len(text)]),
		})
	}
	e.src = next
}

// ReplaceAll replaces the whole text; the next parse starts afresh.
func (e *Editor) ReplaceAll(text []byte) {
	e.src, e.ts = text, nil
}

// Parse parses the current text: incrementally from the edited tree when
// there is one, laid out so that the next version reuses every top-level
// statement the changes did not touch (see Tree and ParseForEditing).
func (e *Editor) Parse(ctx context.Context) (*Tree, error) {
	prev := e.prev
	if e.ts == nil {
		prev = nil
	}
	return ParseForEditing(ctx, prev, e.ts, e.src)
}
