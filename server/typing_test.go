package server

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/pyast"
)

// Edits like typing: letters into names, whole statements inserted at a
// line's indentation, lines deleted, and an unbalanced bracket or quote
// typed and taken back. Most keep the file analysable, so diagnostics and
// fixes appear, move and vanish; every 10th version they must equal a
// fresh analysis', fix edits included.
func TestRandomTypingKeepsDiagnosticsExact(t *testing.T) {
	seed := seedProgram(t)
	statements := []string{"torch.cuda.empty_cache()", "history.append(loss)", "x = x.cuda()", "total += loss", "model.eval()", "y = y.to(device)", "pass", "# 数据 😀 note"}
	unbalanced := []string{"(", "'''", `"`, "["}
	edits := int64(3)
	if s, err := strconv.Atoi(os.Getenv("VRAMLINT_TEST_SEED")); err == nil {
		edits = int64(s) // to try other edits: VRAMLINT_TEST_SEED=n go test -run TestRandomTypingKeepsDiagnosticsExact
	}
	rng := rand.New(rand.NewSource(edits))
	for _, enc := range []analysis.Encoding{analysis.UTF16, analysis.UTF8} {
		c := startServer(t, Options{})
		offered := map[analysis.Encoding]string{analysis.UTF16: "utf-16", analysis.UTF8: "utf-8"}[enc]
		c.initialize(map[string]any{"general": map[string]any{"positionEncodings": []string{offered}}}, nil)
		uri := "file:///typing.py"
		c.open(uri, string(seed)+trainingFile(400, 2))
		seen := 0
		var undo *lspTextEdit
		for i := 1; i <= 400; i++ {
			text := c.texts[uri]
			var edit lspTextEdit
			if undo != nil {
				edit, undo = *undo, nil
			} else {
				start, end, insert := typingEdit(rng, text, statements, unbalanced)
				var back lspTextEdit
				edit, back = replacement(text, start, end, insert, enc)
				if slices.Contains(unbalanced, insert) {
					undo = &back
				}
			}
			version := c.change(uri, enc, edit)
			if i%10 == 0 {
				seen += checkAgainstFresh(t, c, uri, version, enc, i)
			}
		}
		switch {
		case seen >= 40*5:
		case edits == 3:
			t.Errorf("%v: only %d diagnostics over 40 checks: the edits broke the file", enc, seen)
		default:
			// Other edits may leave the file broken longer; what they
			// show was still exact.
			t.Logf("%v: only %d diagnostics over 40 checks", enc, seen)
		}
	}
}

// checkAgainstFresh fails the test unless the diagnostics the server
// published for version (after the edit-th edit) are those of a fresh
// analysis of its text, fixes included; it returns how many there are.
func checkAgainstFresh(t *testing.T, c *testClient, uri string, version int, enc analysis.Encoding, edit int) int {
	t.Helper()
	got := c.diagnostics(uri, version)
	want := expectedDiagnostics(t, c, uri, version, enc)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%v: after edit %d the diagnostics differ from a fresh analysis'\ngot  %+v\nwant %+v", enc, edit, got, want)
	}
	return len(want)
}

// replacement is the edit that replaces text[start:end] with insert, and
// the edit that takes it back.
func replacement(text string, start, end int, insert string, enc analysis.Encoding) (edit, back lspTextEdit) {
	after := text[:start] + insert + text[end:]
	edit = lspTextEdit{Range: lspRange{clientPosition(text, start, enc), clientPosition(text, end, enc)}, NewText: insert}
	back = lspTextEdit{Range: lspRange{clientPosition(after, start, enc), clientPosition(after, start+len(insert), enc)}, NewText: text[start:end]}
	return edit, back
}

