package server

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/rules"
	"github.com/vramlint/vramlint/codeactions"
)

// A line with CJK and an emoji before the reported call: UTF-16 counts
// the emoji as 2 units, UTF-8 counts bytes.
const unicodeSource = "import torch\nfrom torch.utils.data import Dataset\n\n\nclass D(Dataset):\n    def __getitem__(self, i):\n        s = '数据😀'; return torch.ones(1).cuda()\n"

func TestPositionEncodings(t *testing.T) {
	for _, tc := range []struct {
		offered []string
		want    string
		enc     analysis.Encoding
	}{
		{nil, "utf-16", analysis.UTF16},
		{[]string{"utf-16", "utf-8"}, "utf-8", analysis.UTF8},
		{[]string{"utf-32", "utf-16"}, "utf-32", analysis.CodePoints},
	} {
		c := startServer(t, Options{})
		result := c.initialize(map[string]any{"general": map[string]any{"positionEncodings": tc.offered}}, nil)
		if got := result["capabilities"].(map[string]any)["positionEncoding"]; got != tc.want {
			t.Errorf("offered %v: negotiated %v, want %s", tc.offered, got, tc.want)
		}
		uri := "file:///u.py"
		c.open(uri, unicodeSource)
		diags := c.diagnostics(uri, 1)
		off := strings.Index(unicodeSource, ".cuda()")
		want := clientPosition(unicodeSource, off, tc.enc)
		if len(diags) != 1 || diags[0].Range.Start != want {
			t.Errorf("%s: diagnostic at %+v, want %+v", tc.want, diags, want)
		}
		// An edit in the same encoding, on the same line before the call.
		at := lspPosition{6, 8}
		v := c.change(uri, tc.enc, lspTextEdit{Range: lspRange{Start: at, End: at}, NewText: "x = 1; "})
		diags = c.diagnostics(uri, v)
		want.Character += 7
		if len(diags) != 1 || diags[0].Range.Start != want {
			t.Errorf("%s after edit: %+v, want %+v", tc.want, diags, want)
		}
		if c.srv.docs[uri].snap.src == nil || string(c.srv.docs[uri].snap.src) != c.texts[uri] {
			t.Errorf("%s: server text differs from the client's", tc.want)
		}
	}
}

func TestCRLFAndWholeDocumentChanges(t *testing.T) {
	c := startServer(t, Options{})
	c.initialize(map[string]any{}, nil)
	uri := "file:///crlf.py"
	crlf := strings.ReplaceAll(leakyDataset, "\n", "\r\n")
	c.open(uri, crlf)
	diags := c.diagnostics(uri, 1)
	if len(diags) != 2 || diags[0].Range.Start != (lspPosition{6, 28}) || diags[1].Range.Start != (lspPosition{10, 4}) {
		t.Fatalf("CRLF diagnostics: %+v", diags)
	}
	// A rangeless change replaces the whole document.
	c.vers[uri] = 2
	c.texts[uri] = "import torch\r\nx = 1\r\n"
	c.notify("textDocument/didChange", map[string]any{
		"textDocument":   map[string]any{"uri": uri, "version": 2},
		"contentChanges": []any{map[string]any{"text": c.texts[uri]}},
	})
	if diags := c.diagnostics(uri, 2); len(diags) != 0 {
		t.Errorf("after a whole-document change: %+v", diags)
	}
	if got := string(c.srv.docs[uri].snap.src); got != c.texts[uri] {
		t.Errorf("server text %q", got)
	}
	// A whole-document change followed by an incremental one, in one message.
	c.vers[uri] = 3
	c.texts[uri] = strings.ReplaceAll(leakyDataset, "\n", "\r\n")
	c.notify("textDocument/didChange", map[string]any{
		"textDocument": map[string]any{"uri": uri, "version": 3},
		"contentChanges": []any{
			map[string]any{"text": "import torch\r\n"},
			map[string]any{"range": lspRange{Start: lspPosition{1, 0}, End: lspPosition{1, 0}}, "text": strings.TrimPrefix(c.texts[uri], "import torch\r\n")},
		},
	})
	if diags := c.diagnostics(uri, 3); len(diags) != 2 {
		t.Errorf("after mixed changes: %+v", diags)
	}
}

// After 1000 random incremental edits the server's text and tree equal a
// fresh parse of the final text, and at every 50th edit its diagnostics
// equal a fresh analysis'. The random pieces (unbalanced quotes and
// brackets among them) soon break the file, so this is about surviving
// anything: past the first checkpoints there are few diagnostics left to
// compare. TestRandomTypingKeepsDiagnosticsExact and TestEveryVersionIsExact
// compare diagnostics on files that stay analysable.
func TestRandomIncrementalEdits(t *testing.T) {
	seed := seedProgram(t)
	src := string(seed) + trainingFile(500, 3)
	pieces := []string{"x", " ", "\n", "\n    ", "(", ")", ":", "torch.cuda.empty_cache()", ".cuda()", "数", "😀", "for i in range(3):\n", "\"", "'''", "#", "\t", "é", "history.append(loss)\n", ""}
	rng := rand.New(rand.NewSource(42))
	for _, enc := range []analysis.Encoding{analysis.UTF16, analysis.UTF8} {
		c := startServer(t, Options{})
		offered := []string{"utf-16"}
		if enc == analysis.UTF8 {
			offered = []string{"utf-8"}
		}
		c.initialize(map[string]any{"general": map[string]any{"positionEncodings": offered}}, nil)
		uri := "file:///random.py"
		c.open(uri, src)
		version := 1
		for i := 1; i <= 1000; i++ {
			text := c.texts[uri]
			runes := []rune(text)
			a := rng.Intn(len(runes) + 1)
			b := min(len(runes), a+rng.Intn(4)*rng.Intn(6))
			if rng.Intn(8) == 0 { // multi-line deletions and replacements
				b = min(len(runes), a+rng.Intn(200))
			}
			insert := ""
			for n := rng.Intn(3); n > 0; n-- {
				insert += pieces[rng.Intn(len(pieces))]
			}
			start := len(string(runes[:a]))
			end := len(string(runes[:b]))
			edit := lspTextEdit{Range: lspRange{clientPosition(text, start, enc), clientPosition(text, end, enc)}, NewText: insert}
			version = c.change(uri, enc, edit)
			if i%50 == 0 {
				got := c.diagnostics(uri, version)
				want := expectedDiagnostics(t, c, uri, version, enc)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%v: after edit %d the diagnostics differ from a fresh analysis'\ngot  %+v\nwant %+v", enc, i, got, want)
				}
			}
		}
		final := c.texts[uri]
		snap := c.srv.docs[uri].snap
		if string(snap.src) != final {
			t.Fatalf("%v: the server's text differs from the client's", enc)
		}
		fresh, err := pyast.Parse(t.Context(), []byte(final))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := sexp(snap.tree), sexp(fresh); got != want && !snap.tree.HasError() {
			t.Errorf("%v: the incrementally parsed tree differs from a fresh parse", enc)
		}
	}
}

