package analysis

import (
	"bytes"
	"sort"

	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/semantic"
)

// Verifying a fix statement by statement. A fix's edits change a line or
// two of a top-level statement that may run to hundreds of lines (a
// Trainer class, a training function), and parsing that whole statement
// again for every fix was most of fix verification: on a generated file
// of 50,000 lines with 556 findings, a fifth of the file was parsed again
// at every open. Inside a block, a statement's lines make Python of their
// own once the blocks around them are there: "if 1:" lines at the
// columns of the statements that hold it give the parser the indentation
// it has at that statement in the file. When an edited statement parses
// so without a syntax error, so does the file: the lines before and after
// it are unchanged, and the edited lines are still whole statements
// (brackets and strings closed, no line continued into the next, none to
// the left of the statement's column) in the same blocks. So each edit is
// verified on the innermost statement in a block that holds it, and
// nothing else is parsed. The reverse does not hold (text that ends a
// block and starts the next one reads differently after "if 1:" than
// after the statement the file has there), so a statement that does not
// parse after its edits leaves the verdict to the region's parse
// (verifyRegion), which finds whether the fix breaks the file. A fix that
// breaks nothing, the rule, costs the parse of the lines it edits.

// editedStatement is a statement inside a block, and the edits of a fix
// inside it.
type editedStatement struct {
	node *pyast.Node
	// The statement's lines, [lineStart, linesEnd) of the text, line break
	// included, are what is parsed, after blocks: an "if 1:" line at the
	// column of each statement that holds it, outermost first (the
	// indentation the parser has at the statement, see alone).
	lineStart, linesEnd int
	blocks              []byte
	edits               []Edit // at the text's offsets
}

// verifyAlone verifies edits (at f.Src's offsets, in the top-level
// statements of one region) on the statements that hold them, each alone.
// It reports true when every statement parses after its edits; false
// leaves the verdict to the region's parse.
func verifyAlone(f *semantic.File, edits []Edit) bool {
	statements, ok := editedStatements(f, edits)
	if !ok {
		return false
	}
	for _, s := range statements {
		before := f.Src[s.lineStart:s.linesEnd]
		local := make([]Edit, len(s.edits))
		for i, e := range s.edits {
			local[i] = Edit{e.Start - s.lineStart, e.End - s.lineStart, e.NewText}
		}
		after, err := ApplyEdits(before, local)
		if err != nil {
			return false
		}
		// The line after the statement must still start a line: text
		// written at its start, or a line break taken away, would join it.
		if bytes.HasSuffix(before, []byte{'\n'}) && !bytes.HasSuffix(after, []byte{'\n'}) {
			return false
		}
		if !indentedBy(after, f.Src[s.lineStart:s.node.Start()]) || !keepsItsLines(after) {
			return false
		}
		if !parsesAlone(append(s.blocks, after...)) {
			return false
		}
	}
	return true
}

// aloneVerdicts caches parsesAlone by the text's key: the statements of a
// buffer's fixes are verified again on every version that does not keep
// their verdict (see keptVerdict), and the same statements recur across
// versions and files.
var aloneVerdicts = newVerdictCache[bool]()

// parsesAlone reports whether text, a statement's lines after the blocks
// around it (see alone), parses without a syntax error and indented as
// Python requires (pyast.ParsesCleanly).
func parsesAlone(text []byte) bool {
	return aloneVerdicts.get(verdictKeyOf(text, nil), func() bool { return pyast.ParsesCleanly(text) })
}

// editedStatements finds, for each edit, the innermost statement in a
// block that holds it and can be taken out alone (see alone), and groups
// the edits by statement (an edit in a statement inside another edited
// one goes with the outer). ok is false when an edit lies in no such
// statement: at the top level, or in a statement with a syntax error.
func editedStatements(f *semantic.File, edits []Edit) (statements []editedStatement, ok bool) {
	for _, e := range edits {
		s, ok := innermostAlone(f, e)
		if !ok {
			return nil, false
		}
		statements = append(statements, s)
	}
	// Statements nest or lie apart: sorted by start, outer first, each
	// one inside the last kept goes into it.
	sort.SliceStable(statements, func(i, j int) bool {
		a, b := statements[i].node, statements[j].node
		return a.Start() < b.Start() || a.Start() == b.Start() && a.End() > b.End()
	})
	merged := statements[:0]
	for _, s := range statements {
		if k := len(merged) - 1; k >= 0 && s.linesEnd <= merged[k].linesEnd {
			merged[k].edits = append(merged[k].edits, s.edits...)
			continue
		}
		merged = append(merged, s)
	}
	return merged, true
}