// typingEdit picks one typing-like edit of text: the byte range to replace
// and the text to put there.
func typingEdit(rng *rand.Rand, text string, statements, unbalanced []string) (start, end int, insert string) {
	lines := strings.SplitAfter(text, "\n")
	line := rng.Intn(len(lines))
	lineStart := len(strings.Join(lines[:line], ""))
	body := strings.TrimRight(lines[line], "\r\n")
	indent := body[:len(body)-len(strings.TrimLeft(body, " "))]
	switch kind := rng.Intn(10); {
	case kind < 4: // a letter into the line
		start = lineStart + len(indent) + rng.Intn(len(body)-len(indent)+1)
		for start < len(text) && text[start]&0xC0 == 0x80 {
			start++
		}
		return start, start, string(rune('a' + rng.Intn(26)))
	case kind < 6: // delete a character of the line
		if len(body) == 0 {
			return lineStart, lineStart, ""
		}
		start = lineStart + rng.Intn(len(body))
		for start > lineStart && text[start]&0xC0 == 0x80 {
			start--
		}
		_, size := utf8.DecodeRuneInString(text[start:])
		return start, start + size, ""
	case kind < 8: // a statement before the line, at its indentation
		return lineStart, lineStart, indent + statements[rng.Intn(len(statements))] + "\n"
	case kind < 9: // delete the line
		return lineStart, lineStart + len(lines[line]), ""
	}
	start = lineStart + len(indent)
	return start, start, unbalanced[rng.Intn(len(unbalanced))]
}

// A large file is opened by parsing it in chunks on several cores (that
// the chunks give the whole file's tree is pyast's
// TestChunkedParseEqualsWholeParse): diagnostics must be exact on open and
// on every edit after it, and a document closed at once leaves no
// tree-sitter tree behind.
func TestLargeFileOpenedInChunks(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	text := trainingFile(6000, 7)
	if len(text) < 128<<10 {
		t.Fatalf("the file has %d bytes: too small to be parsed in chunks", len(text))
	}
	c := startServer(t, Options{})
	c.initialize(map[string]any{}, nil)

	// Open and close at once, many times: the server keeps answering, and
	// no tree-sitter tree of those parses is left.
	for i := range 5 {
		uri := fmt.Sprintf("file:///closed%d.py", i)
		c.open(uri, text)
		c.notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": uri}})
	}
	noTrees(t, "after opening and closing")

	uri := "file:///large.py"
	c.open(uri, text)
	if !reflect.DeepEqual(c.diagnostics(uri, 1), freshDiagnostics(t, text, 1, analysis.UTF16)) {
		t.Fatal("on open, the diagnostics differ from a fresh analysis'")
	}
	rng := rand.New(rand.NewSource(5))
	for i := range 20 {
		text := c.texts[uri]
		start, end, insert := typingEdit(rng, text, []string{"torch.cuda.empty_cache()", "history.append(loss)"}, []string{"("})
		version := c.change(uri, analysis.UTF16, lspTextEdit{Range: lspRange{clientPosition(text, start, analysis.UTF16), clientPosition(text, end, analysis.UTF16)}, NewText: insert})
		if got, want := c.diagnostics(uri, version), expectedDiagnostics(t, c, uri, version, analysis.UTF16); !reflect.DeepEqual(got, want) {
			t.Fatalf("after edit %d the diagnostics differ from a fresh analysis'", i)
		}
	}
	// A whole new text, sent whole: what differs is parsed again.
	text = trainingFile(6000, 5)
	c.texts[uri] = text
	c.vers[uri]++
	c.notify("textDocument/didChange", map[string]any{
		"textDocument":   map[string]any{"uri": uri, "version": c.vers[uri]},
		"contentChanges": []map[string]any{{"text": text}},
	})
	if got, want := c.diagnostics(uri, c.vers[uri]), freshDiagnostics(t, text, c.vers[uri], analysis.UTF16); !reflect.DeepEqual(got, want) {
		t.Fatal("after replacing the text the diagnostics differ from a fresh analysis'")
	}
	for i := range 3 {
		text := c.texts[uri]
		start, end, insert := typingEdit(rng, text, []string{"x = x.cuda()"}, []string{"("})
		version := c.change(uri, analysis.UTF16, lspTextEdit{Range: lspRange{clientPosition(text, start, analysis.UTF16), clientPosition(text, end, analysis.UTF16)}, NewText: insert})
		if got, want := c.diagnostics(uri, version), expectedDiagnostics(t, c, uri, version, analysis.UTF16); !reflect.DeepEqual(got, want) {
			t.Fatalf("after edit %d of the new text the diagnostics differ from a fresh analysis'", i)
		}
	}
}

