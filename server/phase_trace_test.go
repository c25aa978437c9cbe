package server

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// lineWriter passes each write (one trace line) on to a channel: the
// server writes a version's line after sending its diagnostics.
type lineWriter chan []byte

func (w lineWriter) Write(p []byte) (int, error) {
	w <- append([]byte(nil), p...)
	return len(p), nil
}

// --trace-phases writes one line a version, whose phases run one after
// the other from reading the change to sending the diagnostics: they add
// up to the total.
func TestPhaseTraceAccountsForEveryVersion(t *testing.T) {
	lines := make(lineWriter, 16)
	c := startServer(t, Options{PhaseTrace: lines})
	c.initialize(map[string]any{}, nil)
	uri := "file:///work/train.py"
	c.open(uri, leakyDataset)
	c.diagnostics(uri, 1)
	runtime.GC() // between the two versions' lines: a collection the second one counts
	c.change(uri, 0, lspTextEdit{Range: lspRange{Start: lspPosition{0, 0}, End: lspPosition{0, 0}}, NewText: "# a comment\n"})
	c.diagnostics(uri, 2)
	next := func(version int32) phaseTrace {
		var tr phaseTrace
		select {
		case line := <-lines:
			if err := json.Unmarshal(line, &tr); err != nil || line[len(line)-1] != '\n' {
				t.Fatalf("trace line %q: %v", line, err)
			}
		case <-time.After(hungAfter):
			t.Fatalf("no trace line for version %d", version)
		}
		return tr
	}
	var faults int64 // the process's so far, never fewer
	var cycles uint64
	var assist float64
	for i, size := range []int{len(leakyDataset), len(leakyDataset) + len("# a comment\n")} {
		version := int32(i + 1)
		tr := next(version)
		if tr.Faults < faults || runtime.GOOS == "linux" && tr.Faults <= 0 {
			t.Errorf("v%d: %d page faults so far, after %d", version, tr.Faults, faults)
		}
		faults = tr.Faults
		if version == 2 && tr.GCCycles <= cycles || tr.GCAssist < assist {
			t.Errorf("v%d: %d collections and %.3f ms of assists so far, after %d and %.3f", version, tr.GCCycles, tr.GCAssist, cycles, assist)
		}
		cycles, assist = tr.GCCycles, tr.GCAssist
		if tr.URI != uri || tr.Version != version || tr.Bytes != size {
			t.Errorf("trace of %s v%d (%d bytes), want %s v%d (%d bytes)", tr.URI, tr.Version, tr.Bytes, uri, version, size)
		}
		phases := []float64{tr.Change, tr.Parse, tr.Wait, tr.Analysis, tr.Convert, tr.Send}
		sum := 0.0
		for _, p := range phases {
			if p < 0 {
				t.Errorf("v%d: a negative phase: %+v", version, tr)
			}
			sum += p
		}
		// Each phase is rounded down to a microsecond.
		if math.Abs(sum-tr.Total) > 0.001*float64(len(phases)) || tr.Total <= 0 {
			t.Errorf("v%d: the phases add up to %.3f ms, the total is %.3f: %+v", version, sum, tr.Total, tr)
		}
		if inner := tr.Model + tr.Rules + tr.Fixes; inner > tr.Analysis+0.003 || tr.Rules <= 0 {
			t.Errorf("v%d: model, rules and fixes take %.3f ms of an analysis of %.3f: %+v", version, inner, tr.Analysis, tr)
		}
	}
	// New settings analyse version 2 again, with no change to read or
	// parse: its trace starts with the analysis.
	c.notify("workspace/didChangeConfiguration", map[string]any{"settings": map[string]any{"vramlint": map[string]any{"ignore": []string{"GPU005"}}}})
	tr := next(2)
	if tr.Version != 2 || tr.Change != 0 || tr.Parse != 0 || tr.Wait != 0 || tr.Total > 10_000 || tr.Total < tr.Analysis {
		t.Errorf("analysed again: %+v", tr)
	}
}

