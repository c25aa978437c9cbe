package pyast

import (
	"bytes"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	sitter "github.com/smacker/go-tree-sitter"
)

// A buffer being edited changes in one place at a time, and most of its
// top-level statements stay as they were. So that the next version can
// reuse their mirrors as they are, node offsets do not index the source
// itself but a laid-out copy of it, Tree.Src: each segment (a run of
// top-level statements and the text up to the next one) sits at an offset
// that stays put across versions, followed by spaces that leave room for
// it to grow. An edit re-mirrors only the segments it touched and moves
// none of the others. The spaces go at the end of the segment's last line,
// so lines, indentation and tokens are those of the source; Real and
// Virtual convert offsets. Parse lays a file out without room, so that
// Tree.Src is the source and offsets are its own.
//
// Why two offset spaces. Rules, the model and fixes read Node.Start() and
// Node.End() as ints into one []byte, everywhere; node offsets that
// never move let a version share every untouched statement's nodes, and
// everything the model found in them, with the version before, without
// copying or shifting them. What it costs: every version writes its own
// laid-out text (about twice the source, 5.2 MB at 50,000 lines), into
// the unreachable text of an earlier version when there is one (see
// spare.go), a segment that outgrows its room moves its neighbours
// (reparsed, see reparse), and whoever reports an offset to the user
// converts it once (analysis.Result does, for every diagnostic and fix).
// The alternative, offsets relative to their statement with the
// statement's position looked up on use, would keep one offset space but
// change every reader of Start and End; docs/PERFORMANCE.md weighs it.

// Tree is a parsed Python file: the Go mirror of its syntax tree. The
// tree-sitter tree it was mirrored from is freed as soon as it is: edits
// reparse only the top-level statements they touch (see reparse), which
// needs no tree of the whole file.
type Tree struct {
	// Root is the module. It has no children: the module node is shared
	// by the versions of a buffer while their statements differ, so the
	// statements of this version are in Statements. Walk visits both.
	Root       *Node
	rootNumber int32 // Root's, see newRoot
	Statements []*Node
	Segments   []*Segment
	// Src is the text node offsets index: the source, laid out.
	Src []byte

	starts []int // each segment's offset in the source
	roomy  bool
	// spares are the texts of this layout's earlier versions that nothing
	// reads any more, and placed says what Src holds (see spare.go).
	spares *spareTexts
	placed []placedSegment
	// The source, and whether it has a syntax error.
	src      []byte
	hasError bool
}

// LaidOut reports whether Src differs from the source (the tree was
// parsed for editing).
func (t *Tree) LaidOut() bool { return t.roomy && len(t.Segments) > 0 }

// Segment is a run of top-level statements that starts a line, with the
// text up to the next segment. It never changes once built, and versions
// of a buffer share it while its text and syntax stay the same.
type Segment struct {
	Nodes []*Node // its top-level statements
	Base  int     // its offset in Tree.Src
	text  []byte  // its text in the source
	// shape is the shape of its statements (see shapeOf), hashed when
	// first asked (see Shape); 0 until then. Only an edit that brings
	// back a segment's text asks: hashing every mirror was a twentieth of
	// a keystroke in a class of thousands of lines.
	shape atomic.Uint64
	// padAt is where in text the spaces go: before the final line break,
	// after the last statement; -1 when the statement runs to the end
	// (an ERROR node may take the line break), which leaves the segment
	// no room unless it is the last one (see place).
	padAt int
	// hasError: its statements hold an ERROR or MISSING node.
	hasError bool
	// tree is the tree-sitter tree of text, kept when the segment is one
	// large statement (a table, a registry: thousands of lines in one
	// literal) so that an edit inside it is parsed incrementally rather
	// than the whole statement again (see reparseSegment); nil otherwise.
	// It is freed when the segment is collected.
	tree *sitter.Tree
	// lex is a scan of text, kept with tree once an edit asked for one
	// (see lexmarks.go); nil otherwise.
	lex    *lexMarks
	serial uint64 // names the segment, see placedSegment
	// code names its text and syntax (see Code): its serial, or the code
	// of the segment it was moved from unchanged.
	code uint64
	// seen describes the nodes of its statement's mirror, in order, when it
	// keeps its tree: the next version's mirror copies those an edit left
	// alone (see mirror).
	seen seenNodes
	// later is, for a class parsed in parts at open (see classparts.go),
	// the tree parsed whole later that it keeps instead of tree and seen;
	// nil otherwise. Read both through keptTree.
	later *laterTree
	// copied are the subtrees its mirror copied from the segment of serial
	// copiedFrom (0: none), the last version's (see CopiedFrom).
	copied     []copiedRun
	copiedFrom uint64
}

