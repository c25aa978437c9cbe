package source

import (
	"math/rand"
	"slices"
	"strings"
	"testing"
)

func TestMapperEncodings(t *testing.T) {
	// Line 1 has a tab, CJK (3 bytes, 1 UTF-16 unit) and an emoji (4 bytes,
	// 2 UTF-16 units); lines end in CRLF, then LF, then a lone CR.
	src := "a = 1\r\n\tx = \"中文😀\" + y\nz\rlast"
	m := NewMapper([]byte(src))
	if m.LineCount() != 4 {
		t.Fatalf("LineCount = %d, want 4", m.LineCount())
	}
	y := strings.Index(src, "y")
	cases := []struct {
		off  int
		enc  Encoding
		want Position
	}{
		{0, UTF16, Position{0, 0}},
		{5, UTF16, Position{0, 5}}, // the \r of CRLF
		{7, UTF16, Position{1, 0}},
		{y, UTF8, Position{1, y - 7}},
		{y, UTF16, Position{1, 1 + 5 + 2 + 2 + 1 + 3}},      // \t, `x = "`, 中文, 😀, `"`, ` + `
		{y, CodePoints, Position{1, 1 + 5 + 2 + 1 + 1 + 3}}, // the emoji is one code point
		{strings.Index(src, "z"), UTF16, Position{2, 0}},
		{strings.Index(src, "last"), UTF16, Position{3, 0}},
		{len(src), UTF16, Position{3, 4}},
		{len(src) + 10, UTF16, Position{3, 4}}, // clamped
	}
	for _, c := range cases {
		if got := m.Position(c.off, c.enc); got != c.want {
			t.Errorf("Position(%d, %v) = %v, want %v", c.off, c.enc, got, c.want)
		}
		back, err := m.Offset(c.want, c.enc)
		if err != nil {
			t.Errorf("Offset(%v, %v): %v", c.want, c.enc, err)
		}
		if wantOff := min(c.off, len(src)); back != wantOff && c.off != 5 {
			t.Errorf("Offset(%v, %v) = %d, want %d", c.want, c.enc, back, wantOff)
		}
	}
}

func TestMapperRoundTripEveryOffset(t *testing.T) {
	src := "# 注释 🎉\r\nx = '😀😀'\n\tλ = 1\n"
	m := NewMapper([]byte(src))
	for _, enc := range []Encoding{UTF8, UTF16, CodePoints} {
		for off := 0; off <= len(src); off++ {
			if off < len(src) && (src[off]&0xC0) == 0x80 {
				continue // inside a character
			}
			if off > 0 && src[off-1] == '\r' && off < len(src) && src[off] == '\n' {
				continue // between \r and \n
			}
			p := m.Position(off, enc)
			back, err := m.Offset(p, enc)
			if err != nil || back != off {
				t.Errorf("%v: offset %d -> %v -> %d (%v)", enc, off, p, back, err)
			}
		}
	}
}

func TestMapperOffsetBadPositions(t *testing.T) {
	m := NewMapper([]byte("ab😀\ncd"))
	// A column past the end of a line clamps to the line's end.
	if off, err := m.Offset(Position{0, 99}, UTF16); err != nil || off != 6 {
		t.Errorf("past end of line: %d, %v", off, err)
	}
	// A column inside a surrogate pair lands on the character's start.
	if off, err := m.Offset(Position{0, 3}, UTF16); err != nil || off != 2 {
		t.Errorf("inside surrogate pair: %d, %v", off, err)
	}
	if _, err := m.Offset(Position{5, 0}, UTF16); err == nil {
		t.Error("a line past the end must be an error")
	}
	if _, err := m.Offset(Position{-1, 0}, UTF16); err == nil {
		t.Error("a negative line must be an error")
	}
}

func TestMapperInvalidUTF8(t *testing.T) {
	m := NewMapper([]byte("a\xffb"))
	if p := m.Position(2, UTF16); p.Column != 2 {
		t.Errorf("an invalid byte counts one unit: %v", p)
	}
}

// NewMapperFrom takes the line starts of unchanged ranges from the index of
// an earlier text: it must index exactly what NewMapper does, whatever
// ranges are reused, with LF, CRLF and lone CR line breaks.
func TestMapperFromEqualsFreshIndex(t *testing.T) {
	lines := []string{"a = 1\n", "b = 2\r\n", "\n", "c\r", "def f():\n", "    return 3\r\n"}
	var prevText, text strings.Builder
	var reuse [][2]int
	for i := range 60 {
		line := lines[i%len(lines)]
		if i%7 == 3 { // a line that differs between the texts
			prevText.WriteString("x" + line)
			text.WriteString("yy" + line)
			continue
		}
		if prevText.Len() != text.Len() {
			prevText.WriteString(strings.Repeat(" ", text.Len()-prevText.Len()) + "\n")
			text.WriteString("\n")
		}
		start := text.Len()
		prevText.WriteString(line)
		text.WriteString(line)
		if i%3 != 0 {
			reuse = append(reuse, [2]int{start, text.Len()})
		}
	}
	prev := NewMapper([]byte(prevText.String()))
	got := NewMapperFrom(prev, []byte(text.String()), reuse)
	want := NewMapper([]byte(text.String()))
	if got.LineCount() != want.LineCount() {
		t.Fatalf("%d lines, want %d", got.LineCount(), want.LineCount())
	}
	for i := range want.LineCount() {
		if got.LineStart(i) != want.LineStart(i) {
			t.Fatalf("line %d starts at %d, want %d", i, got.LineStart(i), want.LineStart(i))
		}
	}
	if len(reuse) < 20 {
		t.Fatalf("only %d ranges reused", len(reuse))
	}
}

// Mapper.Edited updates an index for one replacement: after random
// replacements, with LF, CRLF and lone CR line breaks written and split
// anywhere, it must index exactly what NewMapper does.
func TestEditedMapperEqualsFreshIndex(t *testing.T) {
	pieces := []string{"a", "\n", "\r", "\r\n", "xy\n", "", "\n\r"}
	rng := rand.New(rand.NewSource(5))
	text := []byte("a = 1\r\nb = 2\n\rc\r\rd\n")
	m := NewMapper(text)
	for i := range 2000 {
		start := rng.Intn(len(text) + 1)
		end := min(len(text), start+rng.Intn(4))
		insert := pieces[rng.Intn(len(pieces))]
		next := append(append(append([]byte{}, text[:start]...), insert...), text[end:]...)
		got := m.Edited(next, start, end, start+len(insert))
		want := NewMapper(next)
		if !slices.Equal(got.lineStarts, want.lineStarts) {
			t.Fatalf("edit %d: %q -> %q at [%d,%d): starts %v, want %v", i, text, next, start, end, got.lineStarts, want.lineStarts)
		}
		text, m = next, got
	}
}
