package pyast

import (
	"bytes"
	"context"
	"runtime"
	"slices"
	"strings"
)

// Opening a large file waits for its parse, which takes tens of
// milliseconds and uses one core. Top-level statements that start a line
// parse the same alone as in the file, so the source is cut into chunks at
// such lines and the chunks are parsed on as many cores, then mirrored as
// one tree.
//
// A large statement (a class of thousands of lines, a table) is a chunk of
// its own and keeps its tree, as it would after an edit (see
// reparseSegment): the first edit inside it is parsed incrementally too,
// rather than the whole statement again.
//
// A cut is made only at a line that may start a statement (startsChunk:
// not a clause such as `else:` that continues the one before, not after a
// decorator, a trailing backslash, comma or bracket), and it is safe when
// the side before it parses without a syntax error: an open bracket or
// string, or anything else the text before the cut leaves unfinished,
// shows up as one there. So the chunks up to the first one with an error
// are kept, and the file from that chunk's cut is parsed as one region,
// errors and all (parseChunk's rest), up to the next definition that
// shows a bracket was left open (see statementStarts' recoveries), where
// chunks start again; or to the end of the file. With an error in the
// first chunk and no such definition after it, the file is parsed whole.

// minChunk is the smallest chunk worth a core of its own: a file of 1,000
// lines (36 KB) opened in 1.8 times its parse when parsed whole, 1.4 times
// in two chunks.
const minChunk = 8 << 10

// parseChunked parses src in chunks on several cores, or returns nil when
// src is too small for that (and has no large statement, which is a chunk
// of its own however small the file, and no recovery) or is to be parsed
// whole for a syntax error.
func parseChunked(ctx context.Context, src []byte) *Tree {
	// A chunk a core: more, smaller chunks measured slower.
	workers := min(runtime.GOMAXPROCS(0), 8)
	n := min(workers, len(src)/minChunk)
	starts, recoveries := statementStarts(src)
	if n < 2 && len(src) < keepTreeFrom && len(recoveries) == 0 {
		return nil
	}
	cuts := []int{0}
	// About equal shares, each cut at the first statement past its share.
	for i := 1; i < n; i++ {
		k, _ := slices.BinarySearch(starts, max(cuts[len(cuts)-1]+1, len(src)*i/n)+1)
		if k == len(starts) {
			break
		}
		cuts = append(cuts, starts[k])
	}
	cuts = append(cuts, aroundLargeStatements(src, starts)...)
	cuts = append(cuts, recoveries...)
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	if cuts[len(cuts)-1] == len(src) {
		cuts = cuts[:len(cuts)-1]
	}
	cuts = append(cuts, len(src))
	if len(cuts) < 3 {
		return nil
	}
	// Each chunk is parsed and mirrored on its own: a fresh layout places a
	// segment by its own offset (freshBase).
	root, rootNumber := newRoot(kindOf("module"), freshBase(len(src), bytes.Count(src, []byte{'\n'})))
	parts := make([]*chunk, len(cuts)-1)
	next := make(chan int, len(parts))
	for i := range parts {
		next <- i
	}
	close(next)
	Parallel(min(workers, len(parts)), func(int) {
		var buf scratch
		for i := range next {
			// A large class is parsed in parts (see classparts.go), on
			// goroutines of its own; whole when it cannot be.
			if parts[i] = parseClassInParts(ctx, src, cuts[i], cuts[i+1], rootNumber, workers); parts[i] == nil {
				parts[i] = parseChunk(ctx, src, cuts[i], cuts[i+1], rootNumber, &buf, noErrors)
			}
		}
	})
	t := &Tree{Root: root, rootNumber: rootNumber, roomy: true, src: src, spares: newSpares()}
	for k := 0; k < len(parts); {
		if p := parts[k]; p != nil && !p.broken {
			t.add(p)
			k++
			continue
		}
		// The chunks before this one parsed without an error, or it
		// starts at a recovery: its cut is where a statement starts, and
		// the file from there up to a recovery parses alone as it does in
		// the whole file, syntax errors and all. The first recovery after
		// the cut, or when the statements before it cannot end a chunk
		// (see parseChunk), the next one; the end of the file at last.
		if k == 0 && len(recoveries) == 0 {
			return nil // the whole file: parsed whole, as it always was
		}
		var rest *chunk
		for j := k + 1; j < len(cuts); j++ {
			if j < len(cuts)-1 && !slices.Contains(recoveries, cuts[j]) {
				continue
			}
			// A part between recoveries, or after one, is not what a
			// whole parse of the file would give anyway: its root may
			// be an ERROR. Only the rest of a file with no recovery
			// before it is held to the whole parse's root.
			allow := someErrors
			if cuts[j] < len(src) || slices.ContainsFunc(recoveries, func(r int) bool { return r <= cuts[k] }) {
				allow = anyRoot
			}
			rest = parseChunk(ctx, src, cuts[k], cuts[j], rootNumber, &scratch{}, allow)
			if rest == nil {
				return nil
			}
			if !rest.broken {
				k = j
				break
			}
		}
		if rest == nil || rest.broken {
			return nil
		}
		t.hasError = t.hasError || rest.hasError
		t.add(rest)
	}
	t.markErrors()
	t.Src = t.fill(root.End(), nil)
	t.collect()
	return t
}

