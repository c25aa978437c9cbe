package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The layers, each importing only the ones before it:
//
//	source, pyast (syntax) <- semantic (the model) <- analysis (the rule
//	framework) <- rules <- codeactions <- server <- cmd
//
// analysis and its sub-packages know nothing of LSP; codeactions and the
// server work through the framework's results, not the model or the syntax
// tree (the server holds parsed trees and edits them through
// pyast.Editor, and never calls tree-sitter itself).
func TestImportDirection(t *testing.T) {
	const mod = "github.com/vramlint/vramlint/"
	// The module's own packages each package may import directly.
	allowed := map[string][]string{
		"analysis/source":       {},
		"analysis/pyast":        {},
		"analysis/semantic":     {"analysis/pyast", "analysis/source"},
		"analysis":              {"analysis/pyast", "analysis/source", "analysis/semantic"},
		"analysis/report":       {"analysis", "analysis/workspace"},
		"analysis/analysistest": {"analysis"},
		// The workspace index parses files and keeps what other files need
		// of their models (see workspace.Index).
		"analysis/workspace": {"analysis", "analysis/semantic", "analysis/pyast"},
		"analysis/rules":     {"analysis", "analysis/semantic", "analysis/pyast"},
		"codeactions":        {"analysis"},
		"server":             {"analysis", "analysis/pyast", "analysis/workspace", "codeactions"},
		"cmd/vramlint": {"analysis", "analysis/report", "analysis/rules", "analysis/workspace",
			"codeactions", "server"},
		// The benchmark client speaks to a server over a pipe, as an
		// editor does: it imports none of vramlint but the generated
		// files it measures with (its yardstick for an open is
		// tree-sitter's parse, through the binding itself).
		"tools/lspbench": {"internal/generated"},
		// The typing session in its own process: vramlint's parse and
		// analysis, with the runtime tuned as the server's, and the text
		// lspbench types.
		"tools/typebench": {"analysis", "analysis/pyast", "analysis/rules", "server", "internal/generated"},
		// check's yardstick: tree-sitter's parse, through the binding
		// itself, and nothing of vramlint.
		"tools/parsefloor": {},
		// The release check reads binaries with the standard library only.
		"tools/inspectbin": {},
		// Tests' list of the ecosystem's real files: the standard library.
		"internal/realsources": {},
		// The synthetic files benchmarks measure with: text only.
		"internal/generated": {},
	}
	// Outside packages only some layers may use.
	forbidden := map[string][]string{
		"go.lsp.dev/": {"analysis/source", "analysis/pyast", "analysis/semantic", "analysis", "analysis/rules",
			"analysis/report", "analysis/workspace", "analysis/analysistest"},
		"github.com/smacker/go-tree-sitter": {"analysis/semantic", "analysis", "analysis/rules", "codeactions", "server", "cmd/vramlint"},
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}:{{join .Imports \" \"}}", "github.com/vramlint/vramlint/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ":")
		name := strings.TrimPrefix(pkg, mod)
		may, known := allowed[name]
		if !known {
			t.Errorf("package %s has no place in the layers: add it to this test", name)
			continue
		}
		checked++
		for _, imp := range strings.Fields(imports) {
			if own, ok := strings.CutPrefix(imp, mod); ok && !slices.Contains(may, own) {
				t.Errorf("%s imports %s: the layers are source, pyast <- semantic <- analysis <- rules <- codeactions <- server <- cmd", name, own)
			}
			for prefix, layers := range forbidden {
				if strings.HasPrefix(imp, prefix) && slices.Contains(layers, name) {
					t.Errorf("%s imports %s, which that layer must not use", name, imp)
				}
			}
		}
	}
	if checked < 9 {
		t.Fatalf("go list listed only %d packages", checked)
	}
}
