package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/rules"
	"github.com/vramlint/vramlint/analysis/workspace"
)

const (
	// crossData is a Dataset that moves its samples to the GPU; whether
	// that runs in workers is for train.py to say.
	crossData = `import torch
from torch.utils.data import Dataset


class Squares(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, idx):
        x = torch.tensor([float(idx)])
        return x.cuda(), (x * x).cuda()
`
	crossTrain = `import torch
from torch.utils.data import DataLoader

from data import Squares


def train(model, loader, device):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()


def main():
    device = torch.device("cuda")
    model = torch.nn.Linear(1, 1).to(device)
    loader = DataLoader(Squares(), batch_size=8, num_workers=WORKERS)
    train(model, loader, device)
`
	// crossCollate is a collate function: it runs in workers only if some
	// DataLoader of the project uses it with workers.
	crossCollate = `import torch


def pad(samples):
    return torch.stack(samples).cuda()
`
	crossCollateUser = `from torch.utils.data import DataLoader

from util import pad

loader = DataLoader(list(range(8)), num_workers=2, collate_fn=pad)
for batch in loader:
    print(batch)
`
)

// startWorkspace starts a server on a workspace folder holding files, with
// the capabilities of a full client, and answers the requests the server
// makes when it starts (the file watcher's registration, the indexing
// progress).
func startWorkspace(t *testing.T, files map[string]string) (*testClient, string) {
	return startWorkspaceWith(t, files, nil, nil)
}

// startWorkspaceWith is startWorkspace with more capabilities (merged at
// the top level) and initializationOptions.
func startWorkspaceWith(t *testing.T, files map[string]string, moreCaps map[string]any, options any) (*testClient, string) {
	t.Helper()
	return startWorkspaceServer(t, Options{}, files, moreCaps, options)
}

// startWorkspaceServer is startWorkspaceWith for a server started with
// opts.
func startWorkspaceServer(t *testing.T, opts Options, files map[string]string, moreCaps map[string]any, options any) (*testClient, string) {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := startServer(t, opts)
	caps := map[string]any{
		"textDocument": map[string]any{"publishDiagnostics": map[string]any{"relatedInformation": true}},
		"workspace": map[string]any{
			"workspaceEdit":         map[string]any{"documentChanges": true},
			"didChangeWatchedFiles": map[string]any{"dynamicRegistration": true},
		},
		"window": map[string]any{"workDoneProgress": true},
	}
	for k, v := range moreCaps {
		caps[k] = v
	}
	c.initializeFolders(caps, options, dir)
	for _, method := range []string{"client/registerCapability", "window/workDoneProgress/create"} {
		req := c.await(method, func(m message) bool { return m.Method == method && m.ID != nil })
		if method == "client/registerCapability" && !strings.Contains(string(req.Params), `"workspace/didChangeWatchedFiles"`) {
			t.Errorf("registration: %s", req.Params)
		}
		c.send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": nil})
	}
	for _, kind := range []string{"begin", "end"} {
		c.await("$/progress "+kind, func(m message) bool {
			return m.Method == "$/progress" && strings.Contains(string(m.Params), `"kind":"`+kind+`"`)
		})
	}
	return c, dir
}

