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

// splitLines splits after each line break ("\n", "\r\n" or a lone "\r"),
// keeping terminators.
func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			out = append(out, s)
			break
		}
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
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

// diffLines computes a shortest line diff with Myers' algorithm in linear
// space: the middle snake of the two texts splits them in two halves,
// diffed the same way. Time is O((N+M)·D) for D changed lines, memory
// O(N+M); a full LCS table took 1.2 GB for a 12,000-line file whose first
// and last lines changed.
func diffLines(a, b []string) []diffOp {
	d := &differ{a: a, b: b}
	d.compare(0, len(a), 0, len(b))
	return d.ops
}

type differ struct {
	a, b   []string
	ops    []diffOp
	oi, ni int // the lines of a and b emitted so far
}

func (d *differ) emit(kind byte, text string) {
	d.ops = append(d.ops, diffOp{kind, text, d.oi, d.ni})
	if kind != '+' {
		d.oi++
	}
	if kind != '-' {
		d.ni++
	}
}

// compare emits the ops that turn a[aLo:aHi] into b[bLo:bHi].
func (d *differ) compare(aLo, aHi, bLo, bHi int) {
	for aLo < aHi && bLo < bHi && d.a[aLo] == d.b[bLo] {
		d.emit(' ', d.a[aLo])
		aLo, bLo = aLo+1, bLo+1
	}
	suffix := 0
	for aLo < aHi-suffix && bLo < bHi-suffix && d.a[aHi-1-suffix] == d.b[bHi-1-suffix] {
		suffix++
	}
	aHi, bHi = aHi-suffix, bHi-suffix
	x, y := -1, -1
	if aLo < aHi && bLo < bHi {
		x, y = middleSnake(d.a[aLo:aHi], d.b[bLo:bHi])
	}
	if x > 0 || y > 0 {
		d.compare(aLo, aLo+x, bLo, bLo+y)
		d.compare(aLo+x, aHi, bLo+y, bHi)
	} else {
		// One side is empty, or the two have no line in common.
		for _, l := range d.a[aLo:aHi] {
			d.emit('-', l)
		}
		for _, l := range d.b[bLo:bHi] {
			d.emit('+', l)
		}
	}
	for i := range suffix {
		d.emit(' ', d.a[aHi+i])
	}
}

// furthest extends diagonal k of v (a forward or a backward search, whose
// equality of lines same tells) to the furthest point D differences reach,
// records it, and returns it.
func furthest(v []int, offset, k, D, n, m int, same func(x, y int) bool) (int, int) {
	i := offset + k
	x := v[i-1] + 1 // a step right from diagonal k-1
	if k == -D || k != D && v[i-1] < v[i+1] {
		x = v[i+1] // a step down from diagonal k+1
	}
	y := x - k
	for x < n && y < m && same(x, y) {
		x, y = x+1, y+1
	}
	v[i] = x
	return x, y
}

// middleSnake returns a point (x, y) on a shortest edit path from a to b
// strictly inside it, found by searching from both ends until the paths
// meet; (-1, -1) when a and b have nothing in common. a and b differ in
// their first and last lines.
func middleSnake(a, b []string) (int, int) {
	n, m := len(a), len(b)
	maxD := (n + m + 1) / 2
	offset := maxD
	forward, backward := make([]int, 2*maxD+2), make([]int, 2*maxD+2)
	for i := range forward {
		forward[i], backward[i] = -1, -1
	}
	forward[offset+1], backward[offset+1] = 0, 0
	delta := n - m
	odd := delta%2 != 0
	// Diagonals that ran off the edges are not extended again.
	fStart, fEnd, bStart, bEnd := 0, 0, 0, 0
	for D := 0; D < maxD; D++ {
		for k := -D + fStart; k <= D-fEnd; k += 2 {
			x, y := furthest(forward, offset, k, D, n, m, func(x, y int) bool { return a[x] == b[y] })
			switch {
			case x > n:
				fEnd += 2
			case y > m:
				fStart += 2
			case odd:
				if j := offset + delta - k; j >= 0 && j < len(backward) && backward[j] != -1 && x >= n-backward[j] {
					return x, y
				}
			}
		}
		for k := -D + bStart; k <= D-bEnd; k += 2 {
			x, y := furthest(backward, offset, k, D, n, m, func(x, y int) bool { return a[n-x-1] == b[m-y-1] })
			switch {
			case x > n:
				bEnd += 2
			case y > m:
				bStart += 2
			case !odd:
				if j := offset + delta - k; j >= 0 && j < len(forward) && forward[j] != -1 {
					fx := forward[j]
					fy := offset + fx - j
					if fx >= n-x {
						return fx, fy
					}
				}
			}
		}
	}
	return -1, -1
}
