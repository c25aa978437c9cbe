package workspace_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/rules"
	"github.com/vramlint/vramlint/analysis/semantic"
	"github.com/vramlint/vramlint/analysis/workspace"
)

// trainingFile is a file of about size bytes of torch code, with one
// finding when leaky.
func trainingFile(size int, leaky bool) string {
	var b strings.Builder
	b.WriteString("import torch\n\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "def block_%d(model, x):\n    y = model(x) + %d\n    return torch.relu(y).sum()\n\n", i, i)
	}
	if leaky {
		b.WriteString("for step, batch in enumerate(loader):\n    loss = model(batch)\n    loss.backward()\n    torch.cuda.empty_cache()\n")
	}
	return b.String()
}

// check holds, per file, only what the report needs: after a run over a
// tree, the live heap is a small fraction of the sources (it held the
// models, about 36 bytes per source byte, until it reported).
func TestCheckHoldsLittlePerFile(t *testing.T) {
	dir := t.TempDir()
	const files, size = 60, 80 << 10
	for i := range files {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%02d.py", i)), []byte(trainingFile(size, i%10 == 0)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	checker := &workspace.Checker{Runner: &analysis.Runner{Rules: rules.All()}}
	results, problems := checker.Check(context.Background(), []string{dir})
	runtime.GC()
	runtime.ReadMemStats(&after)
	if len(problems) > 0 || len(results) != files {
		t.Fatalf("%d results, problems %v", len(results), problems)
	}
	findings := 0
	for _, r := range results {
		findings += len(r.Result.Diagnostics)
		if r.Result.Model() != nil {
			t.Errorf("%s: the model is still held", r.Path)
		}
	}
	if findings != files/10 {
		t.Errorf("%d findings, want %d", findings, files/10)
	}
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	total := int64(files * size)
	t.Logf("held %d KB after checking %d KB", held>>10, total>>10)
	// The sources of the files with findings, their line index, and slack.
	if held > total/2 {
		t.Errorf("check holds %d KB after checking %d KB of sources", held>>10, total>>10)
	}
	runtime.KeepAlive(results)
}

// brokenProject fails on every question: a bug outside the rules.
type brokenProject struct{ semantic.Project }

func (brokenProject) Module(string) (string, bool) { panic("a bug in the model") }

// A panic while a file is parsed or modelled (outside the rules, whose
// failures the runner reports) is that file's error: check goes on with
// the other files instead of ending.
func TestCheckSurvivesAPanicOutsideTheRules(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.py", "b.py"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(trainingFile(200, true)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	checker := &workspace.Checker{Runner: &analysis.Runner{Rules: rules.All(), Project: brokenProject{}}}
	results, _ := checker.Check(context.Background(), []string{dir})
	if len(results) != 2 {
		t.Fatalf("%d results, want 2", len(results))
	}
	for _, r := range results {
		if r.Err == nil || !strings.Contains(r.Err.Error(), "internal error") || !strings.Contains(r.Err.Error(), "a bug in the model") {
			t.Errorf("%s: error %v, want the panic reported as an internal error", r.Path, r.Err)
		}
	}
}

// While check analyses a project, a question about a function's callers
// in other files is answered from the files analysed so far, and a file
// told otherwise than all of them tell at the end is analysed again: the
// evaluation helpers below are checked before their callers (one job,
// files in order), and those called only under no-grad, a function and a
// method, are not reported; the one called with autograd on is. No file
// is parsed to be summarised on the way: each is parsed once, for its
// own analysis (the answers once read every caller not yet analysed,
// which was parsed again for its analysis).
func TestCheckSettlesCallersAnsweredEarly(t *testing.T) {
	const loop = "    model.eval()\n    out = []\n    for x in loader:\n        out.append(model(x).argmax(1))\n    return out\n"
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"pyproject.toml": "[project]\nname = \"p\"\n",
		"a_eval.py":      "import torch\n\n\ndef evaluate(model, loader):\n" + loop,
		"a_score.py":     "import torch\n\n\ndef score(model, loader):\n" + loop,
		"a_net.py":       "import torch\n\n\nclass Net:\n    def inference(self, model, loader):\n" + indented(loop),
		"z_main.py": "import torch\nfrom a_eval import evaluate\nfrom a_score import score\nfrom a_net import Net\n\n\n" +
			"def main(model, loader):\n    with torch.no_grad():\n        evaluate(model, loader)\n        Net().inference(model, loader)\n" +
			"    return score(model, loader)\n",
	})
	got, parses := checkOneJob(t, root)
	if got != "a_score.py:GPU004" {
		t.Errorf("findings %q, want only a_score.py's GPU004", got)
	}
	if parses != 0 {
		t.Errorf("%d files parsed to be summarised, want none", parses)
	}
}

// checkOneJob checks the project at root on one job (files in order) and
// returns its findings as "file:code" joined by spaces, and how many files
// the project's index parsed to summarise them.
func checkOneJob(t *testing.T, root string) (findings string, parses int64) {
	t.Helper()
	checker := &workspace.Checker{Runner: &analysis.Runner{Rules: rules.All()}, Options: workspace.Options{Jobs: 1}}
	results, problems := checker.Check(context.Background(), []string{root})
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	var got []string
	for _, r := range results {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.Path, r.Err)
		}
		if r.Result == nil {
			continue // nothing worth analysing (an empty __init__.py)
		}
		for _, d := range r.Result.Diagnostics {
			got = append(got, filepath.Base(r.Path)+":"+d.Code)
		}
	}
	return strings.Join(got, " "), checker.Runner.Project.(*workspace.Projects).For(root).Parses()
}

// indented indents every line of code by four more spaces.
func indented(code string) string {
	return "    " + strings.ReplaceAll(strings.TrimSuffix(code, "\n"), "\n", "\n    ") + "\n"
}

// check analyses a file after the files of its project it imports: the
// training script below (first by name) runs models of two modules of its
// project, each imported its own way (an absolute import; a relative one,
// a parenthesised list over two lines). Analysed first, it had each
// imported file parsed to be summarised (what its classes derive from),
// and check parsed it again for its own analysis; now no file is parsed
// but for its own analysis, and the findings are the same.
func TestCheckAnalysesImportedFilesFirst(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"pyproject.toml":  "[project]\nname = \"p\"\n",
		"pkg/__init__.py": "",
		"pkg/a_train.py": "import torch\nfrom pkg.z_heads import Head\nfrom .m_nets import (\n    Net,\n)\n\n\n" +
			"def train(opt, batches):\n    model, head, losses = Net(), Head(), []\n    for x in batches:\n        loss = head(model(x)).sum()\n" +
			"        loss.backward()\n        opt.step()\n        losses.append(loss)\n    return len(losses)\n",
		"pkg/m_nets.py":  "import torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n",
		"pkg/z_heads.py": "from torch import nn\n\n\nclass Head(nn.Module):\n    def forward(self, x):\n        return x + 1\n",
	})
	got, parses := checkOneJob(t, root)
	if got != "a_train.py:GPU002" {
		t.Errorf("findings %q, want a_train.py's GPU002", got)
	}
	if parses != 0 {
		t.Errorf("%d files parsed to be summarised, want none", parses)
	}
}
