package pyast

import (
	"bytes"
	"context"
)

// Editor applies a client's text changes to a parsed buffer and parses the
// result: the one way a buffer's tree changes while it is edited. Changes
// apply in order, each to the text the previous ones left (as LSP's
// didChange sends them). Only the top-level statements the changes touch
// are parsed again (see reparse).
type Editor struct {
	prev *Tree // nil: parse afresh
	src  []byte
	// The bytes [lo, hi) of src hold everything the changes so far wrote
	// or joined; outside them src is prev's source, shifted by the
	// difference in length after hi. changed is false until a change.
	lo, hi  int
	changed bool
	// sparesLater: see PrepareSparesLater.
	sparesLater bool
}

// NewEditor starts editing src, the text prev was parsed from (prev may be
// nil). prev stays as it was. Should src not be prev's source, the text is
// parsed afresh.
func NewEditor(prev *Tree, src []byte) *Editor {
	if prev != nil && !sameText(prev.src, src) {
		prev = nil
	}
	return &Editor{prev: prev, src: src}
}

// sameText reports whether a and b hold the same bytes, at once when they
// are the same slice.
func sameText(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0] || bytes.Equal(a, b)
}

// Changed returns the bytes [lo, hi) of Text that hold everything the
// changes so far wrote or joined; ok is false before a change.
func (e *Editor) Changed() (lo, hi int, ok bool) { return e.lo, e.hi, e.changed }

// Text is the text after the changes so far.
func (e *Editor) Text() []byte { return e.src }

// Replace replaces the bytes [start, end) of the current text with text.
// Offsets outside the text are clamped, and an end before start is taken
// as start.
func (e *Editor) Replace(start, end int, text string) {
	start = min(max(start, 0), len(e.src))
	end = min(max(end, start), len(e.src))
	n := len(e.src) - (end - start) + len(text)
	var spares *spareTexts
	if e.prev != nil {
		spares = e.prev.spares
	}
	// The source of a version nothing reads any more, or one made ready
	// for this version, when there is one (see spare.go); new ones have
	// room for a few KB of typing, so that they fit the versions after
	// them.
	var next []byte
	if spare := spares.takeSource(n); spare != nil {
		next = append(append(append(spare, e.src[:start]...), text...), e.src[end:]...)
	} else {
		// bytes.Join does not clear what it is about to write (make does:
		// a second pass over 2 MB).
		room := zeros[:withRoom(n)-n]
		next = bytes.Join([][]byte{e.src[:start], []byte(text), e.src[end:], room}, nil)[:n]
	}
	spares.watchSource(next)
	e.src = next
	e.widen(start, end, len(text))
}

// zeros are the room new sources get past their end (see Replace).
var zeros [64 << 10]byte

// withRoom is the capacity of a new source of n bytes (see Replace).
func withRoom(n int) int { return n + min(n/256, len(zeros)) }

// widen takes the replacement of [start, end) by n bytes into the changed
// range.
func (e *Editor) widen(start, end, n int) {
	if !e.changed {
		e.lo, e.hi, e.changed = start, start+n, true
		return
	}
	// The old range, in the new text: what lay after the replaced bytes
	// moved by the difference in length; what lay in them is gone.
	shift := func(off int) int {
		switch {
		case off <= start:
			return off
		case off >= end:
			return off + n - (end - start)
		default:
			return start + n
		}
	}
	e.lo, e.hi = min(shift(e.lo), start), max(shift(e.hi), start+n)
}

// ReplaceAll replaces the whole text (a client that sends every version
// whole). Only the bytes that differ from the current text count as
// changed: the common start and end stay.
func (e *Editor) ReplaceAll(text []byte) {
	old := e.src
	prefix, suffix := CommonEnds(old, text)
	e.src = text
	e.widen(prefix, len(old)-suffix, len(text)-prefix-suffix)
}

// CommonEnds returns the lengths of the longest common prefix of a and b
// and of their longest common suffix in what the prefix leaves: a[prefix :
// len(a)-suffix] is what changed.
func CommonEnds(a, b []byte) (prefix, suffix int) {
	// Large blocks, then small ones, then bytes: a statement of thousands
	// of lines is compared on every keystroke in it, and with 64-byte
	// blocks alone a 400 KB class took 0.1 ms.
	n := min(len(a), len(b))
	for _, block := range [...]int{4096, 64, 1} {
		for prefix+block <= n && bytes.Equal(a[prefix:prefix+block], b[prefix:prefix+block]) {
			prefix += block
		}
	}
	rest := n - prefix
	for _, block := range [...]int{4096, 64, 1} {
		for suffix+block <= rest && bytes.Equal(a[len(a)-suffix-block:len(a)-suffix], b[len(b)-suffix-block:len(b)-suffix]) {
			suffix += block
		}
	}
	return prefix, suffix
}

// PrepareSparesLater leaves making the spares of the version after this
// one ready (Tree.PrepareForEdits) to the caller, who calls it once it is
// done with the version: a language server, after sending its
// diagnostics. Made beside the version's analysis, the copy of its
// laid-out text (5.2 MB at 50,000 lines) took a core from it.
func (e *Editor) PrepareSparesLater() { e.sparesLater = true }

// Parse parses the current text: only the statements the changes touched
// when there is an earlier version, laid out so that the next version
// reuses every top-level statement its changes do not touch (see Tree and
// ParseForEditing).
func (e *Editor) Parse(ctx context.Context) (*Tree, error) {
	switch {
	case e.prev == nil:
		return ParseForEditing(ctx, e.src)
	case !e.changed:
		return e.prev, nil
	}
	t, err := reparse(ctx, e.prev, e.src, e.lo, e.hi)
	if err == nil && !e.sparesLater {
		// A buffer being edited: its next version's spares, beside this
		// one's analysis. (An open's would wait for an edit that may not
		// come: opening fifty files filled the spares' whole budget, 64
		// MB, with texts no keystroke took.)
		t.PrepareForEdits()
	}
	return t, err
}