// Answers carried from one version to the next must never be stale, not
// even for one version: every version of a typing session is checked.
func TestEveryVersionIsExact(t *testing.T) {
	seed := seedProgram(t)
	// enc2 is a model only while a binding says so: inserting and deleting
	// `enc2 = nn.Linear(2, 2)` anywhere changes what is known about the
	// loops that store enc2(x).
	statements := []string{"torch.cuda.empty_cache()", "history.append(loss)", "x = x.cuda()", "total += loss", "model.eval()",
		"enc2 = nn.Linear(2, 2)", "history.append(enc2(x))", "total += enc2(x).sum()", "import torch.nn as nn", "device = torch.device('cuda')"}
	rng := rand.New(rand.NewSource(8))
	c := startServer(t, Options{})
	c.initialize(map[string]any{}, nil)
	uri := "file:///every.py"
	c.open(uri, string(seed)+trainingFile(150, 2))
	seen := 0
	for i := 1; i <= 200; i++ {
		text := c.texts[uri]
		start, end, insert := typingEdit(rng, text, statements, []string{"("})
		if insert == "(" {
			insert = "" // keep the file analysable: this test is about carried answers
		}
		version := c.change(uri, analysis.UTF16, lspTextEdit{Range: lspRange{clientPosition(text, start, analysis.UTF16), clientPosition(text, end, analysis.UTF16)}, NewText: insert})
		got, want := c.diagnostics(uri, version), expectedDiagnostics(t, c, uri, version, analysis.UTF16)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("version %d differs from a fresh analysis\ngot  %+v\nwant %+v", version, got, want)
		}
		seen += len(want)
	}
	if seen < 200*3 {
		t.Errorf("only %d diagnostics over 200 versions: the edits broke the file", seen)
	}
}

// A panic while a change is parsed (a bug in the parser's mirror) leaves
// the server's copy of the text in step with the editor's: that version
// is not analysed, the editor's log says why, and the next change applies
// to the right text and is analysed again.
func TestParsePanicKeepsTheText(t *testing.T) {
	seed := seedProgram(t)
	c := startServer(t, Options{})
	c.initialize(map[string]any{}, nil)
	uri := "file:///panic.py"
	c.open(uri, string(seed))
	if len(c.diagnostics(uri, 1)) == 0 {
		t.Fatal("the seed program should have findings")
	}
	enc := analysis.UTF16
	end := clientPosition(c.texts[uri], len(c.texts[uri]), enc)
	parse := parseEditor
	defer func() { parseEditor = parse }()
	parseEditor = func(*pyast.Editor) (*pyast.Tree, error) { panic("a bug in the mirror") }
	c.change(uri, enc, lspTextEdit{Range: lspRange{end, end}, NewText: "\n# typed while the parser failed\n"})
	c.await("the failure shown", func(m message) bool {
		return m.Method == "window/logMessage" && bytes.Contains(m.Params, []byte("a bug in the mirror"))
	})
	parseEditor = parse
	at := clientPosition(c.texts[uri], strings.Index(c.texts[uri], "# typed"), enc)
	v := c.change(uri, enc, lspTextEdit{Range: lspRange{at, at}, NewText: "x = 1\n"})
	if got, want := c.diagnostics(uri, v), expectedDiagnostics(t, c, uri, v, enc); !reflect.DeepEqual(got, want) {
		t.Errorf("after the failed version, the diagnostics differ from a fresh analysis'\ngot  %+v\nwant %+v", got, want)
	}
}