// Code names the segment's code: two segments of one buffer with the same
// code have the same text and syntax, and mirror the same nodes at their
// own offsets. A version shares the segments an edit left alone with the
// last one; an edit that needs the room one of them had between it and
// the next moves it to another offset in the laid-out text, a new segment
// with the old one's code (see spliceRegion). A model then knows the code
// did not change: typing a function at the end of a script moved the
// script's last statement every few dozen keys, and every verdict on the
// script's loops was judged again as if its module code had changed.
func (s *Segment) Code() uint64 { return s.code }

// Shape returns the shape of the segment's statements (see shapeOf).
func (s *Segment) Shape() uint64 {
	if h := s.shape.Load(); h != 0 {
		return h
	}
	h := uint64(shapeBasis)
	for _, n := range s.Nodes {
		h = shapeOfMirror(h, n.subtree(), s.Base)
	}
	s.shape.Store(h)
	return h
}

// Len is the length of the segment's text in the source.
func (s *Segment) Len() int { return len(s.text) }

// Text is the segment's text in the source; it must not be modified.
func (s *Segment) Text() []byte { return s.text }

// PadAt is where in Text the laid-out text puts the spaces up to the next
// segment: Text[:PadAt] is at Base, Text[PadAt:] (its final line break)
// just before the next segment. -1 when the segment has no such room.
func (s *Segment) PadAt() int { return s.padAt }

// Own returns s, a view of src (the Src of a tree holding the segment), as
// a view of the segment's own copy of its text when s lies in the segment's
// statements, and as a copy otherwise. A string kept as long as the segment
// then costs no allocation (one fewer object for each collection to mark)
// and keeps no version's laid-out text alive, only the segment's text.
func (seg *Segment) Own(s string, src []byte) string {
	if len(s) == 0 {
		return ""
	}
	at := int(uintptr(unsafe.Pointer(unsafe.StringData(s))) - uintptr(unsafe.Pointer(unsafe.SliceData(src))))
	local := at - seg.Base
	// Within src, within the segment's statements: the spaces at padAt are
	// not in the segment's text, and everything after them is moved.
	inside := uintptr(at) < uintptr(len(src)) && local >= 0 && local+len(s) <= len(seg.text) && (seg.padAt < 0 || local+len(s) <= seg.padAt)
	if !inside {
		return strings.Clone(s)
	}
	return unsafe.String(&seg.text[local], len(s))
}

// Settled reports whether off, an offset of Tree.Src, lies in the
// segment's text before its spaces: in every version holding the segment,
// its offset in the source is then the segment's start in the source plus
// off-Base (see Real).
func (s *Segment) Settled(off int) bool {
	local := off - s.Base
	return local >= 0 && local <= len(s.text) && (s.padAt < 0 || local <= s.padAt)
}

// Real converts an offset in t.Src to the source's.
func (t *Tree) Real(v int) int {
	i := t.SegmentNumber(v)
	if i < 0 {
		return v
	}
	s := t.Segments[i]
	local := v - s.Base
	switch {
	case s.padAt < 0 || local <= s.padAt:
	case local < s.padAt+t.pad(i):
		local = s.padAt // inside the spaces: where they were put
	default:
		local -= t.pad(i)
	}
	return t.starts[i] + min(local, len(s.text))
}

// Virtual converts an offset in the source to one in t.Src.
func (t *Tree) Virtual(r int) int {
	i := t.segmentAt(r, func(s int) int { return t.starts[s] })
	if i < 0 {
		return r
	}
	s := t.Segments[i]
	local := r - t.starts[i]
	if s.padAt >= 0 && local > s.padAt {
		local += t.pad(i)
	}
	return s.Base + local
}

