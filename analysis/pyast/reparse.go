package pyast

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	sitter "github.com/smacker/go-tree-sitter"
)

// An edit reparses the top-level statements it touched, alone, and keeps
// the mirror of every other one. Top-level statements start a line at
// column 0, and Python's tokenizer is in its initial state there (no open
// bracket or string, no indentation) when the code before parses without
// a syntax error: so a file without syntax errors gets the tree a parse of
// the whole file would give, at the cost of the statements the edit
// touched. tree-sitter's own incremental reparse costs more in this
// grammar: it never reuses a node built while its parser kept two
// interpretations open (a call to `print`, a parenthesised expression and
// an f-string are such places), and a top-level statement that ends in one
// is parsed again on every edit anywhere in the file, which made a
// one-character edit at 50,000 lines cost 15 to 30 ms. Within one large
// statement, though (a table of thousands of lines), parsing the statement
// again costs more than that: such a statement keeps its tree, and an edit
// inside it alone is parsed incrementally from it (reparseSegment); its
// mirror then copies the nodes of the subtrees the parse reused from the
// last one rather than walking them again (see mirror). The tree-sitter
// built in differs from stock tree-sitter in one place for this
// (internal/go-tree-sitter/README.md): a letter typed before the first or
// last statement of a method's body made stock tree-sitter parse the rest
// of the class again, 10 to 70 ms in a class of thousands of lines.
//
// A syntax error stays in the statements around the edit: a bracket or
// string the user has just opened does not swallow the rest of the file
// while they type, as it would in a whole parse. The statements next to a
// segment with an error are parsed with it, so that the edit that mends the
// error mends them too.
//
// tree-sitter is laxer than Python in one way that crosses statements: it
// skips a line break where its parser expects more, so a module-level
// statement left unfinished at the end of its line (`total = `) takes the
// next line in (`total = running = 0` parses without an error). A region
// whose last statement is so left open is parsed with the statement after
// it, as a whole parse would (see readsOnIntoNext); without that, the rules
// judged a program a fresh analysis of the same text does not see.
//
// A file opened with a bracket left open before a definition at column 0
// is parsed in parts, cut at the definition (see statementStarts'
// recoveries), as if the bracket had been opened by an edit: the error
// stays in the statements before the definition, and an edit after it is
// parsed alone (see recovers). Before, a whole parse of such a file took
// the rest of it into the error, and every edit after the error parsed the
// whole file again: at 10,000 lines, 400 ms a keystroke, 2 s at 50,000.
//
// A whole parse whose error did swallow the rest of the file (one parsed
// whole, see parseChunked) may not parse as a module at all: its
// root is an ERROR, over the statements before the error and the error
// itself. An edit among the statements before it, leaving them without an
// error, leaves that root as it is, and is reparsed alone like any other;
// an edit that reaches the segments with the error, or writes one, parses
// the whole file again. Every edit parsed the whole file again before:
// at 10,000 lines with `x = foo(` in the middle, 470 ms a keystroke.

// reparse builds the tree of src, prev's source with changes that wrote
// or joined only the bytes [lo, hi) of src.
func reparse(ctx context.Context, prev *Tree, src []byte, lo, hi int) (*Tree, error) {
	n := len(prev.Segments)
	if !prev.roomy || n == 0 {
		return ParseForEditing(ctx, src)
	}
	errorRoot := prev.Root.Kind() != "module"
	old := prev.src
	delta := len(src) - len(old)
	oldHi := hi - delta // the end of the changed bytes in prev's source
	// The segments the changes touched: the one holding the byte before
	// them (a change at the start of a line may join it to the statement
	// before) through the one holding the byte after them.
	first := max(0, prev.segmentOfSource(max(0, lo-1)))
	// A change that begins at a segment's first byte and leaves there a
	// statement of its own cannot join it to the statement before (which,
	// without an error, is whole): the region starts at the segment, and a
	// large statement's kept tree parses it incrementally. Taken in, the
	// statement before made a region of two statements, parsed afresh: a
	// letter typed before the name a table of thousands of lines is bound
	// to cost 30-50 ms, and the table lost its tree for the next edit.
	if k := first + 1; k < n && prev.starts[k] == lo && !prev.Segments[first].hasError && startsAlone(src[lo:]) {
		first = k
	}
	last := max(first, prev.segmentOfSource(oldHi))
	for width := 0; ; width = max(1, 2*width) {
		first, last = max(0, first-width), min(n-1, last+width)
		for first > 0 && prev.Segments[first-1].hasError && !recovers(prev.Segments[first-1], prev.Segments[first]) {
			first--
		}
		for last < n-1 && prev.Segments[last+1].hasError {
			last++
		}
		if first == 0 && last == n-1 || errorRoot && anyError(prev.Segments[first:last+1]) {
			return ParseForEditing(ctx, src)
		}
		t, err := spliceRegion(ctx, prev, src, first, last, delta, errorRoot)
		if err == errNotClean {
			return ParseForEditing(ctx, src)
		}
		if err != nil || t != nil {
			return t, err
		}
		// The new statements do not fit between the segments around them
		// (or do not end where the next one starts): take in more.
	}
}