// add appends a chunk's segments to a tree being assembled.
func (t *Tree) add(c *chunk) {
	for i, g := range c.groups {
		t.starts = append(t.starts, g.start)
		t.Segments = append(t.Segments, c.segments[i])
	}
}

// chunk is a part of a file parsed alone.
type chunk struct {
	broken   bool // not to be used: a syntax error (but in the rest), or not cut at a statement
	hasError bool // the rest's syntax errors (see parseChunk)
	groups   []group
	segments []*Segment
}

// chunkErrors is what a chunk may hold (see parseChunk).
type chunkErrors int

const (
	noErrors   chunkErrors = iota // any syntax error breaks it
	someErrors                    // a rest: syntax errors, under a module root
	anyRoot                       // a rest of a file cut at recoveries: its root may be an ERROR too
)

// parseChunk parses and mirrors src[start:end] under the Root numbered
// root, or returns nil when the parse fails. A rest (start is a
// statement's, end the file's or a recovery's, see parseChunked) may have
// syntax errors, which hasError then says; any other chunk with one is
// broken. With anyRoot it may also not parse as a module: its statements
// are then its root's children, as in a whole parse with such a root (see
// layOut).
func parseChunk(ctx context.Context, src []byte, start, end int, root int32, buf *scratch, allow chunkErrors) *chunk {
	rest := allow != noErrors
	ts, err := parse(ctx, src[start:end])
	if err != nil {
		return nil
	}
	kept := false
	defer func() {
		if !kept {
			freeLater(ts)
		}
	}()
	c := &chunk{hasError: ts.RootNode().HasError()}
	tops := topLevel(ts, start)
	module := ts.RootNode().Type() == "module" || allow == anyRoot
	if !module || c.hasError && !rest || len(tops) == 0 || tops[0].start != start && start > 0 {
		c.broken = true
		return c
	}
	var bases []int
	if c.groups, bases = chunkGroups(tops, src, start, end); c.groups == nil {
		c.broken = true
		return c
	}
	// A large statement alone in its chunk (see aroundLargeStatements)
	// keeps its tree, as it would after an edit (see spliceRegion): the
	// first edit inside it is then parsed incrementally too. Within bounds
	// (keepAtOpen). Not the rest, which may hold an error.
	keep := !rest && len(c.groups) == 1 && end-start >= keepTreeFrom && keptBytes.Load()+int64(end-start) <= keepAtOpen
	for i, g := range c.groups {
		c.segments = append(c.segments, mirrorSegment(g, src, bases[i], root, buf, keep, nil, nil))
	}
	if keep {
		keepTree(c.segments[0], ts)
		kept = true
	}
	if c.hasError && !slices.ContainsFunc(c.segments, func(s *Segment) bool { return s.hasError }) {
		// An error no statement holds (see markErrors): the rest's
		// segments say so, so that an edit near them takes them all in.
		for _, s := range c.segments {
			s.hasError = true
		}
	}
	return c
}

// chunkGroups groups tops, the statements of the chunk src[start:end],
// into segments that span the chunk (see groups), and places them afresh
// (see freshBases); nil when the last would take in the next chunk's first
// statement.
func chunkGroups(tops []top, src []byte, start, end int) (gs []group, bases []int) {
	gs = groups(tops, src)
	gs[0].start, gs[len(gs)-1].end = start, end
	if end < len(src) && padPoint(gs[len(gs)-1], src) < 0 {
		return nil, nil
	}
	return gs, freshBases(gs, src, bytes.Count(src[:start], []byte{'\n'}))
}