// A Dataset's diagnostics depend on the DataLoader of another file: they
// name it, the fix edits both files, and editing that file re-publishes
// the Dataset's.
func TestCrossFileFindingsAndFix(t *testing.T) {
	c, dir := startWorkspace(t, map[string]string{
		"data.py": crossData, "train.py": strings.ReplaceAll(crossTrain, "WORKERS", "4"),
	})
	dataURI, trainURI := "file://"+filepath.Join(dir, "data.py"), "file://"+filepath.Join(dir, "train.py")
	c.open(dataURI, crossData)
	// Errors: train.py's DataLoader runs them in 4 workers.
	diags := awaitCodes(c, dataURI, "GPU001/1 GPU001/1")
	if len(diags[0].Related) != 1 || diags[0].Related[0].Location.URI != trainURI || diags[0].Related[0].Location.Range.Start.Line != 15 {
		t.Fatalf("related information should point at train.py's DataLoader (line 16): %+v", diags[0].Related)
	}
	if !strings.Contains(diags[0].Message, "4 DataLoader workers") {
		t.Errorf("message: %s", diags[0].Message)
	}

	// The fix: one edit of both files; train.py is not open, so its
	// version is null.
	var raw []json.RawMessage
	if err := c.request("textDocument/codeAction", map[string]any{
		"textDocument": map[string]any{"uri": dataURI}, "range": diags[0].Range, "context": map[string]any{"diagnostics": []any{}},
	}, &raw); err != nil {
		t.Fatal(err)
	}
	var edit struct {
		DocumentChanges []struct {
			TextDocument struct {
				URI     string `json:"uri"`
				Version *int   `json:"version"`
			} `json:"textDocument"`
			Edits []lspTextEdit `json:"edits"`
		} `json:"documentChanges"`
	}
	for _, r := range raw {
		var a struct {
			Title string
			Edit  json.RawMessage
		}
		json.Unmarshal(r, &a)
		if strings.Contains(a.Title, "Move the device transfer") {
			json.Unmarshal(a.Edit, &edit)
		}
	}
	if len(edit.DocumentChanges) != 2 {
		t.Fatalf("want one edit of data.py and train.py, got %s", raw)
	}
	own, other := edit.DocumentChanges[0], edit.DocumentChanges[1]
	if own.TextDocument.URI != dataURI || own.TextDocument.Version == nil || *own.TextDocument.Version != 1 ||
		other.TextDocument.URI != trainURI || other.TextDocument.Version != nil {
		t.Fatalf("documentChanges: %+v", edit.DocumentChanges)
	}
	var inserted strings.Builder
	for _, e := range other.Edits {
		inserted.WriteString(e.NewText)
	}
	if !strings.Contains(inserted.String(), "x = x.to(device, non_blocking=True)") || !strings.Contains(inserted.String(), "pin_memory=True") {
		t.Errorf("train.py's edits: %+v", other.Edits)
	}

	// train.py changes on disk behind the server's back (no watcher): the
	// fix is computed again on its new text, not applied to the old lines.
	trainPath := filepath.Join(dir, "train.py")
	if err := os.WriteFile(trainPath, []byte("# edited elsewhere\n"+strings.ReplaceAll(crossTrain, "WORKERS", "4")), 0o644); err != nil {
		t.Fatal(err)
	}
	offered := false
	for _, a := range c.codeActions(dataURI, diags[0].Range, nil, 0) {
		if strings.Contains(a.Title, "Move the device transfer") {
			offered = true
			for _, dc := range a.Edit.DocumentChanges[1:] {
				// The loop's first statement moved from line 9 to 10.
				if first := dc.Edits[0]; first.Range.Start.Line != 9 || !strings.Contains(first.NewText, "x = x.to(device") {
					t.Errorf("the fix edits train.py's old lines: %+v", dc.Edits)
				}
			}
		}
	}
	if !offered {
		t.Error("the fix is not offered after train.py changed on disk")
	}

	// Open train.py and set num_workers=0: data.py is re-published.
	c.open(trainURI, strings.ReplaceAll(crossTrain, "WORKERS", "4"))
	line := 15
	col := strings.Index(strings.Split(crossTrain, "\n")[line], "WORKERS")
	c.change(trainURI, 0, lspTextEdit{Range: lspRange{lspPosition{line, col}, lspPosition{line, col + 1}}, NewText: "0"})
	diags = awaitCodes(c, dataURI, "GPU001/2 GPU001/2")
	if !strings.Contains(diags[0].Message, "one sample at a time") {
		t.Errorf("after num_workers=0: %s", diags[0].Message)
	}
	c.shutdownAndExit()
}

// scoreKeepingOutputs is a helper that keeps every batch's output with its
// graph (GPU002) unless each of its callers runs it under no-grad.
const scoreKeepingOutputs = "import torch\n\n\ndef score(model, loader):\n    outs = []\n    for x in loader:\n" +
	"        outs.append(model(x))\n    return torch.cat(outs).argmax(-1).tolist()\n"

// A helper's finding depends on its callers in other files: while every
// one runs it under no-grad there is none, and an edit of a caller that
// takes its decorator away re-publishes the helper with the finding.
func TestCallersInOtherFilesDecideFindings(t *testing.T) {
	helper := scoreKeepingOutputs
	caller := "import torch\n\nfrom metrics import score\n\n\n@torch.inference_mode()\ndef predict(model, loader):\n" +
		"    return score(model, loader)\n"
	checkCallerDecides(t, "metrics.py", helper, "api.py", caller, "@torch.inference_mode()", "GPU002/2")
}

// The same for a method, called in another file through an attribute of
// the caller (`self.scorer.score(loader)`).
func TestMethodCallersInOtherFilesDecideFindings(t *testing.T) {
	helper := "import torch\n\n\nclass Scorer:\n    def score(self, loader):\n        outs = []\n" +
		"        for x in loader:\n            outs.append(self.model(x))\n        return torch.cat(outs).argmax(-1).tolist()\n"
	caller := "import torch\n\n\nclass App:\n    @torch.no_grad()\n    def predict(self, loader):\n" +
		"        return self.scorer.score(loader)\n"
	checkCallerDecides(t, "net.py", helper, "app.py", caller, "@torch.no_grad()", "GPU002/2")
}

// checkCallerDecides opens the helper's file and then its caller's, whose
// decorator (on a line of its own) is replaced by a comment, which gives
// the helper the findings want, and then put back, which takes them away.
func checkCallerDecides(t *testing.T, helperFile, helper, callerFile, caller, decorator, want string) {
	t.Helper()
	c, dir := startWorkspace(t, map[string]string{helperFile: helper, callerFile: caller})
	helperURI, callerURI := "file://"+filepath.Join(dir, helperFile), "file://"+filepath.Join(dir, callerFile)
	c.open(helperURI, helper)
	awaitCodes(c, helperURI, "")
	c.open(callerURI, caller)
	at := strings.Index(caller, decorator)
	line := strings.Count(caller[:at], "\n")
	col := at - strings.LastIndex(caller[:at], "\n") - 1
	span := func(text string) lspRange {
		return lspRange{lspPosition{line, col}, lspPosition{line, col + len(text)}}
	}
	c.change(callerURI, 0, lspTextEdit{Range: span(decorator), NewText: "# autograd on"})
	awaitCodes(c, helperURI, want)
	c.change(callerURI, 0, lspTextEdit{Range: span("# autograd on"), NewText: decorator})
	awaitCodes(c, helperURI, "")
	c.shutdownAndExit()
}