// startsAlone reports whether text, from the start of a line, starts a
// statement that no statement before it takes in: code at column 0 that
// is no else, elif, except or finally.
func startsAlone(text []byte) bool {
	return len(text) > 0 && strings.IndexByte(" \t\f\r\n#\\", text[0]) < 0 && !keywordAt(text, "else", "elif", "except", "finally")
}

// segmentOfSource returns the index of the segment holding byte off of the
// source.
func (t *Tree) segmentOfSource(off int) int {
	return t.segmentAt(off, func(i int) int { return t.starts[i] })
}

// recovers reports whether seg, after a segment before with an error,
// starts where a bracket the segment before left open ends: with a
// definition, which Python never reads inside brackets (see
// statementStarts' recoveries). No edit of seg can then mend the error
// before by joining the two, and seg is parsed alone, as the file was
// opened, rather than taken into the error. An error of another kind (a
// string left open, a decorator with nothing after it) may be mended by
// what follows, and takes seg in.
func recovers(before, seg *Segment) bool {
	if !definitionAt(seg.text) {
		return false
	}
	end := lexState{}.scan(before.text)
	return end.quote == 0 && end.depth > 0
}

// readsOnIntoNext reports whether the last statement of text, parsed as
// root, is a module-level statement that its last line leaves unfinished:
// its first syntax error is on the last branch of the tree (an ERROR or a
// MISSING token there, trailing comments aside), and starts on a line at
// column 0 that no keyword of a compound statement starts. Not a class
// or function whose error recovery ran to its end: a bracket left open in
// a method makes one ERROR of the whole class, which no statement after it
// can mend, and taking that statement in parsed the class again on every
// key while the bracket stayed open.
func readsOnIntoNext(root *sitter.Node, text []byte) bool {
	if !errorOnLastBranch(root) {
		return false
	}
	at := min(int(firstError(root).StartByte()), len(text))
	line := text[bytes.LastIndexByte(text[:at], '\n')+1:]
	return len(line) > 0 && !startsIndented(line) && !startsStatementOnly(line)
}

// errorOnLastBranch reports whether an ERROR or a MISSING token lies on
// the last branch under root (past trailing comments).
func errorOnLastBranch(root *sitter.Node) bool {
	for n := root; n != nil; {
		if n.IsError() || n.IsMissing() {
			return true
		}
		k := int(n.ChildCount()) - 1
		for k >= 0 && n.Child(k).Type() == "comment" {
			k--
		}
		if k < 0 {
			return false
		}
		n = n.Child(k)
	}
	return false
}

// firstError returns the first ERROR or MISSING node under root, in the
// order of the text; root when it has none.
func firstError(root *sitter.Node) *sitter.Node {
	n := root
	for !n.IsError() && !n.IsMissing() {
		var next *sitter.Node
		for i := range int(n.ChildCount()) {
			if c := n.Child(i); c.IsError() || c.IsMissing() || c.HasError() {
				next = c
				break
			}
		}
		if next == nil {
			return n
		}
		n = next
	}
	return n
}

