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
//
// The line starts are kept in blocks of a few hundred, which the mappers
// of a buffer's versions share: a version changed in one place (Edited,
// NewMapperFrom) copies the block it changed and the list of blocks,
// rather than every line start (at 50,000 lines, 400 KB for each
// keystroke, twice: the source's index and the laid-out text's).
type Mapper struct {
	src    []byte
	blocks []lineBlock
	// firstLines and firstStarts are each block's first line and where
	// it starts, side by side for the searches of every lookup.
	firstLines, firstStarts []int
	lines                   int
}

// lineBlock is a run of consecutive line starts: line first+i starts at
// starts[i]+shift. starts is never modified once the block is made, so
// that mappers can share it; a block that moves (text inserted or deleted
// before it) gets a new shift.
type lineBlock struct {
	first, shift int
	starts       []int
}

func (b lineBlock) start(i int) int { return b.starts[i] + b.shift }

// lineBlockSize is how many line starts a block takes before it is full;
// minLineBlock is the fewest that are made a block of their own before a
// shared one (see indexBuilder.share): fewer join the shared block's
// starts instead, so that edits do not break the index into tiny blocks.
// Variables for tests, which make them small.
var lineBlockSize, minLineBlock = 256, 64

// NewMapper indexes the line starts of src.
func NewMapper(src []byte) *Mapper {
	b := newIndexBuilder(src, 1+len(src)/(32*lineBlockSize))
	b.add(0)
	b.scan(0, len(src), len(src))
	return b.mapper()
}

// indexBuilder appends line starts, in order, to a new Mapper's blocks:
// one at a time (add, scan) or a shared block at once (share).
type indexBuilder struct {
	src     []byte
	blocks  []lineBlock
	pending []int // the starts of the block being filled
	lines   int
}

func newIndexBuilder(src []byte, blocks int) *indexBuilder {
	return &indexBuilder{src: src, blocks: make([]lineBlock, 0, blocks)}
}

// add appends the line start off.
func (b *indexBuilder) add(off int) {
	if b.pending == nil {
		b.pending = make([]int, 0, lineBlockSize)
	}
	b.pending = append(b.pending, off)
	b.lines++
	if len(b.pending) >= lineBlockSize {
		b.flush()
	}
}

// flush makes the pending starts a block, or several of about the same
// size when they are more than a block holds.
func (b *indexBuilder) flush() {
	n := len(b.pending)
	if n == 0 {
		return
	}
	parts := (n + lineBlockSize - 1) / lineBlockSize
	first := b.lines - n
	for p := range parts {
		lo, hi := n*p/parts, n*(p+1)/parts
		b.blocks = append(b.blocks, lineBlock{first: first + lo, starts: b.pending[lo:hi:hi]})
	}
	b.pending = nil
}

// share appends the starts of blk from its i-th to its j-th (exclusive),
// shifted by delta: blk itself when that is the whole block and no block
// shorter than minLineBlock would be left before it; otherwise copied.
// A copy joins the pending starts whole (flush splits them if they are
// then more than a block), so that the blocks after a change keep their
// bounds and are shared, rather than each copied to fill the one before
// it.
func (b *indexBuilder) share(blk lineBlock, i, j, delta int) {
	if i == 0 && j == len(blk.starts) && (len(b.pending) == 0 || len(b.pending) >= minLineBlock) {
		b.flush()
		b.blocks = append(b.blocks, lineBlock{first: b.lines, shift: blk.shift + delta, starts: blk.starts})
		b.lines += j
		return
	}
	if b.pending == nil {
		b.pending = make([]int, 0, max(lineBlockSize, j-i))
	}
	for k := i; k < j; k++ {
		b.pending = append(b.pending, blk.start(k)+delta)
	}
	b.lines += j - i
	if len(b.pending) >= lineBlockSize {
		b.flush()
	}
}