// A helper's findings that wait for its callers in files not open come
// once those files are read (in the background, see
// workspace.Projects.InBackground), and one whose callers all run it
// under no-grad never shows, not even while they are being read.
func TestFindingsThatWaitForClosedCallers(t *testing.T) {
	loop := "    outs = []\n    for x in loader:\n        outs.append(model(x))\n    return torch.cat(outs).argmax(-1).tolist()\n"
	helper := "import torch\n\n\ndef score(model, loader):\n" + loop + "\n\ndef score_all(model, loader):\n" + loop
	files := map[string]string{
		"metrics.py": helper,
		"api.py": "import torch\n\nfrom metrics import score\n\n\n@torch.inference_mode()\ndef predict(model, loader):\n" +
			"    return score(model, loader)\n",
		"train.py": "from metrics import score_all\n\n\ndef report(model, loader):\n    return score_all(model, loader)\n",
	}
	c, dir := startWorkspace(t, files)
	helperURI := "file://" + filepath.Join(dir, "metrics.py")
	c.open(helperURI, helper)
	var seen []string
	c.await("score_all's finding alone", func(m message) bool {
		if !publicationOf(helperURI)(m) {
			return false
		}
		var p struct{ Diagnostics []lspDiagnostic }
		json.Unmarshal(m.Params, &p)
		lines := []string{}
		for _, d := range p.Diagnostics {
			lines = append(lines, fmt.Sprintf("%s@%d", d.Code, d.Range.Start.Line))
		}
		seen = append(seen, strings.Join(lines, " "))
		return strings.Join(lines, " ") == "GPU002@13"
	})
	for _, published := range seen {
		if strings.Contains(published, "@6") {
			t.Errorf("score's finding was shown, though its one caller runs it under inference_mode: %q", seen)
		}
	}
	c.shutdownAndExit()
}

// openScoreHelper starts a server on a folder holding scoreKeepingOutputs
// as metrics.py, with initializationOptions, and opens the file.
func openScoreHelper(t *testing.T, options map[string]any) (c *testClient, path, uri string) {
	t.Helper()
	c, dir := startWorkspaceWith(t, map[string]string{"metrics.py": scoreKeepingOutputs}, nil, options)
	path = filepath.Join(dir, "metrics.py")
	uri = "file://" + path
	c.open(uri, scoreKeepingOutputs)
	return c, path, uri
}

// Answers about other files that come while a file's version is being
// analysed do not throw that analysis away: its diagnostics are published,
// and then the version is analysed again and published with what waited.
// (A debounce of 1.5 s keeps the open's analysis pending while the
// answers come.)
func TestAnswersDuringAnAnalysisComeAfterIt(t *testing.T) {
	c, path, uri := openScoreHelper(t, map[string]any{"debounce": 1500})
	for opened := false; !opened; time.Sleep(time.Millisecond) {
		c.srv.mu.Lock()
		d := c.srv.docs[uri]
		opened = d != nil && !d.snap.isAnalysed()
		c.srv.mu.Unlock()
	}
	c.srv.answersKnown([]string{path})
	published := publicationOf(uri)
	c.await("diagnostics of the open", published)
	c.await("diagnostics of the analysis after the answers", published)
	c.shutdownAndExit()
}

// A document analysed on save only (over maxLiveFileSize) whose unsaved
// version is not analysed is analysed again at once when answers about
// other files come, as when the index changes: no publication of that
// version is on its way to do it after.
func TestAnswersForADocumentAnalysedOnSave(t *testing.T) {
	c, path, uri := openScoreHelper(t, map[string]any{"maxLiveFileSize": 64})
	published := publicationOf(uri)
	c.await("diagnostics of the open", published)
	version := c.change(uri, 0, lspTextEdit{Range: lspRange{lspPosition{0, 0}, lspPosition{0, 0}}, NewText: "# unsaved\n"})
	for typed := false; !typed; time.Sleep(time.Millisecond) {
		c.srv.mu.Lock()
		typed = c.srv.docs[uri].snap.version == int32(version)
		c.srv.mu.Unlock()
	}
	c.srv.answersKnown([]string{path})
	c.await("diagnostics of the analysis after the answers", published)
	c.shutdownAndExit()
}

