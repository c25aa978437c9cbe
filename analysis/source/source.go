// Package source maps byte offsets of a source text to lines and columns
// in UTF-8, UTF-16 or code points, and back.
package source

import (
	"bytes"
	"fmt"
	"slices"
	"unicode/utf8"
)

// Encoding is the unit in which a column counts characters.
type Encoding int

const (
	// UTF16 counts UTF-16 code units: the LSP default; characters outside
	// the Basic Multilingual Plane (most emoji) count 2.
	UTF16 Encoding = iota
	// UTF8 counts bytes.
	UTF8
	// CodePoints counts Unicode code points, as terminals show columns.
	CodePoints
)

func (e Encoding) String() string {
	switch e {
	case UTF8:
		return "utf-8"
	case CodePoints:
		return "utf-32"
	}
	return "utf-16"
}

// Position is a zero-based line and a zero-based column in some Encoding.
type Position struct {
	Line, Column int
}

// Mapper converts byte offsets in a source to line/column positions and back.
// It is the one place where lines and columns are computed: everything else
// in vramlint works with byte offsets into the UTF-8 source.
//
// Lines end at "\n", "\r\n" or a lone "\r", as the LSP specification says.
type Mapper struct {
	src        []byte
	lineStarts []int
}

// NewMapper indexes the line starts of src.
func NewMapper(src []byte) *Mapper {
	starts := make([]int, 1, 1+len(src)/32)
	return &Mapper{src: src, lineStarts: appendLineStarts(starts, src, 0, len(src))}
}

// appendLineStarts appends the line starts that the line breaks beginning
// in src[from:to] make: after "\n", "\r\n" (which may end at to+1) and a
// lone "\r".
func appendLineStarts(starts []int, src []byte, from, to int) []int {
	if bytes.IndexByte(src[from:to], '\r') < 0 {
		// Only "\n": let IndexByte find them, many bytes at a time (a
		// byte at a time took a millisecond for a 9,000-line class).
		for off := from; ; {
			i := bytes.IndexByte(src[off:to], '\n')
			if i < 0 {
				return starts
			}
			off += i + 1
			starts = append(starts, off)
		}
	}
	for i := from; i < to; i++ {
		switch src[i] {
		case '\n':
			starts = append(starts, i+1)
		case '\r':
			if i+1 < len(src) && src[i+1] == '\n' {
				i++
			}
			starts = append(starts, i+1)
		}
	}
	return starts
}

// NewMapperFrom indexes the line starts of src like NewMapper, taking
// those inside the byte ranges of reuse (sorted, disjoint, each starting a
// line and holding the same bytes at the same offsets in prev's text as in
// src) from prev rather than looking for them again.
func NewMapperFrom(prev *Mapper, src []byte, reuse [][2]int) *Mapper {
	starts := make([]int, 1, len(prev.lineStarts)+8)
	pos := 0
	for _, r := range reuse {
		starts = appendLineStarts(starts, src, pos, r[0])
		// prev's starts in (r[0], r[1]]
		i, _ := slices.BinarySearch(prev.lineStarts, r[0]+1)
		for ; i < len(prev.lineStarts) && prev.lineStarts[i] <= r[1]; i++ {
			starts = append(starts, prev.lineStarts[i])
		}
		pos = r[1]
	}
	return &Mapper{src: src, lineStarts: appendLineStarts(starts, src, pos, len(src))}
}

// Edited indexes src, which is m's text with the bytes [start, oldEnd)
// replaced by src[start:newEnd]: the line starts before the change are
// m's, those after it m's shifted, and only the changed bytes (and the
// one before them, for a "\r" that a "\n" may join) are looked at.
func (m *Mapper) Edited(src []byte, start, oldEnd, newEnd int) *Mapper {
	delta := newEnd - oldEnd
	keep, _ := slices.BinarySearch(m.lineStarts, start) // the starts before start
	starts := make([]int, keep, len(m.lineStarts)+8)
	copy(starts, m.lineStarts[:keep])
	if keep == 0 {
		starts = append(starts, 0)
	}
	// The starts up to newEnd+1 follow from the changed bytes (and the one
	// before them); one past that, after a "\r\n" there, is m's shifted.
	limit := newEnd + 1
	starts = appendLineStarts(starts, src, max(start-1, 0), min(limit, len(src)))
	for len(starts) > 0 && starts[len(starts)-1] > limit {
		starts = starts[:len(starts)-1]
	}
	from, _ := slices.BinarySearch(m.lineStarts, oldEnd+2) // the starts after oldEnd+1
	for _, q := range m.lineStarts[from:] {
		starts = append(starts, q+delta)
	}
	return &Mapper{src: src, lineStarts: starts}
}

