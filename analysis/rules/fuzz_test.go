package rules_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/analysistest"
	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/rules"
)

// fixtures are the rule fixtures, the fuzz targets' seeds.
const fixtures = "testdata/*/*.py"

// checkRanges fails on a diagnostic, related location or fix edit outside
// src or off a character boundary.
func checkRanges(t *testing.T, src []byte, res *analysis.Result) {
	t.Helper()
	inside := func(what string, start, end int) {
		if start < 0 || end < start || end > len(src) {
			t.Fatalf("%s [%d, %d) outside the file (%d bytes)", what, start, end, len(src))
		}
		for _, off := range []int{start, end} {
			if off < len(src) && !utf8.RuneStart(src[off]) {
				t.Fatalf("%s [%d, %d) cuts a character", what, start, end)
			}
		}
	}
	for _, d := range res.Diagnostics {
		inside(d.Code, d.Start, d.End)
		for _, r := range d.Related {
			inside(d.Code+" related", r.Start, r.End)
		}
		for _, fix := range d.Fixes {
			for _, e := range fix.Edits {
				inside(d.Code+" fix "+fix.Title, e.Start, e.End)
			}
		}
	}
}

// Analysis of arbitrary bytes: no rule fails, and every range lies in the
// file, on character boundaries.
func FuzzAnalyze(f *testing.F) {
	for _, src := range analysistest.Sources(f, fixtures) {
		f.Add(src)
	}
	f.Add([]byte("import torch\nfor b in loader:\n    torch.cuda.empty_cache(\n    )\n"))
	runner := &analysis.Runner{Rules: rules.All()}
	f.Fuzz(func(t *testing.T, src []byte) {
		if analysis.CheckSource(src) != nil {
			return
		}
		checkRanges(t, src, analysistest.Analyze(t, runner, src))
	})
}

// fragments are what the edits of FuzzIncremental insert: code that
// changes what the rules see, and the characters that break syntax.
var fragments = []string{
	"", "\n", "    ", "\t", "(", ")", ":", "[", "]", "'", "\"\"\"", "#", "\r\n", "\r", "é", "😀",
	"loss", ".backward()", "losses.append(loss)\n", "total += loss\n", "torch.cuda.empty_cache()\n",
	"for x in loader:\n    ", "with torch.no_grad():\n    ", "def f(self, i):\n    ", ".cuda()",
	"class D(Dataset):\n    def __getitem__(self, i):\n        return x.cuda()\n", "model.eval()\n",
	"device = torch.device(\"cuda\")\n", ".to(device)", "loader = DataLoader(D(), num_workers=2)\n",
	"@torch.no_grad()\n", "\ndef evaluate(model):\n    ",
}