// A meter's update in another file decides whether passing it a loss keeps
// every step's graph: an edit there that converts the value first (the
// meter's file changes, the training file does not) takes the finding
// away, and undoing it brings it back.
func TestMeterInAnotherFileDecidesFindings(t *testing.T) {
	meter := "class AverageMeter:\n    def __init__(self):\n        self.sum = 0\n        self.count = 0\n\n" +
		"    def update(self, val, n=1):\n        self.sum += val * n\n        self.count += n\n"
	train := "import torch.nn.functional as F\n\nfrom meters import AverageMeter\n\n\n" +
		"def train(model, loader, optimizer):\n    losses = AverageMeter()\n    for x, y in loader:\n" +
		"        loss = F.mse_loss(model(x), y)\n        optimizer.zero_grad()\n        loss.backward()\n" +
		"        optimizer.step()\n        losses.update(loss, x.size(0))\n    print(losses.sum / losses.count)\n"
	c, dir := startWorkspace(t, map[string]string{"meters.py": meter, "train.py": train})
	meterURI, trainURI := "file://"+filepath.Join(dir, "meters.py"), "file://"+filepath.Join(dir, "train.py")
	c.open(trainURI, train)
	awaitCodes(c, trainURI, "GPU003/3") // an info: the step backpropagates the loss
	c.open(meterURI, meter)
	awaitCodes(c, meterURI, "")
	// Line 6: `        self.sum += val * n` becomes `self.sum += float(val) * n`.
	at := strings.Index(strings.Split(meter, "\n")[6], "val")
	c.change(meterURI, 0, lspTextEdit{Range: lspRange{lspPosition{6, at}, lspPosition{6, at + len("val")}}, NewText: "float(val)"})
	awaitCodes(c, trainURI, "")
	c.change(meterURI, 0, lspTextEdit{Range: lspRange{lspPosition{6, at}, lspPosition{6, at + len("float(val)")}}, NewText: "val"})
	awaitCodes(c, trainURI, "GPU003/3") // an info: the step backpropagates the loss
	c.shutdownAndExit()
}

// A watched file's change adds and removes a finding in an open file: the
// collate function runs in workers only while some file's DataLoader says
// so.
func TestWatchedFileChangesFindings(t *testing.T) {
	c, dir := startWorkspace(t, map[string]string{"util.py": crossCollate})
	utilURI := "file://" + filepath.Join(dir, "util.py")
	c.open(utilURI, crossCollate)
	awaitCodes(c, utilURI, "")
	user := filepath.Join(dir, "loader.py")
	if err := os.WriteFile(user, []byte(crossCollateUser), 0o644); err != nil {
		t.Fatal(err)
	}
	c.notify("workspace/didChangeWatchedFiles", map[string]any{"changes": []any{map[string]any{"uri": "file://" + user, "type": 1}}})
	diags := awaitCodes(c, utilURI, "GPU001/1")
	if len(diags[0].Related) != 1 || !strings.HasSuffix(diags[0].Related[0].Location.URI, "/loader.py") {
		t.Errorf("related: %+v", diags[0].Related)
	}
	if err := os.Remove(user); err != nil {
		t.Fatal(err)
	}
	c.notify("workspace/didChangeWatchedFiles", map[string]any{"changes": []any{map[string]any{"uri": "file://" + user, "type": 3}}})
	awaitCodes(c, utilURI, "")
	c.shutdownAndExit()
}

// A buffer closed with changes it did not save gives way to the file on
// disk, read again off the server's lock (see workspace.Index.Close), and
// the open files that depend on it are analysed again: here the buffer had
// the DataLoader without workers, the file on disk has two, so the
// collate function's device move is reported once the buffer is closed.
func TestClosingAChangedBufferReadsTheFileAgain(t *testing.T) {
	c, dir := startWorkspace(t, map[string]string{"util.py": crossCollate, "loader.py": crossCollateUser})
	utilURI, loaderURI := "file://"+filepath.Join(dir, "util.py"), "file://"+filepath.Join(dir, "loader.py")
	c.open(utilURI, crossCollate)
	awaitCodes(c, utilURI, "GPU001/1")
	c.open(loaderURI, strings.Replace(crossCollateUser, "num_workers=2", "num_workers=0", 1))
	awaitCodes(c, utilURI, "")
	c.notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": loaderURI}})
	awaitCodes(c, utilURI, "GPU001/1")
	c.shutdownAndExit()
}

// diagnosticMode "workspace", pushed: files nobody opened are reported,
// an open file's diagnostics are its buffer's, and closing it reports the
// file on disk again.
func TestWorkspaceDiagnosticsPushed(t *testing.T) {
	c, dir := startWorkspaceWith(t, map[string]string{
		"data.py": crossData, "train.py": strings.ReplaceAll(crossTrain, "WORKERS", "4"),
	}, nil, map[string]any{"diagnosticMode": "workspace"})
	dataURI := "file://" + filepath.Join(dir, "data.py")
	// The pass over the workspace reports its progress too.
	req := c.await("progress of the pass", func(m message) bool { return m.Method == "window/workDoneProgress/create" && m.ID != nil })
	c.send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": nil})
	diags := awaitCodes(c, dataURI, "GPU001/1 GPU001/1")
	if len(diags[0].Related) != 1 || !strings.HasSuffix(diags[0].Related[0].Location.URI, "/train.py") {
		t.Errorf("related: %+v", diags[0].Related)
	}
	c.open(dataURI, "import torch\n")
	c.diagnostics(dataURI, 1)
	c.notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": dataURI}})
	awaitCodes(c, dataURI, "")                  // the buffer's are withdrawn...
	awaitCodes(c, dataURI, "GPU001/1 GPU001/1") // ...and the file's come back
	// Back to open files only: what was pushed for closed files goes.
	c.notify("workspace/didChangeConfiguration", map[string]any{"settings": map[string]any{"diagnosticMode": "openFilesOnly"}})
	awaitCodes(c, dataURI, "")
	c.shutdownAndExit()
}

