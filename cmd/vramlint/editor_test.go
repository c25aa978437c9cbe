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

// Real Neovim (Debian's 0.7), headless, with editors/nvim/vramlint.lua:
// diagnostics appear, and the article's program is fixed through Neovim's
// own code-action requests and workspace-edit application.
func TestNeovimFixesTheArticleProgram(t *testing.T) {
	nvim := editor(t, "nvim")
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
	editors, _ := filepath.Abs(filepath.Join("..", "..", "editors", "nvim"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nvim, "--headless", "-n", "-i", "NONE",
		"-u", filepath.Join(editors, "vramlint.lua"), "-c", "luafile "+filepath.Join(editors, "test.lua"))
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "VRAMLINT_NVIM_FILE="+file,
		"VRAMLINT_NVIM_OUT="+report, "XDG_STATE_HOME="+work, "XDG_DATA_HOME="+work, "XDG_CONFIG_HOME="+work)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nvim: %v\n%s", err, out)
	}
	got, _ := os.ReadFile(report)
	lines := string(got)
	for _, want := range []string{
		"diagnostics: GPU001@42 GPU001@43 GPU005@87\n",
		"apply: vramlint (GPU001): Move the device transfer into the training loop (unsafe)\n",
		"apply: vramlint (GPU005): Move `torch.cuda.empty_cache()` after the loop (unsafe)\n",
		"remaining: \n",
		"done\n",
	} {
		if !strings.Contains(lines, want) {
			t.Errorf("report lacks %q:\n%s", want, lines)
		}
	}
	fixed, _ := os.ReadFile(file)
	runner := &analysis.Runner{Rules: rules.All()}
	want, err := codeactions.FixAll(context.Background(), runner, file, seed, nil, codeactions.Preferred(true))
	if err != nil {
		t.Fatal(err)
	}
	if string(fixed) != string(want.Source) {
		t.Errorf("the file Neovim wrote differs from `check --fix --unsafe-fixes`:\n%s", codeactions.UnifiedDiff(file, want.Source, fixed))
	}
}