// The trace tells how many files of the project the index parsed for a
// version: opening a file whose training loop calls a helper of another
// module reads that module (its facts say whether the helper trains),
// when the indexing of the folder has not (here the module is written
// after it). The open's analysis may be replaced by one of the same
// version when the index learns of helpers.py: one of the version's
// lines counts it.
func TestPhaseTraceCountsTheOtherFilesParsed(t *testing.T) {
	lines := make(lineWriter, 16)
	files := map[string]string{
		"train.py": "import torch\nfrom helpers import train_step\n\n\ndef fit(model, opt, batches):\n    losses = []\n" +
			"    for x in batches:\n        loss = train_step(model, opt, x)\n        losses.append(loss)\n    return losses\n",
	}
	c, dir := startWorkspaceServer(t, Options{PhaseTrace: lines}, files, nil, nil)
	helpers := "def train_step(model, opt, x):\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n    return loss\n"
	if err := os.WriteFile(filepath.Join(dir, "helpers.py"), []byte(helpers), 0o644); err != nil {
		t.Fatal(err)
	}
	uri := "file://" + filepath.Join(dir, "train.py")
	c.open(uri, files["train.py"])
	c.diagnostics(uri, 1)
	var seen []string
	for deadline := time.After(hungAfter); ; {
		select {
		case line := <-lines:
			var tr phaseTrace
			if err := json.Unmarshal(line, &tr); err != nil {
				t.Fatalf("trace line %q: %v", line, err)
			}
			if tr.OtherFiles < 0 || tr.OtherFilesParse < 0 {
				t.Errorf("negative counts: %s", line)
			}
			if tr.OtherFiles >= 1 && tr.OtherFilesParse > 0 {
				c.shutdownAndExit()
				return
			}
			seen = append(seen, string(line))
		case <-deadline:
			t.Fatalf("the open read helpers.py, but no trace line says so: %q", seen)
		}
	}
}

// Once the folder is indexed (its progress ended), the index knows every
// fact of its files' functions: opening a file whose training loop calls
// a helper of another module parses no other file, and its first
// diagnostics already use what the helper does (it returns the loss with
// its graph, which the list keeps). The modules indexed after helpers.py
// are more than the index keeps the models of: the facts are not read
// from a model left over from the indexing.
func TestAnOpenAfterTheIndexingParsesNoOtherFile(t *testing.T) {
	lines := make(lineWriter, 16)
	files := map[string]string{
		"helpers.py": "def train_step(model, opt, x):\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n    return loss\n",
		"train.py": "import torch\nfrom helpers import train_step\n\n\ndef fit(model, opt, batches):\n    losses = []\n" +
			"    for x in batches:\n        loss = train_step(model, opt, x)\n        losses.append(loss)\n    return losses\n",
	}
	for i := range 10 {
		files[fmt.Sprintf("pad%d.py", i)] = fmt.Sprintf("def pad%d(x):\n    return x\n", i)
	}
	c, dir := startWorkspaceServer(t, Options{PhaseTrace: lines}, files, nil, nil)
	uri := "file://" + filepath.Join(dir, "train.py")
	c.open(uri, files["train.py"])
	if diags := c.diagnostics(uri, 1); len(diags) != 1 || diags[0].Code != "GPU002" {
		t.Errorf("first diagnostics %+v, want one GPU002", diags)
	}
	var tr phaseTrace
	select {
	case line := <-lines:
		if err := json.Unmarshal(line, &tr); err != nil {
			t.Fatal(err)
		}
	case <-time.After(hungAfter):
		t.Fatal("no trace line for the open")
	}
	if tr.Version != 1 || tr.OtherFiles != 0 {
		t.Errorf("the open parsed %d other files: %+v", tr.OtherFiles, tr)
	}
	c.shutdownAndExit()
}
