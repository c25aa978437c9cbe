package codeactions

import (
	"fmt"
	"strings"
)

// UnifiedDiff returns a unified diff (3 lines of context) from old to new,
// or "" when they are equal.
func UnifiedDiff(path string, old, new []byte) string {
	if string(old) == string(new) {
		return ""
	}
	a, b := splitLines(string(old)), splitLines(string(new))
	ops := diffLines(a, b)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", path, path)
	const context = 3
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// A hunk: from context lines before this change to context lines
		// after the last change that is within 2*context of the next.
		start := max(0, i-context)
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j
			} else if j-end > 2*context {
				break
			}
		}
		end = min(len(ops), end+context+1)
		oldStart, newStart, oldLen, newLen := ops[start].oldLine, ops[start].newLine, 0, 0
		var body strings.Builder
		for _, op := range ops[start:end] {
			switch op.kind {
			case ' ':
				oldLen++
				newLen++
			case '-':
				oldLen++
			case '+':
				newLen++
			}
			body.WriteByte(op.kind)
			body.WriteString(op.text)
			if !strings.HasSuffix(op.text, "\n") {
				body.WriteString("\n\\ No newline at end of file\n")
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n%s", hunkRange(oldStart, oldLen), hunkRange(newStart, newLen), body.String())
		i = end
	}
	return out.String()
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// splitLines splits after each "\n", keeping terminators (and "\r").
func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

type diffOp struct {
	kind             byte // ' ', '-', '+'
	text             string
	oldLine, newLine int // 0-based line numbers before this op
}

// diffLines computes a line diff: the common prefix and suffix are
// trimmed, and the middle (small for fixes) is aligned by LCS.
func diffLines(a, b []string) []diffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	lcs := make([][]int, len(ma)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(mb)+1)
	}
	for i := len(ma) - 1; i >= 0; i-- {
		for j := len(mb) - 1; j >= 0; j-- {
			if ma[i] == mb[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []diffOp
	oi, ni := 0, 0
	emit := func(kind byte, text string) {
		ops = append(ops, diffOp{kind, text, oi, ni})
		switch kind {
		case ' ':
			oi++
			ni++
		case '-':
			oi++
		case '+':
			ni++
		}
	}
	for _, l := range a[:pre] {
		emit(' ', l)
	}
	i, j := 0, 0
	for i < len(ma) || j < len(mb) {
		switch {
		case i < len(ma) && j < len(mb) && ma[i] == mb[j]:
			emit(' ', ma[i])
			i, j = i+1, j+1
		case i < len(ma) && (j == len(mb) || lcs[i+1][j] >= lcs[i][j+1]):
			emit('-', ma[i])
			i++
		default:
			emit('+', mb[j])
			j++
		}
	}
	for _, l := range a[len(a)-suf:] {
		emit(' ', l)
	}
	return ops
}