// Random edit sequences applied as the server applies them (reparsing what
// they touched, reusing the previous version's model) give the analysis of
// a fresh model of the same tree, and, where the text has no syntax
// error, that of a fresh parse, and a tree without one.
func FuzzIncremental(f *testing.F) {
	for _, src := range analysistest.Sources(f, fixtures) {
		f.Add(src, []byte{3, 1, 0, 17, 200, 0, 5, 40, 90, 2, 1, 19})
	}
	// A decorator typed on the blank line above a function.
	above := "import torch\n\n\ndef evaluate(model):\n    return model(torch.zeros(1))\n"
	at := strings.Index(above, "def") - 1
	f.Add([]byte(above), []byte{byte((at*256 + len(above) - 1) / len(above)), 0, byte(slices.Index(fragments, "@torch.no_grad()\n"))})
	// A class whose methods call one another: an edit inside one judges
	// that method alone (semantic's pairing of the methods left alone).
	class := "import torch\n\n\nclass T:\n    def __init__(self):\n        self.model = torch.nn.Linear(4, 2)\n\n" +
		"    def fwd(self, x):\n        return self.model(x)\n\n    def fit(self, x):\n        out = self.fwd(x)\n        self.update(out)\n\n" +
		"    def update(self, out):\n        loss = out.sum()\n        loss.backward()\n\n    def evaluate(self, loader):\n        self.model.eval()\n" +
		"        outs = []\n        for x in loader:\n            outs.append(self.fwd(x))\n        return outs\n"
	f.Add([]byte(class), []byte{byte(strings.Index(class, "return self.model") * 256 / len(class)), 0, byte(slices.Index(fragments, ".backward()")),
		byte(strings.Index(class, "loss.backward") * 256 / len(class)), 15, 0})
	// A script whose module-level total a function reads: a backward
	// pass typed in the function changes the verdict on the loop, without
	// any module code changing (see semantic's ChangedCodeReaches). The
	// edit types `.backward()` after `return b`.
	script := "import torch\n\nmodel = torch.nn.Linear(4, 1)\ntotal = 0\nfor step in range(10):\n" +
		"    loss = model(torch.randn(8, 4)).sum()\n    loss.backward()\n    total += loss\nprint(total)\n\n\n" +
		"def report():\n    b = total\n    return b\n"
	f.Add([]byte(script), []byte{byte((strings.LastIndex(script, "b\n")+1)*256/len(script) + 1), 0, byte(slices.Index(fragments, ".backward()"))})
	runner := &analysis.Runner{Rules: rules.All()}
	f.Fuzz(func(t *testing.T, src []byte, script []byte) {
		editIncrementally(t, runner, src, script, false)
	})
}

