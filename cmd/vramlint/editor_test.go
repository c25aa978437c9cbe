package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/rules"
	"github.com/vramlint/vramlint/codeactions"
)

// buildVramlint builds the binary into a temporary folder and returns the
// folder, to put on PATH for editors.
func buildVramlint(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "vramlint"), ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// editor returns the path of an editor binary, or skips; with
// VRAMLINT_REQUIRE_EDITORS set (as .ci/test does) it fails instead.
func editor(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("VRAMLINT_REQUIRE_EDITORS") != "" {
			t.Fatalf("%s is not installed", name)
		}
		t.Skipf("%s is not installed", name)
	}
	return path
}

// runEditorOnSeed copies the article's program into a fresh folder, runs
// an editor on it (args built from the file and report paths, with the
// vramlint binary on PATH), and checks the editor's report and the file it
// saved: the article's program fixed through the editor's own LSP client,
// byte for byte what `check --fix --unsafe-fixes` writes.
func runEditorOnSeed(t *testing.T, name string, env func(file, report string) []string, args ...string) {
	t.Helper()
	path := editor(t, name)
	bin := buildVramlint(t)
	work := t.TempDir()
	file := filepath.Join(work, "dataloader_leak.py")
	seed, err := os.ReadFile(filepath.Join("..", "..", "testdata", "seed", "dataloader_leak.py"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, seed, 0o644); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(work, "report.txt")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "HOME="+work,
		"XDG_STATE_HOME="+work, "XDG_DATA_HOME="+work, "XDG_CONFIG_HOME="+work)
	cmd.Env = append(cmd.Env, env(file, report)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, out)
	}
	got, _ := os.ReadFile(report)
	for _, want := range []string{
		"diagnostics: GPU001@42 GPU001@43 GPU005@87\n",
		"apply: vramlint (GPU001): Move the device transfer into the training loop (unsafe)\n",
		"apply: vramlint (GPU005): Move `torch.cuda.empty_cache()` after the loop (unsafe)\n",
		"remaining: \n",
		"done\n",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("%s report lacks %q:\n%s", name, want, got)
		}
	}
	fixed, _ := os.ReadFile(file)
	runner := &analysis.Runner{Rules: rules.All()}
	want, err := codeactions.FixAll(context.Background(), runner, file, seed, nil, codeactions.Preferred(true))
	if err != nil {
		t.Fatal(err)
	}
	if string(fixed) != string(want.Source) {
		t.Errorf("the file %s saved differs from `check --fix --unsafe-fixes`:\n%s", name, codeactions.UnifiedDiff(file, want.Source, fixed))
	}
}

// Debian's Neovim 0.7, headless, with editors/nvim/vramlint.lua. Neovim
// 0.7 does not advertise documentChanges and echoes diagnostics with byte
// columns: the plain-changes path and range matching are exercised.
func TestNeovimFixesTheArticleProgram(t *testing.T) {
	dir, _ := filepath.Abs(filepath.Join("..", "..", "editors", "nvim"))
	runEditorOnSeed(t, "nvim", func(file, report string) []string {
		return []string{"VRAMLINT_NVIM_FILE=" + file, "VRAMLINT_NVIM_OUT=" + report}
	}, "--headless", "-n", "-i", "NONE", "-u", filepath.Join(dir, "vramlint.lua"), "-c", "luafile "+filepath.Join(dir, "test.lua"))
}

// Debian's Emacs with Eglot 1.9, in batch mode, with editors/emacs/vramlint.el.
// Eglot 1.9 cannot resolve code actions: the edits must be in the actions.
func TestEmacsEglotFixesTheArticleProgram(t *testing.T) {
	dir, _ := filepath.Abs(filepath.Join("..", "..", "editors", "emacs"))
	runEditorOnSeed(t, "emacs", func(file, report string) []string {
		return []string{"VRAMLINT_EMACS_FILE=" + file, "VRAMLINT_EMACS_OUT=" + report}
	}, "--batch", "-L", dir, "-l", filepath.Join(dir, "test.el"))
}