// Typing inside a class large enough to keep its tree-sitter tree (from
// the open on, or from the first edit once other buffers have used the
// open's budget, pyast's keepAtOpen), which each edit parses
// incrementally and whose mirror copies what the edit left alone (see
// pyast's reparseSegment and mirror): every 10th version's diagnostics
// equal a fresh analysis', fixes included.
func TestTypingInsideALargeClassKeepsDiagnosticsExact(t *testing.T) {
	const header = "class CustomDataset(Dataset):\n"
	text := seedWithLargeDataset(t, 300)
	if size := strings.Index(text, "\n\ndata_paths") - strings.Index(text, header); size < 32<<10 {
		t.Fatalf("the class has %d bytes: too small to keep its tree", size)
	}
	statements := []string{"x = x.cuda()", "image = image.to('cuda')", "torch.cuda.empty_cache()", "pass", "return x", "# 数据 😀 note"}
	unbalanced := []string{"(", "'''", `"`, "["}
	rng := rand.New(rand.NewSource(17))
	c := startServer(t, Options{})
	c.initialize(map[string]any{}, nil)
	uri := "file:///large_class.py"
	c.open(uri, text)
	seen := 0
	var undo *lspTextEdit
	for i := 1; i <= 300; i++ {
		text := c.texts[uri]
		var edit lspTextEdit
		if undo != nil {
			edit, undo = *undo, nil
		} else {
			// Within the class's body, after its header line.
			lo := strings.Index(text, header) + len(header)
			hi := strings.Index(text, "\n\ndata_paths")
			if lo < len(header) || hi < lo {
				t.Fatalf("edit %d: the class's bounds are gone", i)
			}
			start, end, insert := typingEdit(rng, text[lo:hi], statements, unbalanced)
			for start > 0 && text[lo+start-1] == '\n' && insert != "" && insert[0] != ' ' {
				// Code at column 0 of a blank line ends the class, and
				// parses: what follows is no longer its body.
				start, end, insert = typingEdit(rng, text[lo:hi], statements, unbalanced)
			}
			start, end = start+lo, end+lo
			var back lspTextEdit
			edit, back = replacement(text, start, end, insert, analysis.UTF16)
			// An edit that breaks the syntax is taken back by the next one,
			// as a user mends what they break: the class stays mostly
			// whole, with its findings, rather than broken for good by a
			// deleted `def` line.
			after := text[:start] + insert + text[end:]
			if tree, err := pyast.Parse(t.Context(), []byte(after)); err != nil || tree.HasError() {
				undo = &back
			}
		}
		version := c.change(uri, analysis.UTF16, edit)
		if i%10 == 0 {
			seen += checkAgainstFresh(t, c, uri, version, analysis.UTF16, i)
		}
	}
	if seen < 30*5 {
		t.Errorf("only %d diagnostics over 30 checks: the edits broke the file", seen)
	}
	t.Logf("%d diagnostics over 30 checks", seen)
}

// seedWithLargeDataset is the seed program with helper methods in its
// Dataset class, half before its methods and half after them, and more
// moves in __getitem__, so that its findings outlive the edits that land
// in it.
func seedWithLargeDataset(t *testing.T, helpers int) string {
	seed := string(seedProgram(t))
	methods := func(from, to int) string {
		var b strings.Builder
		for i := from; i < to; i++ {
			fmt.Fprintf(&b, "\n    def helper%d(self, x):\n        y = x * %d\n        if y > 3:\n            return torch.zeros(3).to('cuda')\n        return y\n", i, i)
		}
		return b.String()
	}
	header := "class CustomDataset(Dataset):\n"
	start, end := strings.Index(seed, header)+len(header), strings.Index(seed, "\n\ndata_paths")
	var moves strings.Builder
	for i := range 10 {
		fmt.Fprintf(&moves, "        mask%d = torch.ones(3).cuda()\n", i)
	}
	at := strings.Index(seed, "        return image, label")
	return seed[:start] + methods(0, helpers/2)[1:] + "\n" + seed[start:at] + moves.String() + seed[at:end] + "\n" + methods(helpers/2, helpers) + seed[end:]
}