// diagnosticMode "workspace", pulled: workspace/diagnostic reports the
// closed files, and "unchanged" for what the client already has.
func TestWorkspaceDiagnosticsPulled(t *testing.T) {
	c, dir := startWorkspaceWith(t, map[string]string{
		"data.py": crossData, "train.py": strings.ReplaceAll(crossTrain, "WORKERS", "4"),
	}, map[string]any{"textDocument": map[string]any{"diagnostic": map[string]any{}, "publishDiagnostics": map[string]any{"relatedInformation": true}}},
		map[string]any{"diagnosticMode": "workspace"})
	dataURI := "file://" + filepath.Join(dir, "data.py")
	type report struct {
		Kind     string          `json:"kind"`
		URI      string          `json:"uri"`
		ResultID string          `json:"resultId"`
		Items    []lspDiagnostic `json:"items"`
	}
	pull := func(previous []any) map[string]report {
		var r struct{ Items []report }
		if err := c.request("workspace/diagnostic", map[string]any{"previousResultIds": previous}, &r); err != nil {
			t.Fatal(err)
		}
		out := map[string]report{}
		for _, it := range r.Items {
			out[it.URI] = it
		}
		return out
	}
	first := pull([]any{})
	data := first[dataURI]
	if data.Kind != "full" || len(data.Items) != 2 || data.Items[0].Severity != 1 {
		t.Fatalf("data.py's report: %+v", first)
	}
	again := pull([]any{map[string]any{"uri": dataURI, "value": data.ResultID}})
	if again[dataURI].Kind != "unchanged" {
		t.Errorf("second pull: %+v", again[dataURI])
	}
	c.shutdownAndExit()
}

// `vramlint check` and the server in workspace mode say the same about
// every file of the multi-module projects in testdata/projects.
func TestCheckEqualsWorkspaceDiagnostics(t *testing.T) {
	projects, _ := filepath.Glob(filepath.Join("..", "testdata", "projects", "*"))
	checked := 0
	for _, project := range projects {
		if st, err := os.Stat(project); err != nil || !st.IsDir() {
			continue
		}
		checked++
		t.Run(filepath.Base(project), func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(project)); err != nil {
				t.Fatal(err)
			}
			checker := &workspace.Checker{Runner: &analysis.Runner{Rules: rules.All()}}
			files, _ := checker.Check(context.Background(), []string{dir})
			want := map[string][]string{}
			for _, f := range files {
				if f.Result == nil {
					continue
				}
				m := f.Result.Mapper()
				for _, d := range f.Result.Diagnostics {
					p := m.Position(d.Start, analysis.UTF16)
					want["file://"+f.Path] = append(want["file://"+f.Path], fmt.Sprintf("%d:%d %s/%s %s", p.Line, p.Column, d.Code, d.Severity, d.Message))
				}
			}
			c := startServer(t, Options{})
			caps := map[string]any{"textDocument": map[string]any{"diagnostic": map[string]any{}}}
			c.initializeFolders(caps, map[string]any{"diagnosticMode": "workspace"}, dir)
			severities := map[int]string{1: "error", 2: "warning", 3: "info", 4: "hint"}
			// The index is built in the background: pull until it agrees,
			// with time to spare for a loaded machine.
			var got map[string][]string
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
				var r struct {
					Items []struct {
						URI   string          `json:"uri"`
						Items []lspDiagnostic `json:"items"`
					}
				}
				if err := c.request("workspace/diagnostic", map[string]any{"previousResultIds": []any{}}, &r); err != nil {
					t.Fatal(err)
				}
				got = map[string][]string{}
				for _, it := range r.Items {
					for _, d := range it.Items {
						got[it.URI] = append(got[it.URI], fmt.Sprintf("%d:%d %s/%s %s", d.Range.Start.Line, d.Range.Start.Character, d.Code, severities[d.Severity], d.Message))
					}
				}
				if fmt.Sprint(got) == fmt.Sprint(want) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("check and the server differ:\ncheck:  %v\nserver: %v", want, got)
			}
			if len(want) == 0 {
				t.Errorf("no findings in %s to compare", project)
			}
		})
	}
	if checked < 4 {
		t.Fatalf("only %d projects", checked)
	}
}

// Two workspace folders each with a package named pkg: each file's imports
// resolve in its own folder (a's Base is a Dataset, b's is not).
func TestTwoFoldersWithOnePackageName(t *testing.T) {
	src := filepath.Join("..", "testdata", "projects", "tworoots")
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	c := startServer(t, Options{})
	c.initializeFolders(map[string]any{}, nil, a, b)
	text, err := os.ReadFile(filepath.Join(a, "pkg", "data.py"))
	if err != nil {
		t.Fatal(err)
	}
	inA, inB := "file://"+filepath.Join(a, "pkg", "data.py"), "file://"+filepath.Join(b, "pkg", "data.py")
	c.open(inA, string(text))
	c.open(inB, string(text))
	awaitCodes(c, inA, "GPU001/2")
	awaitCodes(c, inB, "")
	c.shutdownAndExit()
}