// statementStarts lists the lines of src that look like the start of a
// top-level statement: at column 0 (see startsChunk) and outside strings
// and brackets. A line inside a string or brackets may look like a
// statement (a docstring's lines at column 0): the chunk after a cut there
// is all syntax errors, and tree-sitter's error recovery on it took 100
// times the parse of the whole file.
//
// recoveries are those of them where a bracket left open before them
// ends: a definition at column 0 (see definitionAt), which Python never
// reads inside brackets, with the decorators right above it. The text
// before such a line has a syntax error whatever follows, and parseChunked
// parses what follows alone, as an edit that left the bracket open would
// (see reparse): a bracket left open does not take in the rest of the file.
func statementStarts(src []byte) (starts, recoveries []int) {
	var lex lexState // of src[:scanned]
	scanned := 0
	// decorating: the last statement line at column 0 was a decorator, so
	// the next one is the definition it decorates (or another decorator),
	// even when the decorator's arguments ran over several lines and the
	// line before is their closing bracket (see continues).
	decorating := len(src) > 0 && src[0] == '@'
	for off := 0; ; {
		i := bytes.IndexByte(src[off:], '\n')
		if i < 0 || off+i+1 >= len(src) {
			return starts, recoveries
		}
		off += i + 1
		if c := src[off]; c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '#' {
			continue
		}
		lex, scanned = lex.scan(src[scanned:off]), off
		switch {
		case lex.atStatement():
			if !decorating && startsChunk(src, off) {
				starts = append(starts, off)
			}
			decorating = src[off] == '@'
		case lex.quote == 0 && lex.depth > 0 && definitionAt(src[off:]):
			at := decoratorsAbove(src, off)
			if len(starts) > 0 && at <= starts[len(starts)-1] {
				at = off
			}
			starts, recoveries = append(starts, at), append(recoveries, at)
			lex, decorating = lexState{}, false
		}
	}
}

// definitionAt reports whether line starts with `def`, `class` or `async
// def`: a statement that cannot be inside brackets.
func definitionAt(line []byte) bool {
	if keywordAt(line, "async") {
		line = bytes.TrimLeft(line[len("async"):], " \t")
	}
	return keywordAt(line, "def", "class")
}

// decoratorsAbove returns the start of the first of the decorator lines
// at column 0 right above the line at off (blank and comment lines may
// come between), or off when there are none.
func decoratorsAbove(src []byte, off int) int {
	return firstAbove(src, 0, off, '@', isCodeLine)
}

// firstAbove returns the start of the first of the lines starting with
// mark right above the line at off, no further up than from: the lines
// between them and above them up to the first that ends says ends them
// are passed over; off when there are none.
func firstAbove(src []byte, from, off int, mark byte, ends func(line []byte) bool) int {
	at := off
	for line := off; line > from; {
		start := bytes.LastIndexByte(src[:line-1], '\n') + 1
		switch text := src[start:line]; {
		case text[0] == mark:
			at = start
		case ends(text):
			return at
		}
		line = start
	}
	return at
}

// aroundLargeStatements returns where to cut src, whose statements start
// at starts, so that each top-level statement of keepTreeFrom bytes or
// more (a class of thousands of lines, a table) is a chunk of its own,
// with what follows it up to the next statement or to the comments at
// column 0 right above it (each a top-level node of its own: in the
// large statement's chunk they would make it several segments, and its
// tree would not be kept). Like the other cuts, these are lines that look
// like the start of a statement or of its comments; parsing the chunks
// decides whether they were.
func aroundLargeStatements(src []byte, starts []int) []int {
	var cuts []int
	last := 0 // where the statement before starts
	for i := 0; i <= len(starts); i++ {
		at := len(src) // after the last statement: the end
		if i < len(starts) {
			at = starts[i]
		}
		if at-last >= keepTreeFrom {
			cuts = append(cuts, last, commentsAbove(src, last, at))
		}
		last = at
	}
	return cuts
}

// commentsAbove returns the start of the first of the comment lines at
// column 0 right above the line at off (blank lines may come between),
// no further up than from; off when there are none. An indented comment
// ends them: where it goes is the parser's to say.
func commentsAbove(src []byte, from, off int) int {
	return firstAbove(src, from, off, '#', func(line []byte) bool { return len(bytes.TrimSpace(line)) > 0 })
}

// startsChunk reports whether the line at off, which starts at column 0
// with code, can start a chunk: a statement (not a clause such as `else:`
// that continues the one before, not a closing bracket), after a line that
// does not go on into it (see continues): a decorated definition starts at
// its first decorator, the lines after a decorator go on from it.
func startsChunk(src []byte, off int) bool {
	switch src[off] {
	case ')', ']', '}':
		return false
	}
	return !keywordAt(src[off:], "else", "elif", "except", "finally") && !continues(src[:off])
}