// SegmentNumber returns the position in Segments of the segment holding
// offset off of Src, or -1 before the first. The model asks it for nearly
// every node it looks up: it searches the bases as fill lists them, side
// by side, rather than through each segment (a tree not yet filled has
// none).
func (t *Tree) SegmentNumber(off int) int {
	if len(t.placed) == len(t.Segments) {
		return t.segmentAt(off, func(s int) int { return t.placed[s].base })
	}
	return t.segmentAt(off, func(s int) int { return t.Segments[s].Base })
}

// segmentAt finds the last segment whose start (by startOf) is at or
// before off, or -1.
func (t *Tree) segmentAt(off int, startOf func(int) int) int {
	lo, hi := 0, len(t.Segments)
	for lo < hi {
		m := (lo + hi) / 2
		if startOf(m) <= off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo - 1
}

// pad is how many spaces follow segment i in t.Src.
func (t *Tree) pad(i int) int {
	return t.segmentEnd(i) - t.Segments[i].Base - t.Segments[i].Len()
}

// segmentEnd is where segment i's spaces end: the next segment's offset.
func (t *Tree) segmentEnd(i int) int {
	if i+1 < len(t.Segments) {
		return t.Segments[i+1].Base
	}
	return t.Root.End()
}

// HasError reports whether the tree contains a syntax error.
func (t *Tree) HasError() bool { return t.hasError }

// Walk calls visit for n and every descendant in source order, like the
// package's Walk; for t.Root that is every node of the tree.
func (t *Tree) Walk(n *Node, visit func(*Node) bool) {
	if n != t.Root {
		Walk(n, visit)
		return
	}
	if visit(n) {
		for _, s := range t.Statements {
			Walk(s, visit)
		}
	}
}

// group is a segment to be: top-level statements and the source range
// from the first one (0 for the first group) to the next group.
type group struct {
	tops       []top
	start, end int
}

// groups splits the top-level statements into segments: a segment starts
// with a statement that starts a line, and takes in the next one when its
// last statement runs past its final line break (a comment takes the "\r"
// of a CRLF, an ERROR node a whole line): the spaces that give a segment
// room must go before that line break. A segment whose code starts
// indented goes with the one before (see mergeIndented).
func groups(tops []top, src []byte) []group {
	return mergeUnpaddable(mergeIndented(lineGroups(tops, src), src), src)
}

// mergeIndented merges each group but the first whose first line of code
// is indented (see startsIndented) into the group before it. A comment at
// column 0 does not end a block, and the code indented after it goes on
// the statement before; a parse with a syntax error near them may still
// leave the comment at the top level, and a segment starting there would
// later be parsed alone (where indentation at the start is no error) and
// give a statement the file does not have.
func mergeIndented(gs []group, src []byte) []group {
	out := gs[:0]
	for _, g := range gs {
		out = append(out, g)
		for n := len(out); n > 1 && startsIndented(src[out[n-1].start:out[n-1].end]); n-- {
			prev, last := &out[n-2], out[n-1]
			prev.tops = append(prev.tops[:len(prev.tops):len(prev.tops)], last.tops...)
			prev.end = last.end
			out = out[:n-1]
		}
	}
	return out
}

// startsIndented reports whether the first line of text that holds code
// (past blank lines and comments) starts with a space or a tab. The
// region starting with it is then no top-level statement of its own.
func startsIndented(text []byte) bool {
	for len(text) > 0 {
		line := text
		if i := bytes.IndexAny(text, "\r\n"); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = nil
		}
		code := bytes.TrimLeft(line, " \t\f")
		if len(code) == 0 || code[0] == '#' {
			continue
		}
		return len(code) < len(line)
	}
	return false
}

// mergeUnpaddable merges each group whose last statement runs past its
// final line break with the groups after it, until one does not.
func mergeUnpaddable(out []group, src []byte) []group {
	merged := out[:0]
	for i := 0; i < len(out); i++ {
		g := out[i]
		for i+1 < len(out) && padPoint(g, src) < 0 {
			i++
			g.tops = append(g.tops[:len(g.tops):len(g.tops)], out[i].tops...)
			g.end = out[i].end
		}
		merged = append(merged, g)
	}
	return merged
}