// A function's summary crosses files: loops.py's findings come from what
// metrics.py's batch_error returns, and putting it under no_grad in the
// open metrics.py withdraws them.
func TestEditingACalleeRepublishesItsCallers(t *testing.T) {
	src := filepath.Join("..", "testdata", "projects", "losses")
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, Options{})
	c.initializeFolders(map[string]any{}, nil, dir)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, "trainer", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	loops, metrics := "file://"+filepath.Join(dir, "trainer", "loops.py"), "file://"+filepath.Join(dir, "trainer", "metrics.py")
	c.open(loops, read("loops.py"))
	awaitCodes(c, loops, "GPU004/2 GPU003/2 GPU002/2")
	text := read("metrics.py")
	c.open(metrics, text)
	line := strings.Count(text[:strings.Index(text, "def batch_error(")], "\n")
	c.change(metrics, 0, lspTextEdit{Range: lspRange{lspPosition{line, 0}, lspPosition{line, 0}}, NewText: "@torch.no_grad()\n"})
	awaitCodes(c, loops, "")
	c.shutdownAndExit()
}

// While the user types, an open buffer is summarised for the workspace
// index once the typing pauses, not once a version: twenty quick changes
// make one summary, of the last version, which the other files then see.
func TestTypingIsSummarisedForTheIndexAtPauses(t *testing.T) {
	defer func(was time.Duration) { summaryPause = was }(summaryPause)
	summaryPause = time.Second // longer than any gap between the changes below
	c, dir := startWorkspace(t, map[string]string{
		"data.py": crossData, "train.py": strings.ReplaceAll(crossTrain, "WORKERS", "0"),
	})
	dataURI, trainURI := "file://"+filepath.Join(dir, "data.py"), "file://"+filepath.Join(dir, "train.py")
	c.open(dataURI, crossData)
	awaitCodes(c, dataURI, "GPU001/2 GPU001/2") // warnings: in the main process
	train := strings.ReplaceAll(crossTrain, "WORKERS", "0")
	c.open(trainURI, train)
	c.diagnostics(trainURI, 1)
	summaries := func() int {
		c.srv.mu.Lock()
		defer c.srv.mu.Unlock()
		return c.srv.docs[trainURI].summaries
	}
	awaitSummaries := func(atLeast int) {
		t.Helper()
		for deadline := time.Now().Add(hungAfter); summaries() < atLeast; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d summaries of train.py, want %d", summaries(), atLeast)
			}
		}
	}
	awaitSummaries(1) // the open's
	before := summaries()
	// Twenty quick changes: "41" typed over the 0 workers, then its "1"
	// deleted and typed again, ending at 4 workers.
	at := strings.Index(train, "num_workers=0") + len("num_workers=")
	line := strings.Count(train[:at], "\n")
	column := at - strings.LastIndex(train[:at], "\n") - 1
	v := c.change(trainURI, analysis.UTF16, lspTextEdit{Range: lspRange{lspPosition{line, column}, lspPosition{line, column + 1}}, NewText: "41"})
	c.diagnostics(trainURI, v)
	for i := range 19 {
		e := lspTextEdit{Range: lspRange{lspPosition{line, column + 1}, lspPosition{line, column + 2}}, NewText: ""}
		if i%2 == 1 {
			e = lspTextEdit{Range: lspRange{lspPosition{line, column + 1}, lspPosition{line, column + 1}}, NewText: "1"}
		}
		v = c.change(trainURI, analysis.UTF16, e)
		c.diagnostics(trainURI, v)
	}
	if got := c.texts[trainURI]; !strings.Contains(got, "num_workers=4)") {
		t.Fatalf("the changes did not end at 4 workers: %s", got[at-20:at+10])
	}
	awaitSummaries(before + 1)
	// Errors: the last version's 4 workers run the Dataset's .cuda() (the
	// versions before had 4 or 41).
	if diags := awaitCodes(c, dataURI, "GPU001/1 GPU001/1"); !strings.Contains(diags[0].Message, "in 4 DataLoader workers") {
		t.Errorf("data.py's findings are not of the last version of train.py: %s", diags[0].Message)
	}
	time.Sleep(summaryPause + 500*time.Millisecond)
	if n := summaries() - before; n != 1 {
		t.Errorf("twenty quick changes made %d summaries, want 1", n)
	}
}

// The user cancels the indexing progress: it ends, saying so, and the
// server goes on (what was not indexed is read when an import reaches it).
func TestIndexingCanBeCancelled(t *testing.T) {
	files := map[string]string{}
	for i := range 3000 {
		files[fmt.Sprintf("m%04d.py", i)] = "from torch.utils.data import DataLoader\n\nloader = DataLoader(list(range(4)), num_workers=2)\n"
	}
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := startServer(t, Options{})
	c.initializeFolders(map[string]any{"window": map[string]any{"workDoneProgress": true}}, nil, dir)
	req := c.await("window/workDoneProgress/create", func(m message) bool { return m.Method == "window/workDoneProgress/create" })
	var p struct{ Token string }
	json.Unmarshal(req.Params, &p)
	c.send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": nil})
	c.await("$/progress begin", func(m message) bool {
		return m.Method == "$/progress" && strings.Contains(string(m.Params), `"kind":"begin"`)
	})
	c.notify("window/workDoneProgress/cancel", map[string]any{"token": p.Token})
	end := c.await("$/progress end", func(m message) bool {
		return m.Method == "$/progress" && strings.Contains(string(m.Params), `"kind":"end"`)
	})
	if !strings.Contains(string(end.Params), "cancelled after") {
		t.Errorf("the progress ended without saying it was cancelled: %s", end.Params)
	}
	uri := "file://" + filepath.Join(dir, "m0000.py")
	c.open(uri, files["m0000.py"])
	c.diagnostics(uri, 1)
	c.shutdownAndExit()
}