// startsStatementOnly reports whether text starts with a decorator or a
// keyword that starts a statement and never an expression.
func startsStatementOnly(text []byte) bool {
	return len(text) > 0 && text[0] == '@' || keywordAt(text, "def", "class", "async", "if", "for", "while", "with", "try",
		"import", "from", "return", "pass", "break", "continue", "raise", "global", "nonlocal", "del", "assert")
}

// anyError reports whether one of segs holds a syntax error.
func anyError(segs []*Segment) bool {
	for _, seg := range segs {
		if seg.hasError {
			return true
		}
	}
	return false
}

// leftOpenBefore reports whether one of segs, with a syntax error, leaves
// a string open in the quote character's triple quotes.
func leftOpenBefore(segs []*Segment, quote byte) bool {
	for _, seg := range segs {
		if seg.hasError {
			if st := (lexState{}).scan(seg.text); st.quote == quote && st.triple {
				return true
			}
		}
	}
	return false
}

// errNotClean is spliceRegion's answer when it was asked for a region
// without a syntax error and the new statements have one.
var errNotClean = errors.New("the region has a syntax error")

// spliceRegion parses the text of segments first..last as changed in src
// (delta bytes longer than prev's source) and puts its statements between
// prev's segments around them. It returns nil when they do not fit there,
// and errNotClean, with clean, when they hold a syntax error.
func spliceRegion(ctx context.Context, prev *Tree, src []byte, first, last, delta int, clean bool) (*Tree, error) {
	n := len(prev.Segments)
	start := prev.starts[first]
	end := len(src)
	if last+1 < n {
		end = prev.starts[last+1] + delta
	}
	if end < start {
		return nil, nil // the changes took in more than these segments
	}
	if first > 0 && startsIndented(src[start:end]) {
		// Comments at column 0 do not end a block: code indented after
		// them goes on the statement before (a commented-out loop header
		// leaves its body to the loop above it). No segment after the
		// region starts so (see mergeIndented), and its text is as it was.
		return nil, nil
	}
	var old *Segment // the one segment the region was, when it kept its tree
	if first == last {
		if tree, _ := prev.Segments[first].keptTree(); tree != nil {
			old = prev.Segments[first]
		}
	}
	ts, lineage, err := reparseSegment(ctx, old, src[start:end])
	if err != nil {
		return nil, err
	}
	kept := false // ts went to the region's segment
	defer func() {
		if !kept {
			free(ts)
		}
	}()
	if clean && ts.RootNode().HasError() {
		return nil, errNotClean
	}
	// The scan of a large statement's text goes with its tree (see
	// lexmarks.go): from the last version's, it costs what the edit does.
	var marks *lexMarks
	if old != nil && old.lex != nil {
		marks = old.lex.rescan(old.text, src[start:end])
	}
	if ts.RootNode().HasError() {
		if marks == nil && old != nil {
			marks = scanMarked(src[start:end])
		}
		var st lexState
		if marks != nil {
			st = marks.end
		} else {
			st = lexState{}.scan(src[start:end])
		}
		// A triple-quoted string the region leaves open goes on to the
		// next such quote after it (an edit that deletes a docstring's
		// closing quotes), which a parse of the region alone cannot see.
		// Or its quotes close a string left open before the region, in
		// an earlier segment with an error: tree-sitter ended that string
		// to parse the statements after it, which Python reads as text.
		if st.quote != 0 && st.triple &&
			(end < len(src) && bytes.Contains(src[end:], []byte{st.quote, st.quote, st.quote}) || leftOpenBefore(prev.Segments[:first], st.quote)) {
			return nil, nil
		}
		// A statement left unfinished at the end of a line outside
		// brackets (`total = `, `x = d.`) reads on into the next line in
		// tree-sitter, which skips a line break where it expects more:
		// a whole parse takes the next statement into it (`total =
		// running = 0`), with no error. So does the region, unless the
		// next statement starts with a keyword no expression starts with
		// (a definition, a loop, a decorator): the error stays, and a
		// large `if` or class after it is not parsed again on each key.
		if end < len(src) && st.atStatement() && !startsStatementOnly(src[end:]) && readsOnIntoNext(ts.RootNode(), src[start:end]) {
			return nil, nil
		}
	}
	var tops []top
	if ts.RootNode().Type() == "module" {
		tops = topLevel(ts, start)
	} else if end > start {
		tops = []top{wholeTop(ts, start)}
	}
	if len(tops) == 0 {
		return nil, nil // only blank lines: they belong to a neighbour
	}
	region := lineGroups(tops, src)
	region[0].start, region[len(region)-1].end = start, end
	region = mergeUnpaddable(mergeIndented(region, src), src)
	if end < len(src) && (endsInBackslash(src[start:end]) || endsInDecorator(src[start:end])) {
		// Its last line goes on into the next segment's, or decorates
		// the definition that starts it (a decorator typed on the line
		// above a function).
		return nil, nil
	}

	// The whole file as groups: prev's segments before and after the
	// region, kept where they are, and the region's new groups.
	gs := make([]group, 0, n-(last-first+1)+len(region))
	keptAt := make([]int, 0, cap(gs))
	for i := range first {
		gs = append(gs, group{start: prev.starts[i], end: prev.starts[i+1]})
		keptAt = append(keptAt, i)
	}
	// A new group with the text and shape of one of the region's old
	// segments (the statements after a syntax error that is now mended,
	// or a segment taken in only to make room) keeps that segment.
	// Looked up by length first: a map by text copied and hashed a class
	// of thousands of lines on every keystroke inside it, whose length
	// the keystroke changes.
	byLength := map[int][]int{}
	for j := first; j <= last; j++ {
		byLength[len(prev.Segments[j].text)] = append(byLength[len(prev.Segments[j].text)], j)
	}
	withText := func(text []byte) (int, bool) { // the last old segment with text
		sameLength := byLength[len(text)]
		for k := len(sameLength) - 1; k >= 0; k-- {
			if j := sameLength[k]; bytes.Equal(prev.Segments[j].text, text) {
				return j, true
			}
		}
		return -1, false
	}
	buf := scratches.Get().(*scratch)
	defer putScratch(buf)
	lastKept := first - 1
	for _, g := range region {
		j, ok := withText(src[g.start:g.end])
		if ok && j > lastKept && len(prev.Segments[j].Nodes) == len(g.tops) && prev.Segments[j].Shape() == shapeOf(g.tops, g.start, buf) {
			lastKept = j
		} else {
			j = -1
		}
		gs = append(gs, g)
		keptAt = append(keptAt, j)
	}
	for i := last + 1; i < n; i++ {
		end := len(src)
		if i+1 < n {
			end = prev.starts[i+1] + delta
		}
		gs = append(gs, group{start: prev.starts[i] + delta, end: end})
		keptAt = append(keptAt, i)
	}

	bases, from, _ := placeAll(prev, gs, src, keptAt)
	var movedFrom []int // the old segment of each of the region's groups moved unchanged, or -1
	if from >= 0 {
		// Kept where they were, the segments it matched leave no room
		// between them: move them too, keeping their code (see Code).
		movedFrom = slices.Clone(keptAt[first : first+len(region)])
		for i := first; i < first+len(region); i++ {
			keptAt[i] = -1
		}
		if bases, from, _ = placeAll(prev, gs, src, keptAt); from >= 0 {
			return nil, nil
		}
	}
	// One large statement keeps its tree: its next edit starts from it.
	keep := len(region) == 1 && keptAt[first] < 0 && region[0].end-region[0].start >= keepTreeFrom
	t := &Tree{Root: prev.Root, rootNumber: prev.rootNumber, roomy: true, src: src, starts: make([]int, len(gs)), Segments: make([]*Segment, len(gs)), spares: prev.spares}
	for i, g := range gs {
		t.starts[i] = g.start
		if keptAt[i] >= 0 {
			t.Segments[i] = prev.Segments[keptAt[i]]
		} else {
			t.Segments[i] = mirrorSegment(g, src, bases[i], t.rootNumber, buf, keep && i == first, lineage, prev.spares)
			if k := i - first; k >= 0 && k < len(movedFrom) && movedFrom[k] >= 0 {
				t.Segments[i].code = prev.Segments[movedFrom[k]].code
			}
		}
		t.hasError = t.hasError || t.Segments[i].hasError
	}
	regionHasError := false
	for _, seg := range t.Segments[first : first+len(region)] {
		regionHasError = regionHasError || seg.hasError
	}
	if ts.RootNode().HasError() && !regionHasError {
		// An error no statement holds (see markErrors): the region's new
		// segments say so, so that the next edit near them takes them in.
		for i := first; i < first+len(region); i++ {
			if keptAt[i] < 0 {
				t.Segments[i].hasError = true
			}
		}
		t.hasError = true
	}
	if keep {
		keepTree(t.Segments[first], ts)
		t.Segments[first].lex = marks
		kept = true
	}
	t.Src = t.fill(t.Root.End(), prev)
	t.collect()
	return t, nil
}

