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
// level"), and so does an incremental reparse now and then.
func ParsesCleanly(src []byte) bool {
	tree, err := ParseTree(nil, src)
	if err != nil {
		return false
	}
	defer tree.Close()
	root := tree.RootNode()
	return !root.HasError() && alignedBlocks(root, src)
}

// alignedBlocks checks the alignment ParsesCleanly describes below n.
func alignedBlocks(n *sitter.Node, src []byte) bool {
	column := -1 // of the block's statements that start a line
	for i := 0; i < int(n.NamedChildCount()); i++ {
		c := n.NamedChild(i)
		if c.Type() == "comment" || !startsLine(c, src) {
			if !alignedBlocks(c, src) {
				return false
			}
			continue
		}
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
		if !alignedBlocks(c, src) {
			return false
		}
	}
	return true
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
