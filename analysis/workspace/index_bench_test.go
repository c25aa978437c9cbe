package workspace_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/rules"
	"github.com/vramlint/vramlint/analysis/workspace"
)

// workspaceTree writes a package of files modules of about lines lines
// each: classes deriving from other modules' classes, functions, and in
// one module of five a DataLoader over another module's Dataset.
func workspaceTree(b *testing.B, files, lines int) string {
	b.Helper()
	root := b.TempDir()
	tree := map[string]string{"pyproject.toml": "", "pkg/__init__.py": "from .m0000 import Data0000\n"}
	for i := range files {
		var s strings.Builder
		prev := (i + files - 1) % files
		fmt.Fprintf(&s, "import torch\nfrom torch.utils.data import DataLoader, Dataset\n\nfrom .m%04d import Data%04d as Base\n\n\n", prev, prev)
		fmt.Fprintf(&s, "class Data%04d(Base if %d else Dataset):\n    def __len__(self):\n        return 10\n\n    def __getitem__(self, idx):\n        return torch.zeros(3)\n\n\n", i, i)
		for f := 0; strings.Count(s.String(), "\n") < lines-12; f++ {
			fmt.Fprintf(&s, "def helper_%d(model, x, y):\n    out = model(x)\n    loss = torch.nn.functional.mse_loss(out, y)\n    total = 0.0\n    for step in range(%d):\n        total += loss.item() * step\n    return total\n\n\n", f, f+1)
		}
		if i%5 == 0 {
			fmt.Fprintf(&s, "def make_loader():\n    return DataLoader(Data%04d(), batch_size=4, num_workers=2)\n", prev)
		}
		tree[fmt.Sprintf("pkg/m%04d.py", i)] = s.String()
	}
	writeTree(b, root, tree)
	return root
}

// BenchmarkIndexWorkspace indexes a 1,000-file, 300,000-line workspace as
// the server does when a folder opens (the files that build DataLoaders up
// front, the rest when an import reaches them), then every file, as when
// every module is reached. Reported: seconds per index, and the live heap
// the index holds afterwards.
func BenchmarkIndexWorkspace(b *testing.B) {
	root := workspaceTree(b, 1000, 300)
	for _, mode := range []string{"folder-open", "every-file"} {
		b.Run(mode, func(b *testing.B) {
			var heap float64
			for b.Loop() {
				ix := workspace.NewIndex(root)
				files := ix.Files()
				if _, err := ix.Build(context.Background(), files, nil); err != nil {
					b.Fatal(err)
				}
				if mode == "every-file" {
					for _, f := range files {
						ix.Refresh(f)
					}
				}
				// Every module's base chain, resolved as rules ask for it.
				if _, _, ok := ix.Resolve(filepath.Join(root, "pkg", "m0001.py"), "pkg.m0000.Data0000"); !ok {
					b.Fatal("pkg.m0000.Data0000 not found")
				}
				runtime.GC()
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				heap = float64(m.HeapAlloc) / (1 << 20)
				runtime.KeepAlive(ix)
			}
			b.ReportMetric(heap, "heap-MiB")
		})
	}
}

// BenchmarkCheckShapes checks, as `vramlint check` does from the folder
// above, shapes of real code that once made check (and the server on the
// same file) slow out of proportion to its size: a 30-term string
// concatenation and a sum of 40 losses (an opencompass summariser took
// 37 s; judging an operand twice a level was exponential), a function that
// reassigns one name 5,000 times (quadratic), 400 folders of scripts
// without a project marker, an index each (every question asked each index
// in turn, and each asked the system for the working directory), and
// blocks of thousands of statements: each fix's statement, each finding's
// noqa comment and whatever rebinds a summed loss were found by a walk
// past the statements before it. A chain of 5,000 calls is still slow
// (every call's question walks up through the chain; no real file comes
// near).
func BenchmarkCheckShapes(b *testing.B) {
	head := "import torch\nimport torch.nn.functional as F\n\n\n"
	loop := "def fit(model, opt, batches):\n    seen = []\n    for x, y in batches:\n        loss = F.cross_entropy(model(x), y)\n"
	var terms, losses []string
	for i := range 40 {
		terms = append(terms, fmt.Sprintf("str(row[%d])", i))
		losses = append(losses, fmt.Sprintf("F.mse_loss(model(x), y) * %d", i))
	}
	chain := head + "def report(rows):\n    out = []\n    for row in rows:\n        out.append(" + strings.Join(terms[:30], " + ") + ")\n    return out\n\n\n" +
		loop + "        total = " + strings.Join(losses, " + ") + "\n        seen.append(total)\n        total.backward()\n"
	reassigned := head + loop + strings.Repeat("        loss = loss + loss\n", 5000) + "        seen.append(loss)\n"
	// 6,000 appends of a loss in one loop body, as many sums of it, 6,000
	// elif branches in one, and a chain of 5,000 method calls on one value.
	appends := head + loop + "        loss.backward()\n" + strings.Repeat("        seen.append(loss)\n", 6000)
	sums := head + loop + "        loss.backward()\n" + strings.Repeat("        total += loss\n", 6000)
	var branches strings.Builder
	branches.WriteString(head + loop + "        loss.backward()\n        if y == 0:\n            seen.append(loss)\n")
	for i := range 6000 {
		fmt.Fprintf(&branches, "        elif y == %d:\n            seen.append(loss)\n", i+1)
	}
	chained := head + loop + "        loss.backward()\n        seen.append(loss" + strings.Repeat(".float()", 5000) + ")\n"
	folders := map[string]string{}
	for i := range 400 {
		folders[fmt.Sprintf("exp%03d/train.py", i)] = head + loop + "        seen.append(loss)\n        loss.backward()\n"
	}
	for _, c := range []struct {
		name  string
		files map[string]string
	}{
		{"operator-chains", map[string]string{"report.py": chain}},
		{"reassigned-5000-times", map[string]string{"fit.py": reassigned}},
		{"400-script-folders", folders},
		{"appends-6000-in-a-loop", map[string]string{"fit.py": appends}},
		{"sums-6000-in-a-loop", map[string]string{"fit.py": sums}},
		{"elif-6000-branches", map[string]string{"fit.py": branches.String()}},
		{"calls-5000-chained", map[string]string{"fit.py": chained}},
	} {
		b.Run(c.name, func(b *testing.B) {
			root := b.TempDir()
			writeTree(b, root, c.files)
			b.Chdir(root)
			for b.Loop() {
				checker := &workspace.Checker{Runner: &analysis.Runner{Rules: rules.All()}}
				if results, problems := checker.Check(context.Background(), []string{"."}); len(results) != len(c.files) || len(problems) > 0 {
					b.Fatalf("%d results of %d files, problems %v", len(results), len(c.files), problems)
				}
			}
		})
	}
}