// LineCount is the number of lines (a trailing newline opens an empty last line).
func (m *Mapper) LineCount() int { return len(m.lineStarts) }

// LineStart is the byte offset where line begins.
func (m *Mapper) LineStart(line int) int { return m.lineStarts[line] }

// LineEnd is the byte offset of line's terminator (or the end of the source).
func (m *Mapper) LineEnd(line int) int {
	if line+1 >= len(m.lineStarts) {
		return len(m.src)
	}
	end := m.lineStarts[line+1] - 1
	if m.src[end] == '\n' && end > m.lineStarts[line] && m.src[end-1] == '\r' {
		end--
	}
	return end
}

// Line returns the text of line without its terminator.
func (m *Mapper) Line(line int) []byte { return m.src[m.LineStart(line):m.LineEnd(line)] }

// LineOf returns the line holding byte offset off.
func (m *Mapper) LineOf(off int) int {
	// The first line starting after off, less one: slices.BinarySearch
	// finds the first start at or after off+1 without sort.Search's call
	// per step (every diagnostic's every offset is looked up).
	i, _ := slices.BinarySearch(m.lineStarts, min(off, len(m.src))+1)
	return i - 1
}

// Position converts a byte offset into a position. Offsets outside the
// source are clamped; an offset inside a multi-byte character or a line
// terminator maps to the start of that character or terminator.
func (m *Mapper) Position(off int, enc Encoding) Position {
	off = max(0, min(off, len(m.src)))
	line := m.LineOf(off)
	off = min(off, m.LineEnd(line))
	start := m.lineStarts[line]
	if off < len(m.src) && !utf8.RuneStart(m.src[off]) {
		// Inside a character: back to its start, as the line decodes.
		at := start
		for at < off {
			_, size := utf8.DecodeRune(m.src[at : off+min(utf8.UTFMax, len(m.src)-off)])
			if at+size > off {
				break
			}
			at += size
		}
		off = at
	}
	return Position{Line: line, Column: columnWidth(m.src[start:off], enc)}
}

// Offset converts a position into a byte offset. A line past the end is an
// error; a column past the end of its line clamps to the line's end, as the
// LSP specification asks.
func (m *Mapper) Offset(p Position, enc Encoding) (int, error) {
	if p.Line < 0 || p.Column < 0 {
		return 0, fmt.Errorf("position %d:%d is negative", p.Line, p.Column)
	}
	if p.Line >= len(m.lineStarts) {
		return len(m.src), fmt.Errorf("line %d is past the end of the document (%d lines)", p.Line, len(m.lineStarts))
	}
	start, end := m.LineStart(p.Line), m.LineEnd(p.Line)
	col := 0
	for off := start; off < end; {
		if col >= p.Column {
			return off, nil
		}
		r, size := utf8.DecodeRune(m.src[off:end])
		w := runeWidth(r, size, enc)
		if col+w > p.Column {
			// Inside a surrogate pair: the character starts here.
			return off, nil
		}
		col += w
		off += size
	}
	return end, nil
}

func columnWidth(b []byte, enc Encoding) int {
	if enc == UTF8 {
		return len(b)
	}
	n := 0
	for len(b) > 0 {
		if b[0] < utf8.RuneSelf { // one unit in every encoding: no decoding
			n++
			b = b[1:]
			continue
		}
		r, size := utf8.DecodeRune(b)
		n += runeWidth(r, size, enc)
		b = b[size:]
	}
	return n
}

// runeWidth is the number of units a decoded character takes. An invalid
// byte counts as one unit in every encoding.
func runeWidth(r rune, size int, enc Encoding) int {
	switch enc {
	case UTF8:
		return size
	case UTF16:
		if r >= 0x10000 {
			return 2
		}
	}
	return 1
}