// scratches keeps walk buffers (see flatten) between reparses: a
// keystroke in a large statement walks into a buffer of reuseWalkFirst
// nodes (768 KB), which, allocated and cleared for each one, was a tenth
// of what a keystroke in a class of thousands of lines allocated.
var scratches = sync.Pool{New: func() any { return new(scratch) }}

// putScratch gives buf back to scratches, unless a whole walk of a large
// statement grew it past what a keystroke needs.
func putScratch(buf *scratch) {
	if cap(*buf) <= 2*int(reuseWalkFirst) {
		scratches.Put(buf)
	}
}

// keepTreeFrom is the size from which a statement parsed on its own keeps
// its tree: parsing 32 KB again takes a few milliseconds.
const keepTreeFrom = 32 << 10

// keepTree gives seg its tree, freed when seg is collected.
func keepTree(seg *Segment, ts *sitter.Tree) {
	seg.tree = ts
	size := int64(len(seg.text))
	keptBytes.Add(size)
	runtime.AddCleanup(seg, func(ts *sitter.Tree) {
		free(ts)
		keptBytes.Add(-size)
	}, ts)
}

// keptBytes is the size of the text of the statements whose trees are
// kept, in every buffer: a tree-sitter tree takes 25 to 60 times its text.
var keptBytes atomic.Int64

