package pyast

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// lexPieces are what the random texts of the tests below are made of:
// every byte the scan treats apart, in the combinations it reads ahead.
var lexPieces = []string{
	"x = 1\n", "    def f(self):\n", "        return g(a, [b, {c: d}])\n",
	"'", "\"", "'''", "\"\"\"", "\\", "\\\n", "\\'", "#", "# it's\n", "(", ")",
	"[", "]", "{", "}", "\n", " ", "ab", "f\"{x}\"", "\"\"", "''",
}

func randomLexText(r *rand.Rand, pieces int) string {
	var b strings.Builder
	for range pieces {
		if r.IntN(3) == 0 {
			b.WriteString(lexPieces[r.IntN(3)]) // mostly code
		} else {
			b.WriteString(lexPieces[r.IntN(len(lexPieces))])
		}
	}
	return b.String()
}

// checkMarks fails unless m is text's scan: its end state that of a scan
// from the start, and each mark where that scan lands, in that state, but
// for brackets, which marks do not follow.
func checkMarks(t *testing.T, text []byte, m *lexMarks, step int) {
	t.Helper()
	if want := (lexState{}).scan(text); m.end != withoutBrackets(want) {
		t.Fatalf("step %d: end %+v, a whole scan ends in %+v", step, m.end, want)
	}
	l, i := lexState{}, 0
	for k, mk := range m.marks {
		if mk.at <= i && k > 0 {
			t.Fatalf("step %d: mark %d at %d after one at %d", step, k, mk.at, i)
		}
		l, i = l.scanTo(text, i, mk.at)
		if i != mk.at || withoutBrackets(l) != mk.state {
			t.Fatalf("step %d: mark %d at %d in %+v; a whole scan lands at %d in %+v", step, k, mk.at, mk.state, i, l)
		}
	}
}

func withoutBrackets(l lexState) lexState {
	l.depth = 0
	return l
}

func TestLexMarksFollowEdits(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 7))
		text := []byte(randomLexText(r, 3000))
		m := scanMarked(text)
		checkMarks(t, text, m, -1)
		for step := range 300 {
			at := r.IntN(len(text) + 1)
			cut := min(len(text)-at, r.IntN(4))
			if r.IntN(20) == 0 {
				cut = min(len(text)-at, r.IntN(5000)) // a large cut, over marks
			}
			insert := ""
			for range r.IntN(3) {
				insert += lexPieces[r.IntN(len(lexPieces))]
			}
			next := []byte(string(text[:at]) + insert + string(text[at+cut:]))
			m = m.rescan(text, next)
			checkMarks(t, next, m, step)
			text = next
		}
	}
}

// A key typed inside a large class scans a few kilobytes around it, not
// the class: the scan meets the last version's where the text is the same
// again.
func TestLexMarksScanWhatTheEditReaches(t *testing.T) {
	var b strings.Builder
	b.WriteString("class Big:\n")
	for i := range 4000 {
		b.WriteString("    def m" + strings.Repeat("x", i%7) + "(self, a):\n        \"\"\"Doc of it.\"\"\"\n        return f(a, [1, 2], {'k': \"v\"})  # note\n")
	}
	text := []byte(b.String())
	m := scanMarked(text)
	at := len(text) / 2
	at += strings.IndexByte(string(text[at:]), '\n') + 1
	for i, key := range []string{"x", "x.", "x.to(", "x.to(\"", "x.to(\"cuda", "x.to(\"cuda\")", "'''"} {
		next := []byte(string(text[:at]) + "        " + key + "\n" + string(text[at:]))
		before := lexScanned.Load()
		m2 := m.rescan(text, next)
		if scanned := int(lexScanned.Load() - before); scanned > 3*lexMarkEvery+len(key)+16 && i < 6 {
			t.Errorf("%q: scanned %d of %d bytes", key, scanned, len(next))
		}
		checkMarks(t, next, m2, i)
		if i == 6 && m2.end.quote != '\'' {
			t.Errorf("a triple quote left open: ends in %+v", m2.end)
		}
	}
}

// Inside a class that keeps its tree, keys that leave a syntax error scan
// what the edit reached, from the marks the class keeps with its tree;
// and a docstring's closing quotes deleted inside it still let the string
// go on past the class, as a fresh parse reads it.
func TestALargeClassKeepsItsScanWithItsTree(t *testing.T) {
	// About 40 KB: above keepTreeFrom.
	src := []byte(suiteOf(400, "        \"\"\"Step %[1]d.\"\"\"\n        return self.model(x, [1, 2]) * %[1]d  # it's\n"))
	tree := parseForEditing(t, src)
	at := bytes.Index(src, []byte("        return self.model(x, [1, 2]) * 150")) + len("        ")
	typed := 0
	for _, key := range []string{"x", " ", "=", " ", "f", "(", "\"", "a", "\"", ")", "\n        "} {
		before := lexScanned.Load()
		tree, src = edit(t, tree, src, at+typed, at+typed, key)
		typed += len(key)
		checkLayout(t, tree, src)
		seg := tree.Segments[tree.segmentOfSource(at)]
		if seg.tree == nil {
			t.Fatalf("after %q the class keeps no tree", src[at:at+typed])
		}
		// The first key leaves a syntax error and scans the class whole;
		// every later one scans from the marks it keeps.
		if seg.lex == nil {
			t.Fatalf("after %q the class keeps no scan", src[at:at+typed])
		}
		if scanned := lexScanned.Load() - before; typed > 1 && scanned > 4*lexMarkEvery {
			t.Errorf("after %q: %d bytes scanned, in a class of %d", src[at:at+typed], scanned, len(seg.text))
		}
	}
	// The closing quotes of a docstring in the middle of the class.
	doc := bytes.Index(src, []byte("Step 200.\"\"\"")) + len("Step 200.")
	tree, src = edit(t, tree, src, doc, doc+3, "")
	sameTree(t, tree, parseForEditing(t, src))
	tree, src = edit(t, tree, src, doc, doc, "\"\"\"")
	sameTree(t, tree, parseForEditing(t, src))
}