// lineGroups splits the top-level statements at those that start a line.
func lineGroups(tops []top, src []byte) []group {
	var out []group
	for _, t := range tops {
		if len(out) > 0 && !lineStart(src, t.start) {
			out[len(out)-1].tops = append(out[len(out)-1].tops, t)
			continue
		}
		start := t.start
		if len(out) == 0 {
			start = 0
		} else {
			out[len(out)-1].end = start
		}
		out = append(out, group{tops: []top{t}, start: start})
	}
	if len(out) > 0 {
		out[len(out)-1].end = len(src)
	}
	return out
}

func lineStart(src []byte, off int) bool {
	return off == 0 || src[off-1] == '\n' || src[off-1] == '\r'
}

// In a fresh layout each segment gets as much room as it has text, and 32
// bytes a line more: its offset in Src follows from its offset and line in
// the source alone, which parts of a file parsed apart can compute (see
// parseChunked).
func freshBase(start, line int) int { return 2*start + 32*line }

// freshBases returns the fresh-layout offsets of groups gs, the first of
// which starts on line.
func freshBases(gs []group, src []byte, line int) []int {
	bases := make([]int, len(gs))
	for i, g := range gs {
		if i > 0 {
			line += bytes.Count(src[gs[i-1].start:g.start], []byte{'\n'})
		}
		bases[i] = freshBase(g.start, line)
	}
	return bases
}

// layOut builds the tree for ts, the parse of the whole of src; with
// roomy, segments get space to grow.
func layOut(ts *sitter.Tree, src []byte, roomy bool) *Tree {
	// The root is a module, or an ERROR when nothing parses.
	kind := ts.RootNode().Type()
	gs := groups(topLevel(ts, 0), src)
	t := &Tree{starts: make([]int, len(gs)), roomy: roomy, hasError: ts.RootNode().HasError(), src: src}
	for i, g := range gs {
		t.starts[i] = g.start
	}
	t.Segments = make([]*Segment, len(gs))
	if !roomy || len(gs) == 0 {
		t.Root, t.rootNumber = newRoot(kindOf(kind), len(src))
		mirrorAll(t, gs, src, func(i int) int { return gs[i].start })
		t.Src = src
		t.collect()
		return t
	}
	t.Root, t.rootNumber = newRoot(kindOf(kind), freshBase(len(src), bytes.Count(src, []byte{'\n'})))
	t.spares = newSpares()
	bases := freshBases(gs, src, 0)
	mirrorAll(t, gs, src, func(i int) int { return bases[i] })
	t.markErrors()
	t.Src = t.fill(t.Root.End(), nil)
	t.collect()
	return t
}

// markErrors makes sure a tree with a syntax error has a segment that says
// so, which an edit then reparses with its neighbours (see reparse). The
// parser can put an error where no statement holds it (a MISSING node
// between statements); when no segment shows one, every segment is marked,
// and the next edit parses the whole file.
func (t *Tree) markErrors() {
	if !t.hasError {
		return
	}
	for _, s := range t.Segments {
		if s.hasError {
			return
		}
	}
	for _, s := range t.Segments {
		s.hasError = true
	}
}

// missingSeparator reports whether two statements of g follow each other
// on a line with no ";" between them: the parser put a MISSING line break
// there, which no statement holds.
func missingSeparator(g group, src []byte) bool {
	for i := 1; i < len(g.tops); i++ {
		a, b := g.tops[i-1], g.tops[i]
		if !lineStart(src, b.start) && !isSeparator(a, src) && !isSeparator(b, src) {
			return true
		}
	}
	return false
}

// isSeparator reports whether a top-level node is a ";" or a comment. An
// empty one (a MISSING node the parser put at the end of the file) is
// neither.
func isSeparator(t top, src []byte) bool {
	if t.start >= t.end || t.start >= len(src) {
		return false
	}
	return t.end-t.start == 1 && src[t.start] == ';' || src[t.start] == '#'
}

