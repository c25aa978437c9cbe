package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The import direction is cmd -> server -> codeactions -> analysis, and
// analysis knows nothing of LSP.
func TestImportDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps=false", "-f", "{{.ImportPath}}:{{join .Deps \" \"}}", "github.com/vramlint/vramlint/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/vramlint/vramlint/"
	layer := func(pkg string) int {
		switch {
		case strings.HasPrefix(pkg, mod+"analysis"):
			return 0
		case strings.HasPrefix(pkg, mod+"codeactions"):
			return 1
		case strings.HasPrefix(pkg, mod+"server"):
			return 2
		case strings.HasPrefix(pkg, mod+"cmd"):
			return 3
		}
		return -1
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, ":")
		from := layer(pkg)
		checked++
		for _, dep := range strings.Fields(deps) {
			if to := layer(dep); to > from && from >= 0 {
				t.Errorf("%s imports %s: imports must point cmd -> server -> codeactions -> analysis", pkg, dep)
			}
			if from == 0 && strings.HasPrefix(dep, "go.lsp.dev/") {
				t.Errorf("%s depends on %s: analysis must not know LSP", pkg, dep)
			}
		}
	}
	if checked < 5 {
		t.Fatalf("go list listed only %d packages", checked)
	}
}