// freshDiagnostics is what the server should publish for text: a fresh
// analysis, with its positions in enc.
func freshDiagnostics(t *testing.T, text string, version int, enc analysis.Encoding) []lspDiagnostic {
	t.Helper()
	runner := &analysis.Runner{Rules: rules.All()}
	res, err := runner.Run(t.Context(), "/random.py", []byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	return lspDiagnostics(t, res, text, version, enc)
}

// expectedDiagnostics is what the server should publish for version of
// uri, the client's text of which is text: a fresh analysis when the text
// parses without a syntax error; with one, which stays in the statements
// around the edits that made it (see pyast's reparse), a fresh analysis
// of the server's own tree of that version. Either way nothing carried
// from earlier versions may show.
func expectedDiagnostics(t *testing.T, c *testClient, uri string, version int, enc analysis.Encoding) []lspDiagnostic {
	t.Helper()
	text := c.texts[uri]
	fresh, err := pyast.Parse(t.Context(), []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if !fresh.HasError() {
		return freshDiagnostics(t, text, version, enc)
	}
	c.srv.mu.Lock()
	snap := c.srv.docs[uri].snap
	c.srv.mu.Unlock()
	if int(snap.version) != version || string(snap.src) != text {
		t.Fatalf("the server is not at version %d", version)
	}
	runner := &analysis.Runner{Rules: rules.All()}
	return lspDiagnostics(t, runner.AnalyzeTree(nil, "/random.py", snap.src, snap.tree, nil), text, version, enc)
}

// lspDiagnostics encodes res as the server does.
func lspDiagnostics(t *testing.T, res *analysis.Result, text string, version int, enc analysis.Encoding) []lspDiagnostic {
	t.Helper()
	doc := codeactions.Document{URI: "file:///random.py", Version: int32(version), Mapper: analysis.NewMapper([]byte(text)), Encoding: enc}
	raw, err := json.Marshal(doc.Diagnostics(res, rules.All(), false))
	if err != nil {
		t.Fatal(err)
	}
	var out []lspDiagnostic
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// sexp renders a tree's statements with kinds, fields and byte ranges in
// the source.
func sexp(t *pyast.Tree) string {
	var b strings.Builder
	var walk func(*pyast.Node)
	walk = func(n *pyast.Node) {
		fmt.Fprintf(&b, "(%s:%s %d-%d", n.Field(), n.Kind(), t.Real(n.Start()), t.Real(n.End()))
		for c := range n.Children() {
			walk(c)
		}
		b.WriteString(")")
	}
	b.WriteString(t.Root.Kind())
	for _, s := range t.Statements {
		walk(s)
	}
	return b.String()
}

func TestOutOfRangeChangesAndBackwardVersions(t *testing.T) {
	c := startServer(t, Options{})
	c.initialize(map[string]any{}, nil)
	uri := "file:///edge.py"
	c.open(uri, "import torch\nx = 1\n")
	c.diagnostics(uri, 1)
	// A position past the end of a line and one past the end of the file.
	c.notify("textDocument/didChange", map[string]any{
		"textDocument": map[string]any{"uri": uri, "version": 2},
		"contentChanges": []any{
			map[string]any{"range": lspRange{lspPosition{0, 99}, lspPosition{0, 120}}, "text": "  # a"},
			map[string]any{"range": lspRange{lspPosition{40, 3}, lspPosition{41, 0}}, "text": "y = 2\n"},
		},
	})
	c.diagnostics(uri, 2)
	if got := string(c.srv.docs[uri].snap.src); got != "import torch  # a\nx = 1\ny = 2\n" {
		t.Errorf("clamped edits: %q", got)
	}
	// A version that goes backwards is applied, not dropped.
	c.notify("textDocument/didChange", map[string]any{
		"textDocument":   map[string]any{"uri": uri, "version": 1},
		"contentChanges": []any{map[string]any{"text": leakyDataset}},
	})
	if diags := c.diagnostics(uri, 1); len(diags) != 2 {
		t.Errorf("after a backward version: %+v", diags)
	}
	// The server still answers.
	if err := c.request("textDocument/hover", map[string]any{"textDocument": map[string]any{"uri": uri}, "position": lspPosition{999, 999}}, nil); err != nil {
		t.Errorf("hover past the end: %v", err)
	}
}

func TestMalformedMessagesKeepServerRunning(t *testing.T) {
	c := startServer(t, Options{})
	c.sendRaw(`{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {`)
	m := c.await("parse error", func(m message) bool { return m.Error != nil })
	if m.Error.Code != -32700 || string(m.ID) != "null" {
		t.Errorf("malformed JSON: %s", m.raw)
	}
	fmt.Fprintf(c.in, "Content-Length: nonsense\r\n\r\n")
	c.await("error for a bad header", func(m message) bool { return m.Error != nil && m.Error.Code == -32700 })
	c.initialize(map[string]any{}, nil)
	if err := c.request("textDocument/codeAction", "not an object", nil); err == nil || err.Code != -32602 {
		t.Errorf("params of the wrong shape: %v, want InvalidParams", err)
	}
	if code := c.shutdownAndExit(); code != 0 {
		t.Errorf("exit status %d", code)
	}
}

// slowRule sleeps on files that mention SLOW, so a request stays in flight
// long enough to be cancelled; panicRule panics on files that mention BOOM.
var (
	slowRule = &analysis.Rule{Code: "GPU998", Name: "slow", DefaultSeverity: analysis.SeverityHint, Run: func(p *analysis.Pass) {
		if strings.Contains(string(p.Src), "SLOW") {
			time.Sleep(500 * time.Millisecond)
		}
	}}
	panicRule = &analysis.Rule{Code: "GPU999", Name: "boom", DefaultSeverity: analysis.SeverityHint, Run: func(p *analysis.Pass) {
		if strings.Contains(string(p.Src), "BOOM") {
			panic("injected failure")
		}
	}}
)

func TestCancelNumericAndStringIDs(t *testing.T) {
	c := startServer(t, Options{Rules: append(rules.All(), slowRule)})
	c.initialize(map[string]any{"textDocument": map[string]any{"diagnostic": map[string]any{}}}, nil)
	for i, id := range []any{77, "req-78"} {
		uri := fmt.Sprintf("file:///slow%d.py", i)
		c.open(uri, "# SLOW\n"+leakyDataset)
		c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": "textDocument/diagnostic", "params": map[string]any{"textDocument": map[string]any{"uri": uri}}})
		c.notify("$/cancelRequest", map[string]any{"id": id})
		idJSON, _ := json.Marshal(id)
		m := c.await("cancelled response", func(m message) bool { return string(m.ID) == string(idJSON) })
		if m.Error == nil || m.Error.Code != -32800 {
			t.Errorf("id %v: %s, want RequestCancelled", id, m.raw)
		}
	}
}

func TestRulePanicLeavesServerAnswering(t *testing.T) {
	c := startServer(t, Options{Rules: append(rules.All(), panicRule)})
	c.initialize(map[string]any{}, nil)
	uri := "file:///boom.py"
	c.open(uri, "# BOOM\n"+leakyDataset)
	if diags := c.diagnostics(uri, 1); len(diags) != 2 {
		t.Errorf("the other rules' diagnostics: %+v", diags)
	}
	if actions := c.codeActions(uri, lspRange{lspPosition{7, 0}, lspPosition{7, 40}}, nil, 0); len(actions) == 0 {
		t.Error("no code actions after a rule panicked")
	}
}

func TestPullDiagnostics(t *testing.T) {
	c := startServer(t, Options{})
	result := c.initialize(map[string]any{
		"textDocument": map[string]any{"diagnostic": map[string]any{"dynamicRegistration": false}},
		"workspace":    map[string]any{"diagnostics": map[string]any{"refreshSupport": true}},
	}, nil)
	if _, ok := result["capabilities"].(map[string]any)["diagnosticProvider"]; !ok {
		t.Fatal("diagnosticProvider not advertised")
	}
	uri := "file:///pull.py"
	c.open(uri, leakyDataset)
	var report struct {
		Kind     string          `json:"kind"`
		ResultID string          `json:"resultId"`
		Items    []lspDiagnostic `json:"items"`
	}
	params := map[string]any{"textDocument": map[string]any{"uri": uri}}
	if err := c.request("textDocument/diagnostic", params, &report); err != nil || report.Kind != "full" || len(report.Items) != 2 {
		t.Fatalf("pull: %+v %v", report, err)
	}
	params["previousResultId"] = report.ResultID
	if err := c.request("textDocument/diagnostic", params, &report); err != nil || report.Kind != "unchanged" {
		t.Errorf("unchanged pull: %+v %v", report, err)
	}
	// New settings analyse the same version again: the client, asked to
	// pull again, gets the new report, not "unchanged" for the version.
	c.notify("workspace/didChangeConfiguration", map[string]any{"settings": map[string]any{"vramlint": map[string]any{"ignore": []string{"GPU001"}}}})
	refresh := c.await("a refresh", func(m message) bool { return m.Method == "workspace/diagnostic/refresh" })
	c.send(map[string]any{"jsonrpc": "2.0", "id": refresh.ID, "result": nil})
	report.Items = nil
	if err := c.request("textDocument/diagnostic", params, &report); err != nil || report.Kind != "full" || len(report.Items) != 1 || report.Items[0].Code != "GPU005" {
		t.Errorf("pull after new settings: %s %v, want GPU005's report alone (%v)", report.Kind, report.Items, err)
	}
	c.mu.Lock()
	for _, m := range c.msgs {
		if m.Method == "textDocument/publishDiagnostics" {
			t.Errorf("pushed to a pull client: %s", m.raw)
		}
	}
	c.mu.Unlock()
}

func TestFixAllNoqaAndHover(t *testing.T) {
	c := startServer(t, Options{})
	c.initialize(map[string]any{}, nil)
	uri := "untitled:Untitled-1"
	text := `import torch

model = torch.nn.Linear(2, 1)
total = 0.0
for step in range(3):
    loss = model(torch.randn(1, 2)).sum()
    loss.backward()
    total += loss
    torch.cuda.empty_cache()  # noqa: GPU001
print(total)
`
	c.open(uri, text)
	diags := c.diagnostics(uri, 1)
	if len(diags) != 2 || diags[0].Code != "GPU003" || diags[1].Code != "GPU005" {
		t.Fatalf("diagnostics of an untitled buffer: %+v", diags)
	}
	// An automatic trigger gets quick fixes only, unless it names the
	// kind: VS Code's codeActionsOnSave asks for source.fixAll.vramlint
	// with triggerKind 2, and must get the edit.
	for _, a := range c.codeActions(uri, diags[0].Range, nil, 2) {
		if a.Kind != "quickfix" {
			t.Errorf("automatic trigger returned %s", a.Kind)
		}
	}
	if onSave := c.codeActions(uri, lspRange{}, []string{"source.fixAll.vramlint"}, 2); len(onSave) != 1 || len(onSave[0].Edit.Changes[uri]) == 0 {
		t.Errorf("fix-all on save (automatic, only source.fixAll.vramlint): %+v", onSave)
	}
	actions := c.codeActions(uri, diags[0].Range, nil, 0)
	var titles []string
	preferred := ""
	for _, a := range actions {
		titles = append(titles, a.Kind+": "+a.Title)
		if a.IsPreferred {
			preferred = a.Title
		}
	}
	want := []string{
		// The safe fix first, and preferred.
		"quickfix: vramlint (GPU003): Accumulate `loss.detach()`",
		"quickfix: vramlint (GPU003): Accumulate `loss.item()` (unsafe)",
		"quickfix: vramlint (GPU003): Disable GPU003 for this line",
		// No fix-all: this client cannot resolve edits, and did not ask
		// for it by kind (see TestFixAllIsResolvedLazily).
	}
	if strings.Join(titles, "\n") != strings.Join(want, "\n") || preferred != "vramlint (GPU003): Accumulate `loss.detach()`" {
		t.Errorf("actions:\n%s\npreferred: %q", strings.Join(titles, "\n"), preferred)
	}
	// source.fixAll applies the safe fixes only (unsafe fixes are off).
	all := c.codeActions(uri, lspRange{}, []string{"source.fixAll"}, 0)
	if len(all) != 1 || all[0].Kind != "source.fixAll.vramlint" {
		t.Fatalf("fixAll: %+v", all)
	}
	v := c.applyAction(uri, analysis.UTF16, all[0])
	diags = c.diagnostics(uri, v)
	if !strings.Contains(c.texts[uri], "total += loss.detach()") || len(diags) != 1 {
		t.Errorf("after fixAll:\n%s\n%+v", c.texts[uri], diags)
	}
	// Hover over the code in the noqa comment, then over the diagnostic.
	line := strings.Index(c.texts[uri], "GPU001")
	var hover struct {
		Contents struct{ Kind, Value string }
	}
	if err := c.request("textDocument/hover", map[string]any{"textDocument": map[string]any{"uri": uri}, "position": clientPosition(c.texts[uri], line+2, analysis.UTF16)}, &hover); err != nil ||
		hover.Contents.Kind != "markdown" || !strings.HasPrefix(hover.Contents.Value, "**GPU001** `device-move-in-dataset`\n\nA Dataset or collate function") {
		t.Errorf("hover on a noqa code: %+v %v", hover, err)
	}
	if err := c.request("textDocument/hover", map[string]any{"textDocument": map[string]any{"uri": uri}, "position": diags[0].Range.Start}, &hover); err != nil ||
		!strings.HasPrefix(hover.Contents.Value, "**GPU005** `empty-cache-in-loop` · warning\n\nIt frees no tensor that is still referenced") ||
		!strings.Contains(hover.Contents.Value, "synchronises the device") || strings.Contains(hover.Contents.Value, "\n#") {
		t.Errorf("hover on a diagnostic: %+v %v", hover, err)
	}
	// The noqa action extends the existing comment; the diagnostic goes.
	var noqa lspCodeAction
	for _, a := range c.codeActions(uri, diags[0].Range, []string{"quickfix"}, 0) {
		if strings.Contains(a.Title, "Disable GPU005") {
			noqa = a
		}
	}
	v = c.applyAction(uri, analysis.UTF16, noqa)
	if diags := c.diagnostics(uri, v); len(diags) != 0 || !strings.Contains(c.texts[uri], "# noqa: GPU001, GPU005\n") {
		t.Errorf("after the noqa action:\n%s\n%+v", c.texts[uri], diags)
	}
}

func TestWorkspaceEditShapes(t *testing.T) {
	for _, documentChanges := range []bool{false, true} {
		c := startServer(t, Options{})
		c.initialize(map[string]any{"workspace": map[string]any{"workspaceEdit": map[string]any{"documentChanges": documentChanges}}}, nil)
		uri := "file:///shape.py"
		c.open(uri, leakyDataset)
		diags := c.diagnostics(uri, 1)
		a := c.codeActions(uri, diags[1].Range, nil, 0)[0]
		if documentChanges {
			if len(a.Edit.DocumentChanges) != 1 || a.Edit.DocumentChanges[0].TextDocument.Version != 1 || a.Edit.Changes != nil {
				t.Errorf("documentChanges expected: %+v", a.Edit)
			}
		} else if len(a.Edit.Changes[uri]) == 0 || a.Edit.DocumentChanges != nil {
			t.Errorf("plain changes expected (Neovim 0.7): %+v", a.Edit)
		}
	}
}

// Neovim 0.7 echoes diagnostics with byte columns; actions are matched by
// range overlap, so a request in byte columns still finds them.
func TestCodeActionRangeInByteColumns(t *testing.T) {
	c := startServer(t, Options{})
	c.initialize(map[string]any{}, nil)
	uri := "file:///bytes.py"
	c.open(uri, unicodeSource)
	c.diagnostics(uri, 1)
	off := strings.Index(unicodeSource, ".cuda()")
	bytePos := clientPosition(unicodeSource, off, analysis.UTF8)
	actions := c.codeActions(uri, lspRange{bytePos, bytePos}, nil, 0)
	if len(actions) == 0 {
		t.Error("no actions for a range given in byte columns")
	}
}

func TestCloseClearsAndConfigurationRepublishes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.py")
	uri := "file://" + path
	c := startServer(t, Options{})
	c.initialize(map[string]any{}, map[string]any{"settings": map[string]any{"ignore": []string{"GPU001"}}})
	c.open(uri, leakyDataset)
	if diags := c.diagnostics(uri, 1); len(diags) != 1 || diags[0].Code != "GPU005" {
		t.Fatalf("initializationOptions ignore: %+v", diags)
	}
	c.notify("workspace/didChangeConfiguration", map[string]any{"settings": map[string]any{"vramlint": map[string]any{"ignore": []string{"GPU005"}, "severity": map[string]any{"GPU001": "hint"}}}})
	diags := c.diagnostics(uri, 1)
	if len(diags) != 1 || diags[0].Code != "GPU001" || diags[0].Severity != 4 {
		t.Fatalf("after didChangeConfiguration: %+v", diags)
	}
	// pyproject.toml applies under the editor's settings.
	os.WriteFile(filepath.Join(dir, "pyproject.toml"), []byte("[tool.vramlint]\nselect = [\"GPU005\"]\n"), 0o644)
	c.notify("workspace/didChangeConfiguration", map[string]any{"settings": map[string]any{}})
	if diags := c.diagnostics(uri, 1); len(diags) != 1 || diags[0].Code != "GPU005" {
		t.Fatalf("pyproject.toml select: %+v", diags)
	}
	c.notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": uri}})
	m := c.await("clearing publish", func(m message) bool {
		return m.Method == "textDocument/publishDiagnostics" && strings.Contains(string(m.Params), `"diagnostics":[]`)
	})
	if strings.Contains(m.raw, "null") {
		t.Errorf("clearing must send an empty array: %s", m.raw)
	}
}

func TestBrokenConfigurationIsShownOnce(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "pyproject.toml"), []byte("[tool.vramlint]\nselct = 1\n"), 0o644)
	c := startServer(t, Options{})
	c.initialize(map[string]any{}, nil)
	for i, name := range []string{"a.py", "b.py"} {
		uri := "file://" + filepath.Join(dir, name)
		c.open(uri, leakyDataset)
		if diags := c.diagnostics(uri, 1); len(diags) != 2 {
			t.Errorf("file %d: linting must go on with the defaults: %+v", i, diags)
		}
	}
	c.await("showMessage", func(m message) bool {
		return m.Method == "window/showMessage" && strings.Contains(string(m.Params), "selct")
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.msgs {
		if m.Method == "window/showMessage" {
			t.Errorf("shown twice: %s", m.raw)
		}
	}
}

func TestExitsWhenEditorProcessDies(t *testing.T) {
	editor := exec.Command("sleep", "60")
	if err := editor.Start(); err != nil {
		t.Skip("no sleep command")
	}
	c := startServer(t, Options{ParentPollInterval: 20 * time.Millisecond})
	if err := c.request("initialize", map[string]any{"processId": editor.Process.Pid, "capabilities": map[string]any{}}, nil); err != nil {
		t.Fatal(err)
	}
	editor.Process.Kill()
	editor.Wait()
	select {
	case code := <-c.exit:
		if code != 1 {
			t.Errorf("status %d, want 1", code)
		}
	case <-time.After(hungAfter):
		t.Fatal("the server outlived its editor")
	}
}

func TestHandlerPanicsAreAnsweredWithInternalError(t *testing.T) {
	requestHandlers["test/panicWhileDecoding"] = func(*Server, json.RawMessage) (requestWork, error) { panic("decode") }
	requestHandlers["test/panicWhileWorking"] = func(*Server, json.RawMessage) (requestWork, error) {
		return func(context.Context) (any, error) { panic("work") }, nil
	}
	t.Cleanup(func() {
		delete(requestHandlers, "test/panicWhileDecoding")
		delete(requestHandlers, "test/panicWhileWorking")
	})
	c := startServer(t, Options{})
	c.initialize(map[string]any{}, nil)
	for _, method := range []string{"test/panicWhileDecoding", "test/panicWhileWorking"} {
		if err := c.request(method, map[string]any{}, nil); err == nil || err.Code != -32603 {
			t.Errorf("%s: %v, want InternalError", method, err)
		}
	}
	uri := "file:///after.py"
	c.open(uri, leakyDataset)
	if diags := c.diagnostics(uri, 1); len(diags) != 2 {
		t.Errorf("the server stopped working after a panic: %+v", diags)
	}
}

func TestFixAllWithUnsafeFixesEnabled(t *testing.T) {
	c := startServer(t, Options{})
	c.initialize(map[string]any{}, map[string]any{"unsafeFixes": true, "debounce": 0})
	uri := "file:///unsafe.py"
	// The loop is over a DataLoader of D, so GPU001's fix can move the
	// batch there (with leakyDataset's unknown `loader` it is advice only).
	c.open(uri, strings.Replace(leakyDataset, "for batch in loader:", "loader = DataLoader(D(), num_workers=2)\nfor batch in loader:", 1))
	c.diagnostics(uri, 1)
	all := c.codeActions(uri, lspRange{}, []string{"source"}, 0)
	if len(all) != 1 {
		t.Fatalf("fixAll: %+v", all)
	}
	v := c.applyAction(uri, analysis.UTF16, all[0])
	if diags := c.diagnostics(uri, v); len(diags) != 0 || strings.Contains(c.texts[uri], ".cuda()\n") ||
		!strings.Contains(c.texts[uri], "batch = batch.cuda(non_blocking=True)") {
		t.Errorf("unsafe fixes were not applied:\n%s\n%+v", c.texts[uri], diags)
	}
}

// Numbers that protocol v0.12.0's types cannot hold (positions past 2^32,
// versions past 2^31, negative or fractional values) are clamped, so the
// change is applied rather than dropped; a change that cannot be read at
// all drops the document and says so, rather than analysing a stale text.
func TestOutOfRangeNumbersInChanges(t *testing.T) {
	c := startServer(t, Options{})
	c.initialize(map[string]any{}, nil)
	uri := "file:///numbers.py"
	c.open(uri, "x = 1\n")
	c.diagnostics(uri, 1)
	c.notify("textDocument/didChange", map[string]any{
		"textDocument": map[string]any{"uri": uri, "version": int64(1) << 40},
		"contentChanges": []any{
			map[string]any{"range": map[string]any{
				"start": map[string]any{"line": int64(1) << 33, "character": -4},
				"end":   map[string]any{"line": 1e300, "character": 2.5},
			}, "text": "y = 2\n"},
		},
	})
	c.diagnostics(uri, math.MaxInt32)
	c.srv.mu.Lock()
	got := string(c.srv.docs[uri].snap.src)
	c.srv.mu.Unlock()
	if got != "x = 1\ny = 2\n" {
		t.Errorf("text after a clamped change: %q", got)
	}
	c.notify("textDocument/didChange", map[string]any{
		"textDocument":   map[string]any{"uri": uri, "version": 3},
		"contentChanges": []any{map[string]any{"range": "not a range", "text": "z"}},
	})
	c.await("the message that the document was dropped", func(m message) bool {
		return m.Method == "window/showMessage" && strings.Contains(string(m.Params), "reopen")
	})
	c.await("diagnostics cleared", func(m message) bool {
		return m.Method == "textDocument/publishDiagnostics" && strings.Contains(string(m.Params), `"diagnostics":[]`)
	})
	c.srv.mu.Lock()
	_, open := c.srv.docs[uri]
	c.srv.mu.Unlock()
	if open {
		t.Error("the document whose change could not be read is still analysed")
	}
	// Reopening it starts over.
	c.open(uri, leakyDataset)
	if diags := c.diagnostics(uri, 1); len(diags) != 2 {
		t.Errorf("after reopening: %+v", diags)
	}
}

// URIs that do not map to a path (bad escapes, other schemes) are opened
// and analysed from their text.
func TestURIsWithoutAPath(t *testing.T) {
	c := startServer(t, Options{})
	c.initialize(map[string]any{}, nil)
	for _, uri := range []string{"file:///a%zz.py", "untitled:Untitled-1", "file://", "%%%", "vscode-notebook-cell:/x.ipynb#W1"} {
		c.open(uri, leakyDataset)
		if diags := c.diagnostics(uri, 1); len(diags) != 2 {
			t.Errorf("%s: %+v", uri, diags)
		}
	}
}

func TestFilePath(t *testing.T) {
	for uri, want := range map[string]string{
		"file:///home/u/a%20b.py":     "/home/u/a b.py",
		"file://localhost/x.py":       "/x.py",
		"file:///a%zz.py":             "",
		"untitled:Untitled-1":         "",
		"file://server/share/x.py":    "//server/share/x.py",
		"FILE:///x.py":                "/x.py",
		"file:///tmp/%E4%B8%AD.py":    "/tmp/中.py",
		"file:///tmp/q.py?query#frag": "/tmp/q.py",
	} {
		got, ok := filePath(uri)
		if got != want || ok != (want != "") {
			t.Errorf("filePath(%q) = %q, %v; want %q", uri, got, ok, want)
		}
	}
}

// Fix-all reanalyses the file in rounds: a request at the cursor lists it
// without an edit for a client that resolves edits, and codeAction/resolve
// computes it; for a version that is gone, resolve answers ContentModified.
func TestFixAllIsResolvedLazily(t *testing.T) {
	c := startServer(t, Options{})
	c.initialize(map[string]any{"textDocument": map[string]any{"codeAction": map[string]any{
		"dataSupport": true, "resolveSupport": map[string]any{"properties": []string{"edit"}},
	}}}, nil)
	uri := "file:///lazy.py"
	text := "import torch\n\nmodel = torch.nn.Linear(2, 1)\ntotal = 0.0\nfor step in range(3):\n    loss = model(torch.randn(1, 2)).sum()\n    loss.backward()\n    total += loss\nprint(total)\n"
	c.open(uri, text)
	diags := c.diagnostics(uri, 1)
	var raw []json.RawMessage
	if err := c.request("textDocument/codeAction", map[string]any{
		"textDocument": map[string]any{"uri": uri}, "range": diags[0].Range, "context": map[string]any{"diagnostics": []any{}},
	}, &raw); err != nil {
		t.Fatal(err.Error())
	}
	var fixAll json.RawMessage
	for _, r := range raw {
		var a lspCodeAction
		if err := json.Unmarshal(r, &a); err != nil {
			t.Fatal(err)
		}
		if a.Kind == "source.fixAll.vramlint" {
			fixAll = r
			if a.Edit.Changes != nil || a.Edit.DocumentChanges != nil || !strings.Contains(string(r), `"data"`) {
				t.Errorf("fix-all listed with its edit, or without data: %s", r)
			}
		}
	}
	if fixAll == nil {
		t.Fatalf("no fix-all among %s", raw)
	}
	var resolved lspCodeAction
	if err := c.request("codeAction/resolve", fixAll, &resolved); err != nil {
		t.Fatal(err.Error())
	}
	v := c.applyAction(uri, analysis.UTF16, resolved)
	if diags := c.diagnostics(uri, v); len(diags) != 0 || !strings.Contains(c.texts[uri], "total += loss.detach()") {
		t.Errorf("after the resolved fix-all:\n%s\n%+v", c.texts[uri], diags)
	}
	// The action was offered for version 1.
	if err := c.request("codeAction/resolve", fixAll, &resolved); err == nil || err.Code != -32801 {
		t.Errorf("resolving for a version that is gone: %v", err)
	}
}

// Fix-all on save after typing through versions that do not parse: "#"
// typed before a docstring comments its opening quotes out, and its
// closing ones open a string that takes in the rest of the file, until
// the line is ended. An editor asks for diagnostics of some of those
// versions and cancels some of the requests (VS Code pulls after each
// batch of keys), so the version saved is analysed on top of whichever
// broken one was analysed last. Whatever was analysed on the way, fix-all
// on the saved version is the fix-all of that text opened afresh. (A CI
// run of the VS Code test once saved such a file without its safe fix.)
func TestFixAllOnSaveAfterVersionsThatDoNotParse(t *testing.T) {
	c := startServer(t, Options{})
	c.initialize(map[string]any{"textDocument": map[string]any{"diagnostic": map[string]any{}}}, nil)
	text := `"""Trains a small model.

    python3 train.py
"""
import torch

model = torch.nn.Linear(2, 1)
total = 0.0
for step in range(3):
    loss = model(torch.randn(1, 2)).sum()
    loss.backward()
    total += loss
print(total)
`
	const typed = "# saved\n"
	fixAll := func(uri string) string {
		t.Helper()
		actions := c.codeActions(uri, lspRange{End: clientPosition(c.texts[uri], len(c.texts[uri]), analysis.UTF16)}, []string{"source.fixAll.vramlint"}, 2)
		if len(actions) != 1 {
			t.Fatalf("fix-all on save of %s: %d actions", uri, len(actions))
		}
		edits := actions[0].edits(uri)
		sortDesc(edits, c.texts[uri], analysis.UTF16)
		fixed := c.texts[uri]
		for _, e := range edits {
			start, end := clientOffset(fixed, e.Range.Start, analysis.UTF16), clientOffset(fixed, e.Range.End, analysis.UTF16)
			fixed = fixed[:start] + e.NewText + fixed[end:]
		}
		return fixed
	}
	fresh := "file:///fresh.py"
	c.open(fresh, typed+text)
	want := fixAll(fresh)
	if !strings.Contains(want, "total += loss.detach()") {
		t.Fatalf("the fresh fix-all lacks the safe fix, the test would prove nothing:\n%s", want)
	}
	// Each bit of pulled says whether the version after that key is
	// analysed (bit 0: after "#"); odd masks cancel their pulls at once.
	for pulled := 0; pulled < 1<<(len(typed)-1); pulled++ {
		uri := fmt.Sprintf("file:///typed%d.py", pulled)
		c.open(uri, text)
		c.request("textDocument/diagnostic", map[string]any{"textDocument": map[string]any{"uri": uri}}, nil)
		for i := range len(typed) {
			at := clientPosition(c.texts[uri], i, analysis.UTF16)
			c.change(uri, analysis.UTF16, lspTextEdit{Range: lspRange{at, at}, NewText: typed[i : i+1]})
			if i == len(typed)-1 || pulled&(1<<i) == 0 {
				continue
			}
			c.nextID++
			c.send(map[string]any{"jsonrpc": "2.0", "id": c.nextID, "method": "textDocument/diagnostic", "params": map[string]any{"textDocument": map[string]any{"uri": uri}}})
			if pulled%2 == 1 {
				c.notify("$/cancelRequest", map[string]any{"id": c.nextID})
			}
		}
		if got := fixAll(uri); got != want {
			t.Fatalf("fix-all on save after the pulls of %07b:\n%s\nwant:\n%s", pulled, got, want)
		}
		c.notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": uri}})
	}
}

// lockedBuffer is a log the server writes from several goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// logLevel "debug" (the VS Code extension's vramlint.logLevel) logs each
// message with its time; the default does not; a bad level is refused.
func TestLogLevelDebugTimesMessages(t *testing.T) {
	var log lockedBuffer
	c := startServer(t, Options{Log: &log})
	c.initialize(map[string]any{}, map[string]any{"logLevel": "info"})
	uri := "file:///log.py"
	c.open(uri, leakyDataset)
	c.diagnostics(uri, 1)
	if strings.Contains(log.String(), "textDocument/didOpen:") {
		t.Errorf("logLevel info logs messages:\n%s", log.String())
	}
	c.notify("workspace/didChangeConfiguration", map[string]any{"settings": map[string]any{"logLevel": "debug"}})
	c.codeActions(uri, lspRange{}, nil, 0) // logged before its reply
	if !regexp.MustCompile(`textDocument/codeAction: [0-9.]+ ms`).MatchString(log.String()) {
		t.Errorf("logLevel debug does not time a code action:\n%s", log.String())
	}
	c.notify("workspace/didChangeConfiguration", map[string]any{"settings": map[string]any{"logLevel": "loud"}})
	c.await("showMessage", func(m message) bool {
		return m.Method == "window/logMessage" && strings.Contains(string(m.Params), "logLevel: must be error, warning, info or debug")
	})
}

// A client that answers workspace/configuration (VS Code) is asked for each
// workspace folder's settings; a folder's settings apply to its files only,
// over the ones sent for all, and a null value leaves the key to
// pyproject.toml. A changed configuration is asked for again.
func TestSettingsPerWorkspaceFolder(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	c := startServer(t, Options{})
	folders := []map[string]any{{"uri": "file://" + a, "name": "a"}, {"uri": "file://" + b, "name": "b"}}
	if err := c.request("initialize", map[string]any{
		"processId": nil, "rootUri": nil, "workspaceFolders": folders,
		"capabilities":          map[string]any{"workspace": map[string]any{"configuration": true}},
		"initializationOptions": map[string]any{"severity": map[string]any{"GPU005": "hint"}},
	}, nil); err != nil {
		t.Fatal(err)
	}
	c.notify("initialized", map[string]any{})
	answer := func(perFolder ...any) {
		req := c.await("workspace/configuration", func(m message) bool { return m.Method == "workspace/configuration" })
		var p struct {
			Items []struct{ ScopeURI, Section string }
		}
		json.Unmarshal(req.Params, &p)
		if len(p.Items) != 2 || p.Items[0].ScopeURI != "file://"+a || p.Items[1].ScopeURI != "file://"+b || p.Items[0].Section != "vramlint" {
			t.Fatalf("workspace/configuration items: %s", req.Params)
		}
		c.send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": perFolder})
	}
	// VS Code answers with every key of the section, unset ones null.
	answer(map[string]any{"ignore": []string{"GPU005"}, "select": nil, "path": ""}, map[string]any{"ignore": nil})
	inA, inB := "file://"+filepath.Join(a, "x.py"), "file://"+filepath.Join(b, "x.py")
	c.open(inA, leakyDataset)
	c.open(inB, leakyDataset)
	awaitCodes(c, inA, "GPU001/2")
	awaitCodes(c, inB, "GPU001/2 GPU005/4")
	// A change of configuration: asked again; folder b now ignores GPU001.
	c.notify("workspace/didChangeConfiguration", map[string]any{"settings": nil})
	answer(map[string]any{}, map[string]any{"ignore": []string{"GPU001"}})
	awaitCodes(c, inA, "GPU001/2 GPU005/4")
	awaitCodes(c, inB, "GPU005/4")
}

// A display-only fix is advice, not an edit: no code action offers it
// (GPU001 whose loader goes to a library trainer), only the noqa one.
func TestDisplayOnlyFixIsNotOffered(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "analysis", "rules", "testdata", "GPU001", "fix_escapes.py"))
	if err != nil {
		t.Fatal(err)
	}
	c := startServer(t, Options{})
	c.initialize(map[string]any{}, nil)
	uri := "file:///escapes.py"
	c.open(uri, string(src))
	diags := c.diagnostics(uri, 1)
	if len(diags) != 2 {
		t.Fatalf("diagnostics: %+v", diags)
	}
	var titles []string
	for _, a := range c.codeActions(uri, diags[0].Range, nil, 0) {
		titles = append(titles, a.Title)
	}
	if strings.Join(titles, "\n") != "vramlint (GPU001): Disable GPU001 for this line" {
		t.Errorf("actions: %q", titles)
	}
}