// placeAll places every group that is not kept between the kept ones
// around it. It returns the offsets, or the bounds of a window of groups
// that did not fit (from < 0 when all did).
func placeAll(prev *Tree, gs []group, src []byte, kept []int) (bases []int, from, to int) {
	old := prev.Segments
	bases = make([]int, len(gs))
	for i := 0; i <= len(gs); {
		// The window is gs[i:j], between kept neighbours i-1 and j.
		j := i
		for j < len(gs) && kept[j] < 0 {
			j++
		}
		lo, hi := 0, prev.Root.End()
		var before *Segment
		if i > 0 {
			before = old[kept[i-1]]
			lo = before.Base + before.Len()
		}
		if j < len(gs) {
			hi = old[kept[j]].Base
			bases[j] = hi
		}
		if !place(gs[i:j], src, before, lo, hi, bases[i:j]) {
			return nil, i, j
		}
		i = j + 1
	}
	return bases, -1, -1
}

// place puts the groups of a window between lo and hi, after the segment
// before (nil at the start of the file), spreading the spare space over
// the groups that can take it.
func place(window []group, src []byte, before *Segment, lo, hi int, bases []int) bool {
	need, canPad := 0, 0
	for _, g := range window {
		need += g.end - g.start
		if padPoint(g, src) >= 0 {
			canPad++
		}
	}
	spare := hi - lo - need
	switch {
	case spare < 0:
		return false
	case spare > 0 && canPad == 0:
		if before == nil || before.padAt < 0 {
			return false // also: the first segment must start at 0
		}
		lo += spare // the segment before takes it all
		spare = 0
	}
	at := lo
	for i, g := range window {
		bases[i] = at
		at += g.end - g.start
		if padPoint(g, src) >= 0 {
			share := spare / canPad
			spare -= share
			canPad--
			at += share
		}
	}
	return true
}

// padPoint is where in g's text spaces may go: before its final line
// break and after its last statement, or at its end when it has no line
// break (the end of the file); -1 when a statement runs past that point.
func padPoint(g group, src []byte) int {
	last := g.tops[len(g.tops)-1].end - g.start
	text := src[g.start:g.end]
	k := len(text)
	switch {
	case k > 0 && text[k-1] == '\n' && k > 1 && text[k-2] == '\r':
		k -= 2
	case k > 0 && (text[k-1] == '\n' || text[k-1] == '\r'):
		k--
	}
	if last > k {
		return -1
	}
	return k
}

// mirrorSegment mirrors group g with its text at base; buf is a buffer
// for flatten. With keep (a large statement that keeps its tree), the
// segment also keeps the keys of its nodes, and with from it copies the
// nodes of from.prior's mirror that the edit left alone rather than
// walking them again.
func mirrorSegment(g group, src []byte, base int, root int32, buf *scratch, keep bool, from *reuse, spares *spareTexts) *Segment {
	seg := newSegment(g, src, base)
	// Keys and reuse only for one statement: the reused nodes are those of
	// prior's only statement.
	keep = keep && len(g.tops) == 1
	if !keep || from == nil || len(from.prior.Nodes) != 1 || len(from.seen) == 0 {
		from = nil
	}
	for _, t := range g.tops {
		nodes, seen, copied := mirror(flatten(t.node, buf, from), base-g.start+t.origin, root, from, keep, spares)
		seg.hasError = seg.hasError || t.hasError
		seg.Nodes = append(seg.Nodes, &nodes[0])
		seg.seen = seen
		if from != nil {
			seg.copied, seg.copiedFrom = copied, from.prior.serial
		}
	}
	return seg
}

// newSegment is the segment of group g, placed at base, without its
// nodes.
func newSegment(g group, src []byte, base int) *Segment {
	// Its own copy of the text: a view would keep this version's whole
	// source alive as long as the segment.
	serial := segmentSerials.Add(1)
	return &Segment{Base: base, text: bytes.Clone(src[g.start:g.end]), padAt: padPoint(g, src), hasError: missingSeparator(g, src), serial: serial, code: serial}
}