// In workspace mode, a closed file deleted on disk has its diagnostics
// withdrawn.
func TestWorkspaceDiagnosticsOfADeletedFile(t *testing.T) {
	c, dir := startWorkspaceWith(t, map[string]string{
		"data.py": crossData, "train.py": strings.ReplaceAll(crossTrain, "WORKERS", "4"),
	}, nil, map[string]any{"diagnosticMode": "workspace"})
	req := c.await("progress of the pass", func(m message) bool { return m.Method == "window/workDoneProgress/create" && m.ID != nil })
	c.send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": nil})
	dataPath := filepath.Join(dir, "data.py")
	awaitCodes(c, "file://"+dataPath, "GPU001/1 GPU001/1")
	if err := os.Remove(dataPath); err != nil {
		t.Fatal(err)
	}
	c.notify("workspace/didChangeWatchedFiles", map[string]any{"changes": []any{map[string]any{"uri": "file://" + dataPath, "type": 3}}})
	// The index changed: the pass runs again, with its progress.
	req = c.await("progress of the second pass", func(m message) bool { return m.Method == "window/workDoneProgress/create" && m.ID != nil })
	c.send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": nil})
	awaitCodes(c, "file://"+dataPath, "")
	c.shutdownAndExit()
}

// A folder removed from the workspace while it is being indexed is read
// no further: its progress ends, saying the indexing was cancelled, rather
// than after reading every file of a folder nothing will ask about.
func TestIndexingStopsWhenItsFolderIsRemoved(t *testing.T) {
	dir := t.TempDir()
	// Long enough to read that the removal comes while it goes on, even
	// under the race detector.
	text := "import torch\n"
	for i := range 30 {
		text += fmt.Sprintf("\n\ndef helper%d(x):\n    y = x * 2\n    return y.sum()\n", i)
	}
	for i := range 3000 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%04d.py", i)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := startServer(t, Options{})
	c.initializeFolders(map[string]any{"window": map[string]any{"workDoneProgress": true}}, nil, dir)
	req := c.await("window/workDoneProgress/create", func(m message) bool { return m.Method == "window/workDoneProgress/create" })
	c.send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": nil})
	c.await("$/progress begin", func(m message) bool {
		return m.Method == "$/progress" && strings.Contains(string(m.Params), `"kind":"begin"`)
	})
	c.notify("workspace/didChangeWorkspaceFolders", map[string]any{"event": map[string]any{
		"added": []any{}, "removed": []any{map[string]any{"uri": "file://" + dir, "name": filepath.Base(dir)}},
	}})
	end := c.await("$/progress end", func(m message) bool {
		return m.Method == "$/progress" && strings.Contains(string(m.Params), `"kind":"end"`)
	})
	if !strings.Contains(string(end.Params), "cancelled after") {
		t.Errorf("the indexing of a removed folder went on to its end: %s", end.Params)
	}
	c.shutdownAndExit()
}

// A buffer opened while the indexing parses a large file has the cores to
// itself: the indexing leaves that file (workspace.Index.Yield) and parses
// it again, whole, once the open is analysed.
func TestAnOpenInterruptsTheIndexingsParseOfALargeFile(t *testing.T) {
	dir := t.TempDir()
	var big strings.Builder
	big.WriteString("import torch\n")
	for i := 0; big.Len() < 4<<20; i++ {
		fmt.Fprintf(&big, "\n\ndef helper%d(x):\n    y = x * 2\n    return y.sum()\n", i)
	}
	train := "import torch\n\n\ndef step(x):\n    return x.sum()\n"
	for name, text := range map[string]string{"big.py": big.String(), "train.py": train} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := startServer(t, Options{})
	c.initializeFolders(map[string]any{"window": map[string]any{"workDoneProgress": true}}, nil, dir)
	req := c.await("window/workDoneProgress/create", func(m message) bool { return m.Method == "window/workDoneProgress/create" })
	c.send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": nil})
	// The indexing parses no other file: train.py is opened before it
	// comes to it.
	for deadline := time.Now().Add(hungAfter); ; time.Sleep(time.Millisecond) {
		if files, _ := c.srv.projects.Parsed(); files > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the indexing never parsed big.py")
		}
	}
	uri := "file://" + filepath.Join(dir, "train.py")
	c.open(uri, train)
	c.diagnostics(uri, 1)
	end := c.await("$/progress end", func(m message) bool {
		return m.Method == "$/progress" && strings.Contains(string(m.Params), `"kind":"end"`)
	})
	if !strings.Contains(string(end.Params), "2 files") {
		t.Errorf("the indexing did not go through both files: %s", end.Params)
	}
	if files, _ := c.srv.projects.Parsed(); files != 2 {
		t.Errorf("big.py was parsed %d times; want twice, the first left for the open", files)
	}
	c.shutdownAndExit()
}