// A document is analysed for its pushed diagnostics one version at a time:
// the versions typed while an analysis runs wait for it, all but the last
// give up, and the last is analysed and published. Before, each keystroke
// started one more analysis beside the running ones, so a file whose
// analysis was slow took every core while the user typed.
func TestAnalysesOfADocumentRunOneAtATime(t *testing.T) {
	var running, most, runs atomic.Int32
	release := make(chan struct{})
	blocking := &analysis.Rule{Code: "GPU997", Name: "blocking", DefaultSeverity: analysis.SeverityHint, Run: func(p *analysis.Pass) {
		if !strings.Contains(string(p.Src), "BLOCK") {
			return
		}
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		runs.Add(1)
		<-release // the first analysis waits here; the later ones find it closed
		running.Add(-1)
	}}
	c := startServer(t, Options{Rules: append(rules.All(), blocking)})
	c.initialize(map[string]any{}, nil)
	uri := "file:///block.py"
	c.open(uri, "# BLOCK\n"+leakyDataset)
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(hungAfter); !cond(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("never: %s", what)
			}
		}
	}
	eventually("the first analysis runs", func() bool { return runs.Load() == 1 })
	var last int
	for range 5 {
		last = c.change(uri, analysis.UTF16, lspTextEdit{Range: lspRange{lspPosition{1, 0}, lspPosition{1, 0}}, NewText: "#"})
	}
	eventually("the server has the last version", func() bool {
		c.srv.mu.Lock()
		defer c.srv.mu.Unlock()
		d := c.srv.docs[uri]
		return d != nil && d.snap.version == int32(last)
	})
	close(release)
	if diags := c.diagnostics(uri, last); len(diags) == 0 {
		t.Error("no diagnostics for the last version")
	}
	if n := most.Load(); n != 1 {
		t.Errorf("%d analyses of the document ran at once, want 1", n)
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("%d versions analysed, want 2: the first and the last of the ones typed while it ran", n)
	}
}