// mirrorAll mirrors every group into t.Segments, on as many cores as are
// worth it: a large file's mirror takes tens of milliseconds.
func mirrorAll(t *Tree, gs []group, src []byte, base func(int) int) {
	workers := min(runtime.GOMAXPROCS(0), max(1, len(src)/(64<<10)))
	Parallel(workers, func(w int) {
		var buf scratch
		// Contiguous shares of about equal size.
		for i := range gs {
			if gs[i].start*workers/max(1, len(src)) == w {
				t.Segments[i] = mirrorSegment(gs[i], src, base(i), t.rootNumber, &buf, false, nil, nil)
			}
		}
	})
}

// Parallel calls do(w) for every w in [0, n), each on a goroutine of its
// own, and returns when all have. A panic in one is raised again here, in
// the caller's goroutine, where the server's and check's recovery see it:
// a panic in a goroutine of its own ends the process.
func Parallel(n int, do func(w int)) {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed any
	)
	for w := range n {
		wg.Go(func() {
			defer func() {
				if p := recover(); p != nil {
					mu.Lock()
					if failed == nil {
						failed = p
					}
					mu.Unlock()
				}
			}()
			do(w)
		})
	}
	wg.Wait()
	if failed != nil {
		panic(failed)
	}
}

// fill writes the laid-out text: each segment's text at its base, with
// spaces at its pad point up to the next segment.
//
// It writes into a spare text of the layout's (see spare.go), or else a
// copy of prev's (a tree of the same layout), and rewrites only the
// segments that are not already there with the same spaces.
func (t *Tree) fill(size int, prev *Tree) []byte {
	t.placed = make([]placedSegment, len(t.Segments))
	for i, s := range t.Segments {
		t.placed[i] = placedSegment{serial: s.serial, base: s.Base, end: t.segmentEnd(i)}
	}
	var out []byte
	var had []placedSegment // what out holds already
	if spare := t.spares.take(); spare != nil && len(spare.buf) == size {
		out, had = spare.buf, spare.placed
	} else if prev != nil && prev.Root == t.Root && len(prev.Src) == size && prev.placed != nil {
		out, had = append([]byte(nil), prev.Src...), prev.placed
	} else {
		out = make([]byte, size)
	}
	j := 0 // the segment out holds at or after the current one's offset
	for i, s := range t.Segments {
		p := t.placed[i]
		for j < len(had) && had[j].base < p.base {
			j++
		}
		if j < len(had) && had[j] == p {
			continue // the same text and spaces, already there
		}
		at, end := p.base, p.end
		if s.padAt < 0 {
			// Only the last segment can have room it cannot put before a
			// line break (see groups): spaces after the end of the file.
			at += copy(out[at:], s.text)
			for filled := 0; at+filled < end; {
				filled += copy(out[at+filled:end], spaces)
			}
			continue
		}
		at += copy(out[at:], s.text[:s.padAt])
		pad := t.pad(i)
		for filled := 0; filled < pad; {
			filled += copy(out[at+filled:at+pad], spaces)
		}
		copy(out[at+pad:], s.text[s.padAt:])
	}
	t.spares.watch(out, t.placed)
	return out
}

// PrepareForEdits makes ready, in the background, a spare text and a spare
// source for the next version of t's buffer (t its latest version), where
// the spares were let go (ReleaseMemory) or ran out. Editor.Parse calls it
// for each version it makes (unless told PrepareSparesLater), and the
// server after giving memory back, for the buffer being typed in: the
// first keystrokes after a pause otherwise copied a whole text and source
// into memory the system had to map again, page by page.
func (t *Tree) PrepareForEdits() {
	if t.spares == nil || t.placed == nil {
		return
	}
	t.spares.keepAgain()
	t.spares.prepare(t.Src, t.placed)
	t.spares.prepareSource(withRoom(len(t.src)))
}

var spaces = bytes.Repeat([]byte{' '}, 4096)

// collect lists the statements of all segments.
func (t *Tree) collect() {
	n := 0
	for _, s := range t.Segments {
		n += len(s.Nodes)
	}
	t.Statements = make([]*Node, 0, n)
	for _, s := range t.Segments {
		t.Statements = append(t.Statements, s.Nodes...)
	}
}
