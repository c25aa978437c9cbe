package pyast

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"

	sitter "github.com/smacker/go-tree-sitter"
)

// A class of thousands of lines is most of the file it is in (transformers'
// Trainer: 235 of 245 KB), and a chunk of its own when the file is opened
// (see parseChunked), so the open waited for one core to parse it while
// the other had little to do. Its methods parse alone as they do in the
// class, given the class's header line before them: so a large class is
// parsed in parts, each the header and a run of whole methods (tree-sitter
// reads those two ranges of the text and skips the rest, at the text's own
// offsets), on as many cores, and the parts' nodes are joined under the
// first part's class body.
//
// A part starts at a line at the body's indentation that starts a method
// (its first decorator, or `def`), after a line of code that does not go on
// into it and is no comment. The cuts are made by a scan of the text (see
// lexState), which may misread; whether they were safe is decided as for
// the chunks: a cut inside a string or brackets, or anything else that
// leaves the part before it unfinished, is a syntax error there, and with
// an error in any part, or a part that is not one class with its body at
// its end, the class is parsed whole instead.
//
// The parts' trees are not kept, and a class keeps its tree so that its
// first edit is parsed incrementally (see reparseSegment): the whole class
// is parsed again later, off the open's path (Tree.KeepSplitTrees, when
// the editor pauses), and that tree is kept once it is known to give the
// same nodes as the joined parts.

// splitClassFrom is the size from which a class alone in its chunk is
// parsed in parts: 64 KB parse in about 8 ms.
var splitClassFrom = 64 << 10

// classPlan is where a class's text is cut into parts (see classParts).
type classPlan struct {
	headerStart, headerEnd int   // the line(s) from `class` to the line break ending the header
	cuts                   []int // where the parts after the first start
}

// classParts plans the parse of text, a top-level class statement alone
// (its decorators and comments above it included), in at most n parts of
// about equal size; ok is false when text does not start so, holds more
// than the class, or has no place to cut.
func classParts(text []byte, n int) (plan classPlan, ok bool) {
	if n < 2 || !sameText(withNewlines(text), text) {
		return plan, false // lone "\r" line breaks: the scan reads lines by "\n"
	}
	var lex lexState // of text[:scanned]
	scanned := 0
	// The class line: past blank lines, comments and decorators.
	plan.headerStart = -1
	for off := 0; off < len(text); off = nextLine(text, off) {
		if !isCodeLine(text[off:lineEnd(text, off)]) {
			continue
		}
		lex, scanned = lex.scan(text[scanned:off]), off
		if !lex.atStatement() {
			continue // a decorator's arguments
		}
		if keywordAt(text[off:], "class") {
			plan.headerStart = off
			break
		}
		if text[off] != '@' {
			return plan, false
		}
	}
	if plan.headerStart < 0 {
		return plan, false
	}
	// The header ends at the first line break outside brackets and
	// strings.
	for off := plan.headerStart; off < len(text); {
		next := nextLine(text, off)
		lex, scanned = lex.scan(text[scanned:next]), next
		off = next
		if lex.atStatement() {
			plan.headerEnd = next
			break
		}
	}
	if plan.headerEnd == 0 || plan.headerEnd >= len(text) {
		return plan, false
	}
	// The body's indentation: that of its first line of code.
	var indent []byte
	for off := plan.headerEnd; off < len(text); off = nextLine(text, off) {
		if line := text[off:lineEnd(text, off)]; isCodeLine(line) {
			indent = line[:len(line)-len(bytes.TrimLeft(line, " \t"))]
			break
		}
	}
	if len(indent) == 0 {
		return plan, false // `class A: pass`, or no body
	}
	var starts []int
	prevCode := false // the last line that is not blank holds code, not a comment
	for off := plan.headerEnd; off < len(text); off = nextLine(text, off) {
		line := text[off:lineEnd(text, off)]
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		lex, scanned = lex.scan(text[scanned:off]), off
		code := isCodeLine(line)
		switch {
		case !lex.atStatement():
		case code && line[0] != ' ' && line[0] != '\t':
			// Code at column 0 ends the class: the text holds more than
			// it (a chunk of several statements), and the parts would
			// not be one class each.
			return plan, false
		case prevCode && methodAt(line, indent) && !continues(text[:off]):
			starts = append(starts, off)
		}
		prevCode = code
	}
	for i := 1; i < n; i++ {
		last := plan.headerEnd
		if len(plan.cuts) > 0 {
			last = plan.cuts[len(plan.cuts)-1]
		}
		k, _ := slices.BinarySearch(starts, max(last+1, len(text)*i/n))
		if k == len(starts) {
			break
		}
		plan.cuts = append(plan.cuts, starts[k])
	}
	return plan, len(plan.cuts) > 0
}

// methodAt reports whether line starts, at exactly indent, a definition
// or a decorator.
func methodAt(line, indent []byte) bool {
	if !bytes.HasPrefix(line, indent) || len(line) == len(indent) {
		return false
	}
	code := line[len(indent):]
	return code[0] == '@' || definitionAt(code) && !keywordAt(code, "class")
}

// nextLine returns the start of the line after the one at off, or
// len(text).
func nextLine(text []byte, off int) int {
	if i := bytes.IndexByte(text[off:], '\n'); i >= 0 {
		return off + i + 1
	}
	return len(text)
}

// lineEnd returns the end of the line at off, before its line break.
func lineEnd(text []byte, off int) int {
	if i := bytes.IndexByte(text[off:], '\n'); i >= 0 {
		return off + i
	}
	return len(text)
}

// classPart is one part of a class parsed alone (see parseClassPart).
type classPart struct {
	flat []flatNode // its nodes, walked
	ok   bool       // one class, no syntax error
}

