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
	for _, size := range [][2]int{{1, 1}, {2, 1}, {3, 2}, {8, 3}, {256, 64}} {
		withBlocks(t, size[0], size[1])
		testMapperFromEqualsFreshIndex(t, false)
		testMapperFromEqualsFreshIndex(t, true)
	}
}

// testMapperFromEqualsFreshIndex: with shifted, the unchanged lines of the
// two texts are at different offsets (the lines that differ have other
// lengths), as in a statement edited in its place.
// A range of the same bytes may end in a "\r" whose line break the next
// byte decides, or start at the "\n" of a "\r\n" whose "\r" lies
// before it: NewMapperFrom finds what those starts depend on itself.
func TestMapperFromRangesAcrossLineBreaks(t *testing.T) {
	for _, c := range []struct {
		prev, text string
		reuse      Reuse
	}{
		{"ab\r\nzz\n", "ab\rzz\n", Reuse{0, 3, 0}}, // "\r" ends the range: "\r\n" before, a lone "\r" now
		{"aq\nbc\n", "a\r\nbc\n", Reuse{2, 6, 0}},  // "\n" starts it, "\r\n" now
		{"aq\nbc\n", "xa\r\nbc\n", Reuse{3, 7, 1}}, // the same, moved
	} {
		got := NewMapperFrom(NewMapper([]byte(c.prev)), []byte(c.text), []Reuse{c.reuse})
		want := NewMapper([]byte(c.text))
		same := got.LineCount() == want.LineCount()
		for i := 0; same && i < want.LineCount(); i++ {
			same = got.LineStart(i) == want.LineStart(i)
		}
		if !same {
			t.Errorf("%q from %q with %+v: lines differ from a fresh index's", c.text, c.prev, c.reuse)
		}
	}
}

func testMapperFromEqualsFreshIndex(t *testing.T, shifted bool) {
	lines := []string{"a = 1\n", "b = 2\r\n", "\n", "c\r", "def f():\n", "    return 3\r\n"}
	var prevText, text strings.Builder
	var reuse []Reuse
	for i := range 60 {
		line := lines[i%len(lines)]
		if i%7 == 3 { // a line that differs between the texts
			prevText.WriteString("x" + line)
			text.WriteString("yy" + line)
			continue
		}
		if prevText.Len() != text.Len() && !shifted {
			prevText.WriteString(strings.Repeat(" ", text.Len()-prevText.Len()) + "\n")
			text.WriteString("\n")
		}
		start := text.Len()
		shift := text.Len() - prevText.Len()
		prevText.WriteString(line)
		text.WriteString(line)
		if i%3 != 0 {
			reuse = append(reuse, Reuse{start, text.Len(), shift})
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
			t.Fatalf("blocks of %d: line %d starts at %d, want %d", lineBlockSize, i, got.LineStart(i), want.LineStart(i))
		}
	}
	checkBlocks(t, got)
	if len(reuse) < 20 {
		t.Fatalf("only %d ranges reused", len(reuse))
	}
}

// Mapper.Edited updates an index for one replacement: after random
// replacements, with LF, CRLF and lone CR line breaks written and split
// anywhere, it must index exactly what NewMapper does, with blocks of
// every size.
func TestEditedMapperEqualsFreshIndex(t *testing.T) {
	pieces := []string{"a", "\n", "\r", "\r\n", "xy\n", "", "\n\r", "\n\n\n\n\n\n\n"}
	for _, size := range [][2]int{{1, 1}, {2, 1}, {3, 2}, {8, 3}, {256, 64}} {
		withBlocks(t, size[0], size[1])
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
			if !slices.Equal(lineStarts(got), lineStarts(want)) {
				t.Fatalf("blocks of %d, edit %d: %q -> %q at [%d,%d): starts %v, want %v", size[0], i, text, next, start, end, lineStarts(got), lineStarts(want))
			}
			checkBlocks(t, got)
			text, m = next, got
		}
	}
}

