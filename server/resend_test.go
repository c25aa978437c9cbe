package server

import (
	"bytes"
	"context"
	"math/rand"
	"strings"
	"testing"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/analysistest"
	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/rules"
	"github.com/vramlint/vramlint/analysis/source"
	"github.com/vramlint/vramlint/codeactions"
)

// Diagnostics written again from the last version's encodings are byte for
// byte what converting and encoding them afresh writes, over random edits
// of a file dense with findings: letters, line breaks of every kind,
// multi-byte characters and deletions, anywhere and on the lines of
// findings, in every position encoding, with and without related
// information.
func TestResentDiagnosticsEqualFreshOnes(t *testing.T) {
	// Every rule's fixtures, one after the other, and a file where every
	// Dataset moves its samples to the GPU.
	var fixtures []string
	for _, src := range analysistest.Sources(t, "../analysis/rules/testdata/*/*.py") {
		fixtures = append(fixtures, string(src))
	}
	text := strings.Join(fixtures, "\n\n") + "\n\n" + trainingFile(300, 1)
	// Lines whose columns differ by encoding, and CRLF line breaks.
	text = strings.Replace(text, "\"\"\"Samples for experiment 3.\"\"\"", "\"\"\"Échantillons 😀 for experiment 3.\"\"\"", 1)
	text = strings.Replace(text, "    def __len__(self):\n", "    def __len__(self):\r\n", 3)
	src := []byte(text)
	tree, err := pyast.ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	all := rules.All()
	runner := &analysis.Runner{Rules: all}
	res := runner.AnalyzeTree(nil, "/w/dense.py", src, tree, nil)
	if len(res.Diagnostics) < 40 {
		t.Fatalf("%d diagnostics: too few to test with", len(res.Diagnostics))
	}
	snippets := []string{" ", " ", "x", "\n", "\r\n", "\r", "é", "😀", "    ", "# note\n", "\t"}
	sameLength := []string{"é", "ab", "  ", "xy", "😀", "abcd"}
	rng := rand.New(rand.NewSource(7))
	encodings := []analysis.Encoding{analysis.UTF16, analysis.UTF8, source.CodePoints}
	var sent *sentDiagnostics
	written, reused := 0, 0
	for version := int32(1); version <= 240; version++ {
		related := version%97 != 0
		doc := codeactions.Document{URI: "file:///w/dense.py", Version: version, Mapper: analysis.NewMapper(src), Encoding: encodings[int(version)/100]}
		var got []byte
		got, sent = appendDiagnostics(nil, doc, src, res, all, related, sent)
		want := appendArray(nil, doc.Diagnostics(res, all, related), (*diagnosticEncoder)(nil).diagnostic)
		if !bytes.Equal(got, want) {
			t.Fatalf("version %d: the diagnostics written again differ from fresh ones:\n got %s\nwant %s", version, firstDifference(got, want), firstDifference(want, got))
		}
		if sent != nil {
			written += len(res.Diagnostics)
			reused += sent.reused
		}

		// The next version: one to three changes (as a debounced client
		// sends them), each anywhere, around a finding, or on its line
		// before it; an insertion, a deletion, or a replacement by as many
		// bytes (which moves no offset but may move columns: "é" for "ab").
		// Every 25 versions the text is put back as it was, so that broken
		// brackets do not pile up into one statement the size of the file.
		ed := pyast.NewEditor(tree, src)
		if version%25 == 0 {
			ed.Replace(0, len(src), text)
		}
		for range 1 + rng.Intn(3) {
			now := ed.Text()
			at := rng.Intn(len(now) + 1)
			if len(res.Diagnostics) > 0 {
				d := res.Diagnostics[rng.Intn(len(res.Diagnostics))]
				start := min(d.Start, len(now))
				switch rng.Intn(3) {
				case 0:
					at = max(0, min(len(now), start+rng.Intn(max(1, d.End-d.Start)+8)-4))
				case 1:
					lineStart := bytes.LastIndexAny(now[:start], "\r\n") + 1
					at = lineStart + rng.Intn(start-lineStart+1)
				}
			}
			end, insert := at, snippets[rng.Intn(len(snippets))]
			switch rng.Intn(8) {
			case 0, 1:
				end, insert = min(len(now), at+rng.Intn(6)), ""
			case 2:
				// Not over quotes, brackets or line breaks: an unclosed
				// string swallows the rest of the file.
				insert = sameLength[rng.Intn(len(sameLength))]
				end = at + len(insert)
				if end > len(now) || bytes.ContainsAny(now[at:end], "\"'()[]{}\r\n\\#") {
					end, insert = at, ""
				}
			}
			ed.Replace(at, end, insert)
		}
		next, err := ed.Parse(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		src, tree = ed.Text(), next
		res = runner.AnalyzeTree(res, "/w/dense.py", src, tree, nil)
	}
	// Most are written again: the test would prove nothing otherwise.
	if reused*2 < written {
		t.Fatalf("%d of %d diagnostics were written again from the last version's", reused, written)
	}
	t.Logf("%d of %d diagnostics written again", reused, written)
}

// firstDifference is b from a little before where it first differs from
// other.
func firstDifference(b, other []byte) []byte {
	i := 0
	for i < len(b) && i < len(other) && b[i] == other[i] {
		i++
	}
	return b[max(0, i-200):min(len(b), i+200)]
}

// BenchmarkDiagnosticsEncoding measures converting and encoding the
// diagnostics of the generated 50,000-line file (one finding every block)
// after a one-character edit in its middle: afresh, and written again from
// the last version's encodings.
func BenchmarkDiagnosticsEncoding(b *testing.B) {
	text := trainingFile(50000, 1)
	at := len(text) / 2
	at += strings.Index(text[at:], "\n\n\ndef ") + 2
	all := rules.All()
	runner := &analysis.Runner{Rules: all}
	var srcs [2][]byte
	var results [2]*analysis.Result
	for i, version := range []string{text, text[:at] + "x" + text[at:]} {
		srcs[i] = []byte(version)
		tree, err := pyast.ParseForEditing(context.Background(), srcs[i])
		if err != nil {
			b.Fatal(err)
		}
		results[i] = runner.AnalyzeTree(nil, "/w/bench.py", srcs[i], tree, nil)
	}
	doc := func(i int) codeactions.Document {
		return codeactions.Document{URI: "file:///w/bench.py", Version: int32(i + 1), Mapper: analysis.NewMapper(srcs[i]), Encoding: analysis.UTF16}
	}
	before, after := doc(0), doc(1)
	b.Run("afresh", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf = appendArray(buf[:0], after.Diagnostics(results[1], all, true), (*diagnosticEncoder)(nil).diagnostic)
		}
		b.ReportMetric(float64(len(results[1].Diagnostics)), "diagnostics")
	})
	b.Run("again", func(b *testing.B) {
		_, last := appendDiagnostics(nil, before, srcs[0], results[0], all, true, nil)
		var buf []byte
		var sent *sentDiagnostics
		for b.Loop() {
			buf, sent = appendDiagnostics(buf[:0], after, srcs[1], results[1], all, true, last)
		}
		b.ReportMetric(float64(sent.reused), "reused")
	})
}