// shareRange appends m's line starts from its i-th to its j-th
// (exclusive), shifted by delta.
func (b *indexBuilder) shareRange(m *Mapper, i, j, delta int) {
	for i < j {
		blk := m.blocks[m.blockOfLine(i)]
		to := min(j, blk.first+len(blk.starts))
		b.share(blk, i-blk.first, to-blk.first, delta)
		i = to
	}
}

// scan appends the line starts up to most that the line breaks beginning
// in src[from:to] make: after "\n", "\r\n" (which may end at to+1) and a
// lone "\r".
func (b *indexBuilder) scan(from, to, most int) {
	src := b.src
	if bytes.IndexByte(src[from:to], '\r') < 0 {
		// Only "\n": let IndexByte find them, many bytes at a time (a
		// byte at a time took a millisecond for a 9,000-line class).
		for off := from; ; {
			i := bytes.IndexByte(src[off:to], '\n')
			if i < 0 {
				return
			}
			off += i + 1
			if off > most {
				return
			}
			b.add(off)
		}
	}
	for i := from; i < to; i++ {
		switch src[i] {
		case '\n':
			if i+1 > most {
				return
			}
			b.add(i + 1)
		case '\r':
			if i+1 < len(src) && src[i+1] == '\n' {
				i++
			}
			if i+1 > most {
				return
			}
			b.add(i + 1)
		}
	}
}

func (b *indexBuilder) mapper() *Mapper {
	b.flush()
	m := &Mapper{src: b.src, blocks: b.blocks, lines: b.lines,
		firstLines: make([]int, len(b.blocks)), firstStarts: make([]int, len(b.blocks))}
	for k, blk := range b.blocks {
		m.firstLines[k], m.firstStarts[k] = blk.first, blk.start(0)
	}
	return m
}

// Reuse is a range of a text whose line starts an index may take from
// the index of an earlier text (see NewMapperFrom): the starts in (From,
// To] are those of the earlier text in (From-Shift, To-Shift], moved by
// Shift.
type Reuse struct{ From, To, Shift int }

// NewMapperFrom indexes the line starts of src like NewMapper, taking
// those of each range of reuse from prev rather than looking for them
// again. The ranges are sorted and disjoint, and the bytes [From, To) of
// each are those of prev's text Shift bytes earlier; they may start or
// end anywhere.
func NewMapperFrom(prev *Mapper, src []byte, reuse []Reuse) *Mapper {
	b := newIndexBuilder(src, len(prev.blocks)+8)
	b.add(0)
	pos := 0
	for _, r := range reuse {
		from, to := r.From, r.To
		// A line start depends on the byte before it and, after a "\r", on
		// its own: a "\r\n" across the range's start is the scan's before
		// it, a start after a "\r" that ends the range the scan's after it.
		if from > 0 && from < len(src) && src[from-1] == '\r' && src[from] == '\n' {
			from++
		}
		if to > 0 && src[to-1] == '\r' {
			to--
		}
		if from >= to {
			continue
		}
		b.scan(pos, from, len(src))
		b.shareRange(prev, prev.countStartsAtOrBefore(from-r.Shift), prev.countStartsAtOrBefore(to-r.Shift), r.Shift)
		pos = to
	}
	b.scan(pos, len(src), len(src))
	return b.mapper()
}

// Edited indexes src, which is m's text with the bytes [start, oldEnd)
// replaced by src[start:newEnd]: the line starts before the change are
// m's, those after it m's shifted, and only the changed bytes (and the
// one before them, for a "\r" that a "\n" may join) are looked at.
func (m *Mapper) Edited(src []byte, start, oldEnd, newEnd int) *Mapper {
	b := newIndexBuilder(src, len(m.blocks)+2)
	// The starts before start; line 0's is 0 whatever the change.
	keep := max(m.countStartsAtOrBefore(start-1), 1)
	b.shareRange(m, 0, keep, 0)
	// The starts up to newEnd+1 follow from the changed bytes (and the one
	// before them); one past that, after a "\r\n" there, is m's shifted.
	limit := newEnd + 1
	b.scan(max(start-1, 0), min(limit, len(src)), limit)
	from := m.countStartsAtOrBefore(oldEnd + 1) // the starts after oldEnd+1
	b.shareRange(m, from, m.lines, newEnd-oldEnd)
	return b.mapper()
}