// continues reports whether the last line of code in before (past blank
// and comment lines) goes on into the next line: a decorator, a trailing
// backslash, comma or opening bracket.
func continues(before []byte) bool {
	line := bytes.TrimLeft(lastLine(before, isCodeLine), " \t\f")
	if len(line) > 0 && line[0] == '@' {
		return true
	}
	if i := bytes.IndexByte(line, '#'); i >= 0 && !bytes.ContainsAny(line[:i], "'\"") {
		line = bytes.TrimSpace(line[:i])
	}
	return len(line) > 0 && strings.IndexByte(`\,([{`, line[len(line)-1]) >= 0
}

// isCodeLine reports whether line holds code: neither blank nor a
// comment.
func isCodeLine(line []byte) bool {
	code := bytes.TrimLeft(line, " \t\f\r\n")
	return len(code) > 0 && code[0] != '#'
}

// lastLine returns the last line of text that counts, without its line
// break and trailing spaces; nil when none does.
func lastLine(text []byte, counts func(line []byte) bool) []byte {
	for len(text) > 0 {
		end := len(text)
		start := bytes.LastIndexAny(text[:end-1], "\r\n") + 1
		line := bytes.TrimRight(text[start:end], " \t\f\r\n")
		text = text[:start]
		if counts(line) {
			return line
		}
	}
	return nil
}

// keywordAt reports whether line starts with one of keywords as a whole
// word.
func keywordAt(line []byte, keywords ...string) bool {
	for _, kw := range keywords {
		if bytes.HasPrefix(line, []byte(kw)) && (len(line) == len(kw) || !isNameByte(line[len(kw)])) {
			return true
		}
	}
	return false
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// lexState is where a scan of Python source stands: inside a string (and
// which), a comment, or brackets. It only steers where a file is cut:
// whether a cut was safe is still decided by parsing (see parseChunked),
// so what it misreads (a quote nested in an f-string's braces) costs time,
// not correctness.
type lexState struct {
	quote   byte // the string's quote character; 0 outside strings
	triple  bool // the string is triple-quoted
	comment bool
	depth   int // open brackets
}

// atStatement reports whether a line starting here starts a statement: no
// string, comment or bracket is open.
func (l lexState) atStatement() bool { return l.quote == 0 && !l.comment && l.depth == 0 }

// stops returns the bytes that may change state l (see scanTo).
func (l lexState) stops() *[256]bool {
	switch {
	case l.quote == 0 && l.comment:
		return &lineBreakStops
	case l.quote == 0:
		return &codeStops
	case l.quote == '"' && l.triple:
		return &tripleDoubleStops
	case l.quote == '"':
		return &doubleStops
	case l.triple:
		return &tripleSingleStops
	default:
		return &singleStops
	}
}

var (
	codeStops         = stopSet("#'\"([{}])")
	lineBreakStops    = stopSet("\n")
	doubleStops       = stopSet("\\\n\"")
	singleStops       = stopSet("\\\n'")
	tripleDoubleStops = stopSet("\\\"")
	tripleSingleStops = stopSet("\\'")
)

func stopSet(chars string) (set [256]bool) {
	for i := range len(chars) {
		set[chars[i]] = true
	}
	return set
}

// scan returns the state after text, which follows l's.
func (l lexState) scan(text []byte) lexState {
	l, _ = l.scanTo(text, 0, len(text))
	return l
}

// scanTo scans text from byte i, where a scan from its start landed in
// state l, and returns the state where it lands at or past until, and
// where that is: a quote or an escape read ahead moves it on by more than
// one byte. The state at a landing depends on the bytes before it and on
// the two after at most (a triple quote read ahead).
func (l lexState) scanTo(text []byte, i, until int) (lexState, int) {
	for ; i < until; i++ {
		// Past the bytes that cannot change the state (most of them): the
		// open of a large file scans all of it, and a large class again
		// (see classParts).
		stops := l.stops()
		for i < until && !stops[text[i]] {
			i++
		}
		if i == until {
			break
		}
		c := text[i]
		switch {
		case l.quote != 0:
			switch {
			case c == '\\':
				i++ // escapes the next byte, a quote or a line break
			case c == '\n' && !l.triple:
				l.quote = 0 // unterminated: the string ends with its line
			case c == l.quote && !l.triple:
				l.quote = 0
			case c == l.quote && i+2 < len(text) && text[i+1] == c && text[i+2] == c:
				l.quote, l.triple = 0, false
				i += 2
			}
		case l.comment:
			l.comment = c != '\n'
		case c == '#':
			l.comment = true
		case c == '\'' || c == '"':
			l.quote, l.triple = c, i+2 < len(text) && text[i+1] == c && text[i+2] == c
			if l.triple {
				i += 2
			}
		case c == '(' || c == '[' || c == '{':
			l.depth++
		case (c == ')' || c == ']' || c == '}') && l.depth > 0:
			l.depth--
		}
	}
	return l, i
}