// At the first pause after an open, the server asks for the facts of the
// other files of the project that the buffer's calls need (see
// semantic.File.AskProjectFacts): here utils.py, which no rule read at the
// open and the indexing did not (it came after). Reading it
// changes the project as the buffer's model saw it, so the server analyses
// the buffer again in the pause: the keystroke after is analysed as an
// edit of one statement, not in full.
func TestOtherFilesFactsAreAskedForInThePauseAfterAnOpen(t *testing.T) {
	train := "import torch\nfrom utils import helper\n\n\nclass Runner:\n    def total(self, x):\n        return helper(x)\n\n" +
		"    def step(self, loader, opt):\n        for x in loader:\n            loss = x.sum()\n            loss.backward()\n            opt.step()\n\n\n" +
		"def other(x):\n    return x\n"
	c, dir := startWorkspace(t, map[string]string{"train.py": train})
	// Written after the indexing, which would have read it with all its
	// facts: the pause is then the first to read it.
	if err := os.WriteFile(filepath.Join(dir, "utils.py"), []byte("def helper(x):\n    return x.detach()\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	uri := "file://" + filepath.Join(dir, "train.py")
	c.open(uri, train)
	c.diagnostics(uri, 1)
	c.srv.mu.Lock()
	opened := c.srv.docs[uri].snap
	c.srv.mu.Unlock()
	for deadline := time.Now().Add(hungAfter); ; time.Sleep(20 * time.Millisecond) {
		c.srv.mu.Lock()
		d := c.srv.docs[uri]
		snap := d.snap
		c.srv.mu.Unlock()
		// The snapshot analysed again, not only made: until it is, its
		// model is the open's (its base), and a keystroke then builds on
		// that, which read utils.py's facts before they were there.
		analysed := false
		select {
		case <-snap.analysed:
			analysed = snap.result != nil && snap.result.Model() != nil
		default:
		}
		c.srv.mu.Lock()
		asked := d.factsAsked
		c.srv.mu.Unlock()
		if asked && snap != opened && analysed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("train.py was not analysed again after its calls' facts were asked for")
		}
	}
	line := strings.Count(train[:strings.Index(train, "    return x\n")], "\n")
	v := c.change(uri, analysis.UTF16, lspTextEdit{Range: lspRange{lspPosition{line, 11}, lspPosition{line, 11}}, NewText: " + 1"})
	c.diagnostics(uri, v)
	c.srv.mu.Lock()
	res := c.srv.docs[uri].snap.model()
	c.srv.mu.Unlock()
	if segments := len(res.Model().Tree.Segments); res.Reexamined() >= segments {
		t.Errorf("the keystroke after the pause re-examined %d of %d statements", res.Reexamined(), segments)
	}
	c.shutdownAndExit()
}

// foregroundWork's wait, which the indexing calls between two files,
// returns only once no parse or analysis counted is under way, however
// many began.
func TestForegroundWaitReturnsOnceNoneIsUnderWay(t *testing.T) {
	var f foregroundWork
	f.begin()
	f.begin()
	waited := make(chan struct{})
	go func() {
		f.wait(0)
		close(waited)
	}()
	f.end()
	select {
	case <-waited:
		t.Fatal("wait returned while an analysis was under way")
	case <-time.After(50 * time.Millisecond):
	}
	f.end()
	select {
	case <-waited:
	case <-time.After(hungAfter):
		t.Fatal("wait still waits, with no analysis under way")
	}
	f.wait(0) // none under way: returns at once
}

// With a quiet time, the wait also lets that long pass since the last
// parse or analysis ended, and waits for one that begins meanwhile, then
// for the quiet time after it; with none ever, it returns at once.
func TestForegroundWaitLetsTheQuietTimePass(t *testing.T) {
	var f foregroundWork
	waitInBackground := func(quiet time.Duration) <-chan time.Time {
		returned := make(chan time.Time, 1)
		go func() {
			f.wait(quiet)
			returned <- time.Now()
		}()
		return returned
	}
	select {
	case <-waitInBackground(time.Hour):
	case <-time.After(hungAfter):
		t.Fatal("wait waited, with no work ever under way")
	}
	const quiet = 150 * time.Millisecond
	f.begin()
	ended := time.Now()
	f.end()
	select {
	case at := <-waitInBackground(quiet):
		if waited := at.Sub(ended); waited < quiet {
			t.Errorf("returned %v after the last analysis, want at least %v", waited, quiet)
		}
	case <-time.After(hungAfter):
		t.Fatal("wait still waits, long after the last analysis")
	}
	f.begin()
	returned := waitInBackground(quiet)
	select {
	case <-returned:
		t.Fatal("wait returned while an analysis was under way")
	case <-time.After(2 * quiet):
	}
	ended = time.Now()
	f.end()
	select {
	case at := <-returned:
		if waited := at.Sub(ended); waited < quiet {
			t.Errorf("returned %v after the analysis it waited for, want at least %v", waited, quiet)
		}
	case <-time.After(hungAfter):
		t.Fatal("wait still waits, long after the last analysis")
	}
}
