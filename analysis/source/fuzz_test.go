package source

import (
	"slices"
	"testing"
	"unicode/utf8"
)

// charStarts lists the offsets where a character starts as each line
// decodes (an invalid byte is a character of its own), plus line ends.
func charStarts(m *Mapper) map[int]bool {
	starts := map[int]bool{}
	for line := range m.LineCount() {
		off, end := m.LineStart(line), m.LineEnd(line)
		for off < end {
			starts[off] = true
			_, size := utf8.DecodeRune(m.src[off:end])
			off += size
		}
		starts[end] = true
	}
	return starts
}

// In every encoding, on any input, positions stay in range, convert back to
// the start of a character, and character starts round-trip (on valid
// UTF-8 that is every offset but those inside a character or a "\r\n").
func FuzzMapper(f *testing.F) {
	for _, seed := range []string{"", "a\nb", "# 注释 🎉\r\nx = '😀😀'\n\tλ = 1\n", "a\rb\r\nc", "a\xffb\xf0\x9f", "\xe4\xb8", "😀\r"} {
		f.Add([]byte(seed), 3)
	}
	withBlocks(f, 3, 2) // several blocks on short inputs
	f.Fuzz(func(t *testing.T, src []byte, probe int) {
		m := NewMapper(src)
		checkBlocks(t, m)
		// An edit somewhere in src, that writes src's first bytes: the
		// index it patches is the one NewMapper makes of the result.
		at := abs(probe) % (len(src) + 1)
		end := min(len(src), at+abs(probe/3)%5)
		insert := src[:min(len(src), abs(probe/17)%6)]
		edited := slices.Concat(src[:at], insert, src[end:])
		if got, want := m.Edited(edited, at, end, at+len(insert)), NewMapper(edited); !slices.Equal(lineStarts(got), lineStarts(want)) {
			t.Fatalf("%q with [%d,%d) replaced by %q: starts %v, want %v", src, at, end, insert, lineStarts(got), lineStarts(want))
		}
		starts := charStarts(m)
		// LineOf is the number of line starts at or before the offset,
		// less one, for offsets outside the source too.
		want := -1
		for off := -2; off <= len(src)+2; off++ {
			for want+1 < m.LineCount() && m.LineStart(want+1) <= off {
				want++
			}
			if got := m.LineOf(off); got != want {
				t.Fatalf("LineOf(%d) = %d, want %d", off, got, want)
			}
		}
		for _, enc := range []Encoding{UTF8, UTF16, CodePoints} {
			for off := -1; off <= len(src)+1; off++ {
				p := m.Position(off, enc)
				if p.Line < 0 || p.Line >= m.LineCount() || p.Column < 0 {
					t.Fatalf("%v: offset %d -> %v out of range", enc, off, p)
				}
				back, err := m.Offset(p, enc)
				if err != nil {
					t.Fatalf("%v: offset %d -> %v -> %v", enc, off, p, err)
				}
				if !starts[back] {
					t.Fatalf("%v: offset %d -> %v -> %d, not a character start", enc, off, p, back)
				}
				// A character start round-trips, on any input.
				if off >= 0 && off <= len(src) && starts[off] && back != off {
					t.Fatalf("%v: character start %d -> %v -> %d", enc, off, p, back)
				}
			}
			// Any position maps inside the source, on a character start.
			p := Position{Line: abs(probe) % (m.LineCount() + 1), Column: abs(probe) / 7}
			off, err := m.Offset(p, enc)
			if off < 0 || off > len(src) || err == nil && !starts[off] {
				t.Fatalf("%v: position %v -> %d (%v)", enc, p, off, err)
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		if n == -n { // the most negative int
			return 0
		}
		return -n
	}
	return n
}