// editIncrementally applies the edits script describes to src, one at a
// time, and compares each version's incremental analysis with fresh ones
// (see FuzzIncremental). Each edit is three bytes (where, as a share of
// the text in 256ths; how much to delete; what to insert), or with wide
// four, where in 65536ths: a large file's edits land on any byte.
func editIncrementally(t *testing.T, runner *analysis.Runner, src, script []byte, wide bool) {
	t.Helper()
	if analysis.CheckSource(src) != nil {
		return
	}
	ed := pyast.NewEditor(nil, src)
	tree, err := ed.Parse(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	prev := runner.AnalyzeTree(nil, "inc.py", src, tree, nil)
	// The edits so far, told on a failure: with the first version's
	// source, enough to replay it.
	var edits []string
	// At most 16 edits per input: each costs two analyses.
	size := 3
	if wide {
		size = 4
	}
	script = script[:min(len(script), 16*size)]
	for len(script) >= size && len(src) > 0 {
		// Each edit: where (a share of the text), how much to delete,
		// what to insert; kept on character boundaries.
		start := int(script[0]) * len(src) / 256
		if wide {
			start = (int(script[0])<<8 | int(script[1])) * len(src) / 65536
			script = script[1:]
		}
		end := min(len(src), start+int(script[1]%16))
		for start > 0 && !utf8.RuneStart(src[start]) {
			start--
		}
		for end < len(src) && !utf8.RuneStart(src[end]) {
			end++
		}
		text := fragments[int(script[2])%len(fragments)]
		script = script[3:]
		edits = append(edits, fmt.Sprintf("[%d, %d) %q -> %q", start, end, src[start:end], text))
		ed = pyast.NewEditor(tree, src)
		ed.Replace(start, end, text)
		src = ed.Text()
		if analysis.CheckSource(src) != nil {
			return
		}
		if tree, err = ed.Parse(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := runner.AnalyzeTree(prev, "inc.py", src, tree, nil)
		// What was carried from the last version's model: the same as
		// a fresh analysis of this tree.
		compareResults(t, "after an edit", got, runner.AnalyzeTree(nil, "inc.py", src, tree, nil))
		valid := pyast.ParsesCleanly(src)
		if valid && tree.HasError() && pythonAccepts(t, src) {
			// Text typed in one segment that completes another (a
			// decorator above a function, a string closed after it)
			// must join them. (Tree-sitter takes some text Python
			// rejects, such as `d.` and a name on the next line; an
			// edit that splits them may leave an error.)
			t.Error("the text is Python, its tree after the edits has a syntax error")
		}
		if valid || !tree.HasError() {
			// Without a syntax error the tree is the one of a fresh
			// parse (with one, the error stays near the edit).
			want, err := runner.Run(context.Background(), "inc.py", src, nil)
			if err != nil {
				t.Fatal(err)
			}
			compareResults(t, "after an edit, against a fresh parse", got, want)
		}
		for _, e := range got.RuleErrors {
			t.Fatal(e)
		}
		checkRanges(t, src, got)
		if t.Failed() {
			t.Fatalf("after the edits\n  %s\nthe source is %q", strings.Join(edits, "\n  "), src)
		}
		prev = got
	}
}

// pythonAccepts reports whether Python compiles src; false when there is
// no python3 to ask.
func pythonAccepts(t *testing.T, src []byte) bool {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Log("no python3: a tree with an error for a text that parses cleanly is not checked against Python")
		return false
	}
	cmd := exec.Command(python, "-c", "import sys; compile(sys.stdin.buffer.read(), 'inc.py', 'exec')")
	cmd.Stdin = bytes.NewReader(src)
	return cmd.Run() == nil
}

// The random edits of FuzzIncremental inside a class large enough to be
// indexed by its methods (see semantic's indexUnits; FuzzIncremental's
// inputs are smaller, FuzzIncrementalLargeClass explores further): every
// version's incremental analysis is a fresh one's, while the methods an
// edit left alone take their shares of the class's index over from the
// last version.
func TestIncrementalMatchesFreshInALargeClass(t *testing.T) {
	src := largeClass(t, 36)
	runner := &analysis.Runner{Rules: rules.All()}
	rng := rand.New(rand.NewSource(11))
	for range 10 {
		script := make([]byte, 64)
		for i := range script {
			script[i] = byte(rng.Intn(256))
		}
		editIncrementally(t, runner, src, script, true)
	}
}

// FuzzIncrementalLargeClass is FuzzIncremental's edits in a class large
// enough to be indexed by its methods: an edit inside one method takes the
// others' shares of the index, their summaries and their findings over
// from the last version, which FuzzIncremental's small files never reach.
func FuzzIncrementalLargeClass(f *testing.F) {
	src := largeClass(f, 36)
	script := func(edits ...seedEdit) []byte { return wideScript(src, edits...) }
	// A second backward pass inside a method in the middle; a line of
	// __init__ broken, and a call added in another method; a method's
	// header broken and mended.
	f.Add(script(seedEdit{"def step18", "\n            opt.step()", 0, ".backward()"}))
	f.Add(script(seedEdit{"", "self.history = []", 3, ""}, seedEdit{"def evaluate3", "))", 0, ".cuda()"}))
	f.Add(script(seedEdit{"def step7(self, loader, opt)", ":", 1, ""}, seedEdit{"def step7(self, loader, opt)", "\n", 0, ":"}))
	// NumPy no longer takes the recorder's container: its calls keep
	// graphs (semantic's withoutClassReaders).
	f.Add(script(seedEdit{"", "np.mean", 7, ""}))
	// The class's own statements: an attribute a method reads renamed, an
	// alias bound to another method, the docstring left open.
	f.Add(script(seedEdit{"", "keep_arrays = True", 0, "loss"}))
	f.Add(script(seedEdit{"run_step = ", "fit", 3, "loss"}))
	f.Add(script(seedEdit{"Training steps.", "\"\"\"", 3, ""}))
	runner := &analysis.Runner{Rules: rules.All()}
	f.Fuzz(func(t *testing.T, script []byte) {
		editIncrementally(t, runner, src, script, true)
	})
}

// seedEdit is an edit of a seed script: remove bytes where at first occurs
// after skip, and insert (one of fragments).
type seedEdit struct {
	skip, at string
	remove   int
	insert   string
}

// wideScript returns a wide script (see editIncrementally) of edits of
// src, each placed in the text as the ones before it leave it.
func wideScript(src []byte, edits ...seedEdit) []byte {
	text := string(src)
	var out []byte
	for _, e := range edits {
		i := strings.Index(text, e.skip) + len(e.skip)
		i += strings.Index(text[i:], e.at)
		// The share rounded up: editIncrementally's floor of it is i.
		share := (i*65536 + len(text) - 1) / len(text)
		out = append(out, byte(share>>8), byte(share), byte(e.remove), byte(slices.Index(fragments, e.insert)))
		text = text[:i] + e.insert + text[i+e.remove:]
	}
	return out
}

// FuzzIncrementalKeptClass is FuzzIncrementalLargeClass's edits in a
// class large enough to keep its tree-sitter tree: each edit inside it is
// parsed incrementally from that tree by the tree-sitter built in, which
// looks inside the old subtrees stock tree-sitter skipped
// (internal/go-tree-sitter), and the result must be a fresh parse's and a
// fresh analysis's. Seeds: a letter typed before the first statement of a
// method's body and before the last one of a loop's, a bracket left open.
func FuzzIncrementalKeptClass(f *testing.F) {
	src := largeClass(f, 64)
	if class := len(src) - strings.Index(string(src), "class Suite"); class < 33<<10 {
		f.Fatalf("the class is %d bytes: too small to keep its tree (pyast's keepTreeFrom, 32 KB)", class)
	}
	f.Add(wideScript(src, seedEdit{"def step30", "losses = []", 0, "loss"}))
	f.Add(wideScript(src, seedEdit{"def evaluate40", "outs.append(self.model(x))", 0, "loss"}))
	f.Add(wideScript(src, seedEdit{"def step50", "opt.zero_grad()", 0, "("}))
	runner := &analysis.Runner{Rules: rules.All()}
	f.Fuzz(func(t *testing.T, script []byte) {
		editIncrementally(t, runner, src, script, true)
	})
}

// largeClass returns a training file whose class of methods that read one
// another and pairs of training and evaluation methods (every local rule's
// findings in each) is over the size from which a class is indexed by its
// methods (36 pairs; 64 are over the size from which it keeps its
// tree-sitter tree).
func largeClass(t testing.TB, pairs int) []byte {
	var b strings.Builder
	// The class's own statements among its methods: a docstring, class
	// attributes a method reads, an alias of a method.
	b.WriteString("import numpy as np\nimport torch\nfrom torch.utils.data import DataLoader\n\n\nclass Suite(torch.nn.Module):\n" +
		"    \"\"\"Training steps.\"\"\"\n\n    keep_arrays = True\n    batches = 4\n\n" +
		"    def __init__(self):\n        super().__init__()\n        self.model = torch.nn.Linear(4, 2)\n        self.history = []\n        self.arrays = []\n")
	// Methods that read one another: a call's summary, a recorder whose
	// container another method hands to NumPy, a closure.
	b.WriteString(`
    def fwd(self, x):
        return self.model(x)

    def fit(self, loader, opt):
        for x in loader:
            out = self.fwd(x)
            loss = out.sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if self.keep_arrays:
                self.add_array(out)

    run_step = fit

    def add_array(self, out):
        self.arrays.append(out)

    def summary(self):
        print(np.mean(self.arrays))

    def predict(self, loader):
        with torch.no_grad():
            return [self.fwd(x) for x in loader]

    def nested(self, loader):
        def inner(x):
            return self.model(x)
        return [inner(x) for x in loader]
`)
	for i := range pairs {
		fmt.Fprintf(&b, `
    def step%[1]d(self, loader, opt):
        losses = []
        total = 0
        for x in loader:
            loss = self.model(x).sum() * %[1]d
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss)
            total += loss
            torch.cuda.empty_cache()
        self.history.append(total)
        return losses, total

    def evaluate%[1]d(self, loader):
        self.model.eval()
        outs = []
        for x in loader:
            outs.append(self.model(x))
        return outs
`, i)
	}
	b.WriteString("\n\ndef run(suite, loader, opt):\n    return suite.step0(loader, opt)\n")
	src := []byte(b.String())
	if len(src) < 16<<10 {
		t.Fatalf("the class is %d bytes: too small to be indexed by its methods", len(src))
	}
	return src
}