// parseClassPart parses part k of text (see classPlan): the first from
// the start of text, the others as the class's header and their run of
// methods, at the text's own offsets.
func parseClassPart(ctx context.Context, text []byte, plan classPlan, k int) classPart {
	end := len(text)
	if k < len(plan.cuts) {
		end = plan.cuts[k]
	}
	var ts *sitter.Tree
	var err error
	if k == 0 {
		ts, err = parse(ctx, text[:end])
	} else {
		ts, err = parseRanges(ctx, text, textRange(text, plan.headerStart, plan.headerEnd), textRange(text, plan.cuts[k-1], end))
	}
	if err != nil {
		return classPart{}
	}
	defer freeLater(ts)
	if ts.RootNode().HasError() {
		return classPart{}
	}
	tops := topLevel(ts, 0)
	if len(tops) != 1 {
		return classPart{}
	}
	var buf scratch
	return classPart{flat: flatten(tops[0].node, &buf, nil), ok: true}
}

// parseRanges parses the ranges of text, with a parser of its own: one
// of the pool's would keep the ranges.
func parseRanges(ctx context.Context, text []byte, ranges ...sitter.Range) (*sitter.Tree, error) {
	p := sitter.NewParser()
	defer p.Close()
	p.SetLanguage(language)
	p.SetIncludedRanges(ranges)
	ts, err := p.ParseCtx(ctx, nil, text)
	if err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	return track(ts), nil
}

// textRange is the range of bytes [start, end) of text.
func textRange(text []byte, start, end int) sitter.Range {
	return sitter.Range{StartPoint: pointAt(text, start), EndPoint: pointAt(text, end), StartByte: uint32(start), EndByte: uint32(end)}
}

// pointAt is the row and column of byte off of text.
func pointAt(text []byte, off int) sitter.Point {
	return sitter.Point{Row: uint32(bytes.Count(text[:off], []byte{'\n'})), Column: uint32(off - (bytes.LastIndexByte(text[:off], '\n') + 1))}
}

// parseClassInParts parses src[start:end], a chunk that holds one large
// class, in parts (see classParts) on as many goroutines as there are
// workers, and mirrors it; nil when the chunk is no such class, or a part
// does not parse cleanly: the chunk is then parsed whole.
func parseClassInParts(ctx context.Context, src []byte, start, end int, root int32, workers int) *chunk {
	if end-start < splitClassFrom {
		return nil
	}
	text := src[start:end]
	plan, ok := classParts(text, workers)
	if !ok {
		return nil
	}
	parts := make([]classPart, len(plan.cuts)+1)
	Parallel(len(parts), func(k int) { parts[k] = parseClassPart(ctx, text, plan, k) })
	for _, p := range parts {
		if !p.ok {
			return nil
		}
	}
	flat, ok := joinClassParts(parts)
	if !ok {
		return nil
	}
	// A top without its tree-sitter node: the class is mirrored from the
	// joined walk, not walked again.
	gs, bases := chunkGroups([]top{{start: start, end: start + int(flat[0].end), origin: start}}, src, start, end)
	if len(gs) != 1 {
		return nil
	}
	seg := newSegment(gs[0], src, bases[0])
	nodes, _, _ := mirror(flat, seg.Base, root, nil, false, nil)
	seg.Nodes = []*Node{&nodes[0]}
	seg.later = &laterTree{}
	return &chunk{groups: gs, segments: []*Segment{seg}}
}

// laterTree is the tree of a class parsed in parts, parsed whole later
// (see Tree.KeepSplitTrees) and kept with the seen table of the segment's
// mirror once it is known to give the same nodes.
type laterTree struct {
	started atomic.Bool
	kept    atomic.Pointer[keptTree]
}

// keptTree is a segment's tree and the seen table of its mirror.
type keptTree struct {
	tree *sitter.Tree
	seen seenNodes
}

// keptTree returns the tree the segment keeps and its mirror's seen table
// (see Segment.tree and Segment.seen), nil when it keeps none.
func (s *Segment) keptTree() (*sitter.Tree, seenNodes) {
	if s.tree != nil || s.later == nil {
		return s.tree, s.seen
	}
	if k := s.later.kept.Load(); k != nil {
		return k.tree, k.seen
	}
	return nil, nil
}

// KeepSplitTrees parses whole, once each, the classes ParseForEditing
// parsed in parts, and keeps their trees (within keepAtOpen, as an open
// does), so that the first edit inside one is parsed incrementally. It
// takes what a parse of each takes, so call it off the path to the
// diagnostics, when the editor pauses; it is safe beside edits and
// analyses of the tree and of its later versions.
func (t *Tree) KeepSplitTrees(ctx context.Context) {
	if t == nil {
		return
	}
	for _, seg := range t.Segments {
		if seg.later == nil || !seg.later.started.CompareAndSwap(false, true) {
			continue
		}
		if keptBytes.Load()+int64(len(seg.text)) > keepAtOpen {
			continue
		}
		ts, err := parse(ctx, seg.text)
		if err != nil {
			seg.later.started.Store(false)
			return
		}
		seen, ok := seenIfSame(ts, seg)
		if !ok {
			splitMismatches.Add(1)
			free(ts)
			continue
		}
		size := int64(len(seg.text))
		keptBytes.Add(size)
		seg.later.kept.Store(&keptTree{tree: ts, seen: seen})
		runtime.AddCleanup(seg, func(ts *sitter.Tree) {
			free(ts)
			keptBytes.Add(-size)
		}, ts)
	}
}

// splitMismatches counts the classes parsed in parts whose whole parse
// gave other nodes (for tests: none should).
var splitMismatches atomic.Int64