// innermostAlone returns the innermost statement in a block that holds
// the edit e (starts after its first character, ends in its lines: an
// edit that takes out a line ends at the next one's start) and can be
// taken out alone, with e; ok is false when there is none.
func innermostAlone(f *semantic.File, e Edit) (s editedStatement, ok bool) {
	stmts := f.Tree.Statements
	i := sort.Search(len(stmts), func(i int) bool { return stmts[i].Start() >= e.Start }) - 1
	if i < 0 || e.End > linesEnd(f.Src, stmts[i]) {
		return s, false
	}
	// A child that ends at or before the last line break before e's last
	// character neither holds e's end nor has it in its lines: skipped
	// with one comparison, so that finding the statement of an edit in a
	// block of thousands does not look for each one's line end.
	before := bytes.LastIndexByte(f.Src[:max(e.End-1, 0)], '\n')
	// The statements that hold e, outermost first.
	var holding []*pyast.Node
	for n := stmts[i]; n != nil; {
		var in *pyast.Node
		for c := n.FirstChild(); c != nil && c.Start() < e.Start; c = c.NextSibling() {
			if c.End() <= before {
				continue
			}
			if e.End <= c.End() || inBlock(c) && e.End <= linesEnd(f.Src, c) {
				in = c
				break
			}
		}
		if in != nil && inBlock(in) {
			holding = append(holding, in)
		}
		n = in
	}
	for k := len(holding) - 1; k >= 0; k-- {
		if lineStart, blocks, ok := alone(f.Src, holding[k]); ok {
			return editedStatement{node: holding[k], lineStart: lineStart, linesEnd: linesEnd(f.Src, holding[k]), blocks: blocks, edits: []Edit{e}}, true
		}
	}
	return s, false
}

// linesEnd is the end of n's last line in src, past its line break.
func linesEnd(src []byte, n *pyast.Node) int {
	if eol := bytes.IndexByte(src[n.End():], '\n'); eol >= 0 {
		return n.End() + eol + 1
	}
	return len(src)
}

// inBlock reports whether n is a statement of a block, which Python reads
// alone in blocks like its own. A case clause, though in a block, is not a
// statement; nor is a definition under its decorators, which must stay a
// definition (`@property` followed by anything else is an error, and
// alone there is no decorator to say so).
func inBlock(n *pyast.Node) bool {
	return n.Parent().Is("block") && !n.Is("case_clause", "comment")
}

// alone reports whether n's lines can be parsed without the rest of src:
// only indentation before it on its first line, every line after starting
// with that indentation (or blank), every statement holding it starting a
// line, no syntax error in it, and its lines those the parser sees
// (keepsItsLines). It returns the start of n's first line, and the blocks
// to parse its lines after: an "if 1:" line at the column of each
// statement that holds it, outermost first.
func alone(src []byte, n *pyast.Node) (lineStart int, blocks []byte, ok bool) {
	lineStart = bytes.LastIndexByte(src[:n.Start()], '\n') + 1
	indent := src[lineStart:n.Start()]
	end := linesEnd(src, n)
	if !isIndentation(indent) || !indentedBy(src[lineStart:end], indent) || !keepsItsLines(src[lineStart:end]) {
		return 0, nil, false
	}
	var columns [][]byte // of the statements that hold n, innermost first
	for p := n.Parent(); p != nil; p = p.Parent() {
		// A top-level statement's parent is the root, a module or, in a file
		// whose error took in the rest of it, an ERROR.
		if inBlock(p) || p.Parent() != nil && p.Parent().Parent() == nil {
			column := src[bytes.LastIndexByte(src[:p.Start()], '\n')+1 : p.Start()]
			if !isIndentation(column) {
				return 0, nil, false
			}
			columns = append(columns, column)
		}
	}
	clean := true
	pyast.Walk(n, func(m *pyast.Node) bool {
		if m.Is("ERROR", "MISSING") {
			clean = false
		}
		return clean
	})
	if !clean {
		return 0, nil, false
	}
	for i := len(columns) - 1; i >= 0; i-- {
		blocks = append(append(blocks, columns[i]...), "if 1:\n"...)
	}
	return lineStart, blocks, true
}

// isIndentation reports whether b is nothing but spaces and tabs (and form
// feeds, which the parser skips).
func isIndentation(b []byte) bool { return len(bytes.Trim(b, " \t\f")) == 0 }

// keepsItsLines reports whether text, parsed alone, has the lines it has
// in the file: it holds no backslash that continues a line (at its end, it
// would join the next line in the file but nothing alone; inside, the
// joined lines' indentation is measured in ways this check does not
// follow) and no lone "\r", a line break to the parser that indentedBy
// does not see.
func keepsItsLines(text []byte) bool {
	if bytes.HasSuffix(bytes.TrimRight(text, " \t\f"), []byte{'\\'}) {
		return false
	}
	for i, b := range text {
		switch {
		case b == '\r' && (i+1 == len(text) || text[i+1] != '\n'):
			return false
		case b == '\\' && i+1 < len(text) && (text[i+1] == '\n' || text[i+1] == '\r'):
			return false
		}
	}
	return true
}

// indentedBy reports whether every line of text begins with indent, and
// the first with nothing more (the statement starts at its column); a
// blank line may have less.
func indentedBy(text, indent []byte) bool {
	for first := true; len(text) > 0; first = false {
		line := text
		if eol := bytes.IndexByte(text, '\n'); eol >= 0 {
			line = text[:eol+1]
		}
		text = text[len(line):]
		switch {
		case bytes.HasPrefix(line, indent):
			if rest := line[len(indent):]; first && len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\f') {
				return false
			}
		case first || !isIndentation(bytes.TrimRight(line, "\r\n")):
			return false
		}
	}
	return true
}
