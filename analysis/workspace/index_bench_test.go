package workspace_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

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