// A class large enough to be parsed in parts when its buffer is opened
// (see pyast's classparts.go) gives the diagnostics of a fresh analysis;
// at the pause after the open it is parsed whole and keeps that tree, and
// the edits typed into it after that are analysed exactly too.
func TestAClassParsedInPartsKeepsItsTreeAfterThePause(t *testing.T) {
	text := seedWithLargeDataset(t, 800)
	if size := strings.Index(text, "\n\ndata_paths") - strings.Index(text, "class CustomDataset"); size < 96<<10 {
		t.Fatalf("the class has %d bytes: too small to be parsed in parts", size)
	}
	// A pause longer than the test takes to look at the open's tree.
	defer func(was time.Duration) { summaryPause = was }(summaryPause)
	summaryPause = time.Second
	c := startServer(t, Options{})
	c.initialize(map[string]any{}, nil)
	uri := "file:///parts.py"
	c.open(uri, text)
	checkAgainstFresh(t, c, uri, 1, analysis.UTF16, 0)
	class := func() *pyast.Segment {
		c.srv.mu.Lock()
		defer c.srv.mu.Unlock()
		for _, seg := range c.srv.docs[uri].snap.tree.Segments {
			if bytes.HasPrefix(seg.Text(), []byte("class CustomDataset")) {
				return seg
			}
		}
		t.Fatal("no segment holds the class")
		return nil
	}()
	if class.KeepsTree() {
		t.Fatal("the class keeps a tree before the pause: it was parsed whole at the open, not in parts")
	}
	// Keys typed after the class, with pauses (the parse of the class may
	// run beside the keys that follow them): the class's segment stays
	// the same version to version.
	rng := rand.New(rand.NewSource(3))
	for i := range 10 {
		text := c.texts[uri]
		edit, _ := replacement(text, len(text), len(text), fmt.Sprintf("x%d = %d\n", i, i), analysis.UTF16)
		c.change(uri, analysis.UTF16, edit)
		time.Sleep(time.Duration(rng.Intn(1500)) * time.Millisecond)
	}
	for deadline := time.Now().Add(10 * time.Second); !class.KeepsTree(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the class keeps no tree 10 s after the open")
		}
	}
	for i := 1; i <= 20; i++ {
		text := c.texts[uri]
		at := strings.Index(text, fmt.Sprintf("        y = x * %d\n", rng.Intn(800)))
		edit, _ := replacement(text, at, at, "        z = y\n", analysis.UTF16)
		checkAgainstFresh(t, c, uri, c.change(uri, analysis.UTF16, edit), analysis.UTF16, i)
	}
}

// A NUL typed into a buffer stops its analysis, and deleting it again
// resumes it: only the bytes an edit wrote are checked while the text
// before it passed (analysis.CheckEdited), and the whole text after one
// that did not.
func TestATypedNULStopsTheAnalysisUntilItIsGone(t *testing.T) {
	c := startServer(t, Options{})
	c.initialize(map[string]any{}, nil)
	uri := "file:///nul.py"
	c.open(uri, leakyDataset)
	want := c.diagnostics(uri, 1)
	if len(want) == 0 {
		t.Fatal("the dataset should have findings")
	}
	enc := analysis.UTF16
	at := clientPosition(c.texts[uri], strings.Index(c.texts[uri], "class"), enc)
	v := c.change(uri, enc, lspTextEdit{Range: lspRange{at, at}, NewText: "x\x00"})
	c.await("the text called binary", func(m message) bool {
		return m.Method == "window/logMessage" && bytes.Contains(m.Params, []byte("no longer analysed")) && bytes.Contains(m.Params, []byte("NUL byte"))
	})
	if got := c.diagnostics(uri, v); len(got) != 0 {
		t.Fatalf("a binary text has %d diagnostics", len(got))
	}
	v = c.change(uri, enc, lspTextEdit{Range: lspRange{at, clientPosition(c.texts[uri], strings.Index(c.texts[uri], "class"), enc)}, NewText: ""})
	found := func(ds []lspDiagnostic) (out []string) { // the data names the version
		for _, d := range ds {
			out = append(out, fmt.Sprintf("%s %v %s", d.Code, d.Range, d.Message))
		}
		return out
	}
	if got := c.diagnostics(uri, v); !reflect.DeepEqual(found(got), found(want)) {
		t.Fatalf("with the NUL deleted: %v\nwant %v", found(got), found(want))
	}
}
