package pyast

import (
	sitter "github.com/smacker/go-tree-sitter"
)

// ParsesCleanly reports whether src parses without a syntax error and with
// its blocks indented as Python requires, which tree-sitter does not check:
// the statements of a block that start a line start at one column, and an
// else, elif, except or finally clause that starts a line at its
// statement's. Tree-sitter takes `else:` two columns left of the block
// it ends, between two levels, as the else of the statement at the outer
// one; Python rejects it ("unindent does not match any outer indentation
// level"), and so does an incremental reparse now and then. Nor may a
// keyword stand for a name: tree-sitter reads a second `else:` after a
// for loop's else clause, its body on the next line, as an annotated
// assignment to a variable named else.
func ParsesCleanly(src []byte) bool {
	tree, err := ParseTree(nil, src)
	if err != nil {
		return false
	}
	defer tree.Close()
	root := tree.RootNode()
	return !root.HasError() && alignedBlocks(root, src, nil)
}

// BlocksAligned reports whether src's blocks are aligned as ParsesCleanly
// requires, syntax errors or not.
func BlocksAligned(src []byte) bool {
	tree, err := ParseTree(nil, src)
	if err != nil {
		return false
	}
	defer tree.Close()
	return alignedBlocks(tree.RootNode(), src, nil)
}

// alignedBlocks checks the alignment ParsesCleanly describes below n;
// with spans, only in the blocks that hold one of them (byte ranges, ends
// included): the rest of a region a fix edits is as it was.
func alignedBlocks(n *sitter.Node, src []byte, spans [][2]int) bool {
	column := -1 // of the block's statements that start a line
	for i := 0; i < int(n.NamedChildCount()); i++ {
		c := n.NamedChild(i)
		if c.Type() == "identifier" && hardKeywords[string(src[c.StartByte():c.EndByte()])] {
			return false
		}
		if c.Type() != "comment" && startsLine(c, src) {
			switch col := int(c.StartPoint().Column); {
			case n.Type() == "block" || n.Type() == "module":
				if column >= 0 && col != column {
					return false
				}
				column = col
			case isClause(c.Type()):
				if col != int(n.StartPoint().Column) || !startsLine(n, src) {
					return false
				}
			}
		}
		if touches(c, spans) && !alignedBlocks(c, src, spans) {
			return false
		}
	}
	return true
}

// hardKeywords are Python's reserved words, never names (the soft ones,
// match, case, type and _, are names outside their statements).
var hardKeywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true, "async": true,
	"await": true, "break": true, "class": true, "continue": true, "def": true, "del": true, "elif": true,
	"else": true, "except": true, "finally": true, "for": true, "from": true, "global": true, "if": true,
	"import": true, "in": true, "is": true, "lambda": true, "nonlocal": true, "not": true, "or": true,
	"pass": true, "raise": true, "return": true, "try": true, "while": true, "with": true, "yield": true,
}

// touches reports whether n's bytes meet one of spans; with none, every
// node does.
func touches(n *sitter.Node, spans [][2]int) bool {
	if spans == nil {
		return true
	}
	start, end := int(n.StartByte()), int(n.EndByte())
	for _, s := range spans {
		if start <= s[1] && s[0] <= end {
			return true
		}
	}
	return false
}

// isClause reports whether kind is a clause of a compound statement that
// begins with a keyword at the statement's column.
func isClause(kind string) bool {
	switch kind {
	case "elif_clause", "else_clause", "except_clause", "except_group_clause", "finally_clause":
		return true
	}
	return false
}

// startsLine reports whether only spaces and tabs come before n on its
// line.
func startsLine(n *sitter.Node, src []byte) bool {
	for i := int(n.StartByte()) - 1; i >= 0 && src[i] != '\n' && src[i] != '\r'; i-- {
		if src[i] != ' ' && src[i] != '\t' && src[i] != '\f' {
			return false
		}
	}
	return true
}