// keepAtOpen bounds what opening files keeps (see parseChunk): past it, a
// large statement keeps its tree only once it is edited, so opening many
// files of tables does not hold hundreds of megabytes of trees.
var keepAtOpen int64 = 2 << 20

// reparseSegment parses text, a region of a new version: incrementally from
// old's tree when old (the one segment the region was) kept one, else
// afresh. The edit is where the two texts differ, as the parser sees them
// (see withNewlines: a "\r" that a change joins to a "\n" reads otherwise);
// from old's tree, it also returns what the mirror may reuse of old's.
func reparseSegment(ctx context.Context, old *Segment, text []byte) (*sitter.Tree, *reuse, error) {
	if old == nil {
		ts, err := parse(ctx, text)
		return ts, nil, err
	}
	tree, seen := old.keptTree()
	before, after := withNewlines(old.text), withNewlines(text)
	prefix, suffix := CommonEnds(before, after)
	edited := track(tree.Copy())
	defer free(edited)
	editTree(edited, after[:prefix], before[prefix:len(before)-suffix], after[prefix:len(after)-suffix])
	reparsed.Add(1)
	ts, err := parseFrom(ctx, edited, text)
	if err != nil {
		return nil, nil, err
	}
	return ts, &reuse{prior: old, seen: seen, lo: prefix, hi: len(after) - suffix, delta: len(after) - len(before)}, nil
}

// reparsed counts the incremental parses of kept trees (for tests).
var reparsed atomic.Int64

// endsInDecorator reports whether the last line of code in text (past
// blank and comment lines) is a decorator at column 0.
func endsInDecorator(text []byte) bool {
	line := lastLine(text, isCodeLine)
	return len(line) > 0 && line[0] == '@'
}

// endsInBackslash reports whether the last line of code in text (past
// blank lines) ends in a backslash, which joins it to the line after.
func endsInBackslash(text []byte) bool {
	line := lastLine(text, func(line []byte) bool { return len(line) > 0 })
	return len(line) > 0 && line[len(line)-1] == '\\'
}