// An edit copies the block it changed, and the blocks after it keep theirs
// however many lines it adds or removes: a keystroke in a large file does
// not copy its whole index. Nor do many edits break the index into small
// blocks.
func TestEditedMapperSharesUnchangedBlocks(t *testing.T) {
	text := []byte(strings.Repeat("x = 1\n", 50000))
	m := NewMapper(text)
	rng := rand.New(rand.NewSource(9))
	for i := range 1000 {
		at := rng.Intn(len(text))
		insert := []string{"y", "\n", "\n\n", ""}[i%4]
		end := at
		if insert == "" {
			end = min(len(text), at+3)
		}
		next := append(append(append([]byte{}, text[:at]...), insert...), text[end:]...)
		got := m.Edited(next, at, end, at+len(insert))
		shared := 0
		had := map[*int]bool{}
		for _, b := range m.blocks {
			had[&b.starts[0]] = true
		}
		for _, b := range got.blocks {
			if had[&b.starts[0]] {
				shared++
			}
		}
		if len(got.blocks)-shared > 3 {
			t.Fatalf("edit %d at %d copied %d of %d blocks", i, at, len(got.blocks)-shared, len(got.blocks))
		}
		text, m = next, got
	}
	if most := m.LineCount()/minLineBlock + 2; len(m.blocks) > most {
		t.Fatalf("%d blocks for %d lines after the edits, want at most %d", len(m.blocks), m.LineCount(), most)
	}
	if !slices.Equal(lineStarts(m), lineStarts(NewMapper(text))) {
		t.Fatal("the edited index differs from a fresh one")
	}
}

// withBlocks makes the index's blocks hold size line starts (and at least
// least) for the rest of the test.
func withBlocks(t testing.TB, size, least int) {
	oldSize, oldLeast := lineBlockSize, minLineBlock
	lineBlockSize, minLineBlock = size, least
	t.Cleanup(func() { lineBlockSize, minLineBlock = oldSize, oldLeast })
}

// lineStarts lists m's line starts.
func lineStarts(m *Mapper) []int {
	var all []int
	for _, b := range m.blocks {
		for i := range b.starts {
			all = append(all, b.start(i))
		}
	}
	return all
}

// checkBlocks checks that m's blocks number its lines in order, none empty
// or over the block size, and that the lists searched say where each
// block begins.
func checkBlocks(t testing.TB, m *Mapper) {
	t.Helper()
	line := 0
	for i, b := range m.blocks {
		if b.first != line || len(b.starts) == 0 || len(b.starts) > lineBlockSize {
			t.Fatalf("block %d: first line %d (want %d), %d starts (at most %d)", i, b.first, line, len(b.starts), lineBlockSize)
		}
		if m.firstLines[i] != b.first || m.firstStarts[i] != b.start(0) {
			t.Fatalf("block %d starts line %d at %d, the lists say line %d at %d", i, b.first, b.start(0), m.firstLines[i], m.firstStarts[i])
		}
		line += len(b.starts)
	}
	if line != m.LineCount() {
		t.Fatalf("blocks hold %d lines, LineCount %d", line, m.LineCount())
	}
	if starts := lineStarts(m); !slices.IsSorted(starts) || starts[0] != 0 {
		t.Fatalf("line starts out of order: %v", starts)
	}
}

// BenchmarkMapperEdited patches the index of a 50,000-line text for a
// one-character insert in its middle, as each keystroke does.
func BenchmarkMapperEdited(b *testing.B) {
	text := []byte(strings.Repeat("x = torch.zeros(3)\n", 50000))
	m := NewMapper(text)
	at := len(text) / 2
	next := slices.Concat(text[:at], []byte("y"), text[at:])
	b.ReportAllocs()
	for b.Loop() {
		m.Edited(next, at, at, at+1)
	}
}

// BenchmarkMapperPosition converts offsets spread over a 50,000-line text
// to positions, as the diagnostics of each version are.
func BenchmarkMapperPosition(b *testing.B) {
	text := []byte(strings.Repeat("x = torch.zeros(3)\n", 50000))
	m := NewMapper(text)
	for b.Loop() {
		for off := 0; off < len(text); off += len(text) / 500 {
			m.Position(off, UTF16)
		}
	}
}
