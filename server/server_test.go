package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/rules"
	"github.com/vramlint/vramlint/codeactions"
)

const leakyDataset = `import torch
from torch.utils.data import DataLoader, Dataset


class D(Dataset):
    def __getitem__(self, i):
        return torch.ones(1).cuda()


for batch in loader:
    torch.cuda.empty_cache()
`

func TestLifecycle(t *testing.T) {
	c := startServer(t, Options{})
	if err := c.request("textDocument/hover", map[string]any{}, nil); err == nil || err.Code != -32002 {
		t.Errorf("a request before initialize: %v, want ServerNotInitialized", err)
	}
	result := c.initialize(map[string]any{}, nil)
	caps := result["capabilities"].(map[string]any)
	if caps["positionEncoding"] != "utf-16" || caps["textDocumentSync"].(map[string]any)["change"] != float64(2) {
		t.Errorf("capabilities: %v", caps)
	}
	if _, ok := caps["diagnosticProvider"]; ok {
		t.Error("diagnosticProvider advertised to a client without pull support")
	}
	if err := c.request("initialize", map[string]any{"capabilities": map[string]any{}}, nil); err == nil || err.Code != -32600 {
		t.Errorf("a second initialize: %v", err)
	}
	if err := c.request("textDocument/frobnicate", map[string]any{}, nil); err == nil || err.Code != -32601 {
		t.Errorf("unknown method: %v, want MethodNotFound", err)
	}
	c.notify("$/unknownNotification", map[string]any{"x": 1})
	if err := c.request("textDocument/hover", map[string]any{"textDocument": map[string]any{"uri": "file:///nope.py"}, "position": map[string]any{"line": 0, "character": 0}}, nil); err == nil || err.Code == 0 {
		t.Errorf("a request for a document that is not open: %v (errors never have code 0)", err)
	}
	if code := c.shutdownAndExit(); code != 0 {
		t.Errorf("exit after shutdown: status %d, want 0", code)
	}
}

func TestExitWithoutShutdown(t *testing.T) {
	c := startServer(t, Options{})
	c.initialize(map[string]any{}, nil)
	c.notify("exit", nil)
	if code := <-c.exit; code != 1 {
		t.Errorf("exit without shutdown: status %d, want 1", code)
	}
}

func TestStdinClosedEndsServer(t *testing.T) {
	c := startServer(t, Options{})
	c.initialize(map[string]any{}, nil)
	c.in.Close()
	if code := <-c.exit; code != 1 {
		t.Errorf("stdin closed without shutdown: status %d, want 1", code)
	}
}

// The article's program, from open to fixed through code actions alone.
func TestArticleProgramFixedThroughCodeActions(t *testing.T) {
	src := seedProgram(t)
	c := startServer(t, Options{})
	c.initialize(map[string]any{"textDocument": map[string]any{"publishDiagnostics": map[string]any{"relatedInformation": true}}}, nil)
	uri := "file:///work/dataloader_leak.py"
	c.open(uri, string(src))
	diags := c.diagnostics(uri, 1)
	var codes []string
	for _, d := range diags {
		codes = append(codes, d.Code)
	}
	if strings.Join(codes, " ") != "GPU001 GPU001 GPU005" {
		t.Fatalf("diagnostics: %v", codes)
	}
	d := diags[0]
	if d.Range.Start != (lspPosition{41, 35}) || d.Source != "vramlint" || d.Severity != 1 ||
		d.CodeDescription == nil || !strings.HasSuffix(d.CodeDescription.Href, "GPU001.md") ||
		len(d.Related) != 1 || d.Related[0].Location.Range.Start.Line != 50 || d.Message != "`.cuda()` in `CustomDataset.__getitem__` runs in 4 DataLoader workers; move it to the training loop" {
		t.Errorf("GPU001: %+v", d)
	}
	var data codeactions.FixData
	if err := json.Unmarshal(d.Data, &data); err != nil || data.Version != 1 || len(data.Fixes) != 1 || len(data.Fixes[0].Edits) < 3 {
		t.Errorf("data: %s (%v)", d.Data, err)
	}

	// An edit first: a comment line at the top; diagnostics follow it.
	v := c.change(uri, analysis.UTF16, lspTextEdit{Range: lspRange{}, NewText: "# edited\n"})
	diags = c.diagnostics(uri, v)
	if len(diags) != 3 || diags[0].Range.Start.Line != 42 {
		t.Fatalf("after the edit: %+v", diags)
	}

	// Fix each problem through its preferred quick fix.
	for len(diags) > 0 {
		actions := c.codeActions(uri, diags[0].Range, nil, 0)
		// Every rule's main fix is preferred, unsafe ones (GPU001's,
		// GPU005's) too, or VS Code's Auto Fix would do nothing.
		if len(actions) == 0 || actions[0].Kind != "quickfix" || !actions[0].IsPreferred {
			t.Fatalf("no preferred quick fix for %s: %+v", diags[0].Code, actions)
		}
		v = c.applyAction(uri, analysis.UTF16, actions[0])
		diags = c.diagnostics(uri, v)
	}
	// The result is what `vramlint check --fix --unsafe-fixes` writes.
	runner := &analysis.Runner{Rules: rules.All()}
	want, err := codeactions.FixAll(context.Background(), runner, "x.py", append([]byte("# edited\n"), src...), nil, codeactions.Preferred(true))
	if err != nil {
		t.Fatal(err)
	}
	if c.texts[uri] != string(want.Source) {
		t.Errorf("fixed through code actions:\n%s\nwant:\n%s", c.texts[uri], want.Source)
	}
	if !strings.Contains(c.texts[uri], "images = images.to(device, non_blocking=True)") {
		t.Errorf("the loop does not move the batch:\n%s", c.texts[uri])
	}
}

// seedProgram is the article's program (testdata/seed), the leaky
// training script the tests edit and fix.
func seedProgram(t *testing.T) []byte {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "testdata", "seed", "dataloader_leak.py"))
	if err != nil {
		t.Fatal(err)
	}
	return src
}