// locate finds the last line start at or before off: the i-th of block k;
// k is -1 when off is before the first.
func (m *Mapper) locate(off int) (k, i int) {
	k, found := slices.BinarySearch(m.firstStarts, off)
	if found {
		return k, 0
	}
	if k--; k < 0 {
		return -1, 0
	}
	blk := m.blocks[k]
	i, found = slices.BinarySearch(blk.starts, off-blk.shift)
	if !found {
		i--
	}
	return k, i
}

// countStartsAtOrBefore is how many line starts are at or before off.
func (m *Mapper) countStartsAtOrBefore(off int) int {
	k, i := m.locate(off)
	if k < 0 {
		return 0
	}
	return m.firstLines[k] + i + 1
}

// blockOfLine is the index of the block holding line.
func (m *Mapper) blockOfLine(line int) int {
	k, found := slices.BinarySearch(m.firstLines, line)
	if !found {
		k--
	}
	return k
}

// span is where the i-th line of block k starts, and where the next line
// does (-1 after the last line).
func (m *Mapper) span(k, i int) (start, next int) {
	blk := m.blocks[k]
	start, next = blk.start(i), -1
	if i+1 < len(blk.starts) {
		next = blk.start(i + 1)
	} else if k+1 < len(m.blocks) {
		next = m.firstStarts[k+1]
	}
	return start, next
}

// lineSpan is span for a line, which must exist.
func (m *Mapper) lineSpan(line int) (start, next int) {
	if line < 0 || line >= m.lines {
		panic(fmt.Sprintf("source: line %d out of range [0, %d)", line, m.lines))
	}
	k := m.blockOfLine(line)
	return m.span(k, line-m.firstLines[k])
}

// terminator is where the line from start to next (-1: the last line)
// ends, before its "\n", "\r\n" or "\r".
func (m *Mapper) terminator(start, next int) int {
	if next < 0 {
		return len(m.src)
	}
	end := next - 1
	if m.src[end] == '\n' && end > start && m.src[end-1] == '\r' {
		end--
	}
	return end
}

// LineCount is the number of lines (a trailing newline opens an empty last line).
func (m *Mapper) LineCount() int { return m.lines }

// LineStart is the byte offset where line begins.
func (m *Mapper) LineStart(line int) int {
	start, _ := m.lineSpan(line)
	return start
}

// LineEnd is the byte offset of line's terminator (or the end of the source).
func (m *Mapper) LineEnd(line int) int {
	if line+1 >= m.lines {
		return len(m.src)
	}
	return m.terminator(m.lineSpan(line))
}

// Line returns the text of line without its terminator.
func (m *Mapper) Line(line int) []byte { return m.src[m.LineStart(line):m.LineEnd(line)] }

// LineOf returns the line holding byte offset off.
func (m *Mapper) LineOf(off int) int {
	// The number of line starts at or before off, less one (every
	// diagnostic's every offset is looked up).
	return m.countStartsAtOrBefore(min(off, len(m.src))) - 1
}

// Position converts a byte offset into a position. Offsets outside the
// source are clamped; an offset inside a multi-byte character or a line
// terminator maps to the start of that character or terminator.
func (m *Mapper) Position(off int, enc Encoding) Position {
	off = max(0, min(off, len(m.src)))
	k, i := m.locate(off) // line 0 starts at 0: k is a block
	line := m.firstLines[k] + i
	start, next := m.span(k, i)
	off = min(off, m.terminator(start, next))
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
	if p.Line >= m.lines {
		return len(m.src), fmt.Errorf("line %d is past the end of the document (%d lines)", p.Line, m.lines)
	}
	start, next := m.lineSpan(p.Line)
	end := m.terminator(start, next)
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
