package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

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

// runEditor copies the article's program into a fresh folder and runs an
// editor there, with HOME and the XDG folders in that folder and PATH as
// given; env adds the variables that name the file and the report. It
// fails the test when the editor fails, and returns the program's path,
// its original text, the report the editor wrote and the editor's output.
func runEditor(t *testing.T, editorPath, pathVar string, env func(file, report string) []string, args ...string) (file string, seed []byte, report string, out []byte) {
	t.Helper()
	work := t.TempDir()
	file = filepath.Join(work, "dataloader_leak.py")
	seed, err := os.ReadFile(filepath.Join("..", "..", "testdata", "seed", "dataloader_leak.py"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, seed, 0o644); err != nil {
		t.Fatal(err)
	}
	report, out = runEditorIn(t, work, editorPath, pathVar, env(file, filepath.Join(work, "report.txt")), args...)
	return file, seed, report, out
}

// runEditorIn runs an editor in the folder work, with HOME and the XDG
// folders there, PATH as given and env added; it fails the test when the
// editor fails, and returns the report the editor wrote to work/report.txt
// and the editor's output.
func runEditorIn(t *testing.T, work, editorPath, pathVar string, env []string, args ...string) (report string, out []byte) {
	t.Helper()
	reportPath := filepath.Join(work, "report.txt")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, editorPath, args...)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PATH="+pathVar, "HOME="+work,
		"XDG_STATE_HOME="+work, "XDG_DATA_HOME="+work, "XDG_CONFIG_HOME="+work)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", filepath.Base(editorPath), err, out)
	}
	got, _ := os.ReadFile(reportPath)
	return string(got), out
}

// runEditorOnSeed runs an editor on the article's program (args built from
// the file and report paths, with the vramlint binary on PATH), and checks
// the editor's report and the file it saved: the article's program fixed
// through the editor's own LSP client, byte for byte what `check --fix
// --unsafe-fixes` writes.
func runEditorOnSeed(t *testing.T, name string, env func(file, report string) []string, args ...string) string {
	t.Helper()
	path := editor(t, name)
	bin := buildVramlint(t)
	file, seed, got, _ := runEditor(t, path, bin+":"+os.Getenv("PATH"), env, args...)
	for _, want := range []string{
		"diagnostics: GPU001@42 GPU001@43 GPU005@87\n",
		"apply: vramlint (GPU001): Move the device transfer into the training loop (unsafe)\n",
		"apply: vramlint (GPU005): Move `torch.cuda.empty_cache()` after the loop (unsafe)\n",
		"remaining: \n",
		"done\n",
	} {
		if !strings.Contains(got, want) {
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
	return got
}

// Debian's Neovim 0.7, headless, set up as the README says (test/init.lua:
// editors/nvim on 'runtimepath', require("vramlint").setup()). Neovim 0.7
// does not advertise documentChanges and echoes diagnostics with byte
// columns: the plain-changes path and range matching are exercised.
func TestNeovimFixesTheArticleProgram(t *testing.T) {
	dir, _ := filepath.Abs(filepath.Join("..", "..", "editors", "nvim", "test"))
	runEditorOnSeed(t, "nvim", func(file, report string) []string {
		return []string{"VRAMLINT_NVIM_FILE=" + file, "VRAMLINT_NVIM_OUT=" + report}
	}, "--headless", "-n", "-i", "NONE", "-u", filepath.Join(dir, "init.lua"), "-c", "luafile "+filepath.Join(dir, "fix_article.lua"))
}

// runNeovimScript runs a headless Neovim set up as the README says, with
// PATH as given, on a copy of the article's program, and returns the
// report the script wrote.
func runNeovimScript(t *testing.T, script, path string) string {
	t.Helper()
	nvim := editor(t, "nvim")
	dir, _ := filepath.Abs(filepath.Join("..", "..", "editors", "nvim", "test"))
	_, _, got, out := runEditor(t, nvim, path, func(file, report string) []string {
		return []string{"VRAMLINT_NVIM_FILE=" + file, "VRAMLINT_NVIM_OUT=" + report}
	}, "--headless", "-n", "-i", "NONE", "-u", filepath.Join(dir, "init.lua"), "-c", "luafile "+filepath.Join(dir, script))
	if strings.Contains(string(out), "E5108") || strings.Contains(string(out), "stack traceback") {
		t.Errorf("nvim %s printed a Lua error:\n%s", script, out)
	}
	if !strings.HasSuffix(got, "done\n") {
		t.Fatalf("nvim %s did not finish:\n%s", script, got)
	}
	return got
}

// Neovim applies a fix that edits two files: the Dataset in data.py and
// the training loops in train.py (a file it has not opened), and saves
// both as `check --fix --unsafe-fixes` writes them.
func TestNeovimFixesAcrossFiles(t *testing.T) {
	nvim := editor(t, "nvim")
	bin := buildVramlint(t)
	project := filepath.Join("..", "..", "testdata", "projects", "flat")
	work, expected := t.TempDir(), t.TempDir()
	for _, dir := range []string{work, expected} {
		if err := os.CopyFS(dir, os.DirFS(project)); err != nil {
			t.Fatal(err)
		}
	}
	if _, errOut, code := vramlint(t, "check", "--fix", "--unsafe-fixes", expected); code != exitClean {
		t.Fatalf("check --fix: exit %d: %s", code, errOut)
	}
	dir, _ := filepath.Abs(filepath.Join("..", "..", "editors", "nvim", "test"))
	got, out := runEditorIn(t, work, nvim, bin+":"+os.Getenv("PATH"),
		[]string{"VRAMLINT_NVIM_FILE=" + filepath.Join(work, "data.py"), "VRAMLINT_NVIM_OUT=" + filepath.Join(work, "report.txt")},
		"--headless", "-n", "-i", "NONE", "-u", filepath.Join(dir, "init.lua"), "-c", "luafile "+filepath.Join(dir, "fix_across_files.lua"))
	if strings.Contains(string(out), "E5108") || strings.Contains(string(out), "stack traceback") {
		t.Errorf("nvim printed a Lua error:\n%s", out)
	}
	for _, want := range []string{"errors: GPU001@15 GPU001@15 (4 DataLoader workers; related train.py)\n",
		"apply: vramlint (GPU001): Move the device transfer into the training loop (unsafe)\n", "remaining: \n", "done\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	for _, name := range []string{"data.py", "train.py"} {
		saved, _ := os.ReadFile(filepath.Join(work, name))
		want, _ := os.ReadFile(filepath.Join(expected, name))
		if string(saved) != string(want) {
			t.Errorf("Neovim saved %s differently from `check --fix --unsafe-fixes`:\n%s", name, codeactions.UnifiedDiff(name, want, saved))
		}
	}
}

// The Neovim 0.11 config (lsp/vramlint.lua) loads as a table with the
// right fields, and :checkhealth vramlint reports the binary and the client.
func TestNeovimConfigAndCheckhealth(t *testing.T) {
	bin := buildVramlint(t)
	got := runNeovimScript(t, "health.lua", bin+":"+os.Getenv("PATH"))
	for _, want := range []string{
		"config: cmd=vramlint server filetypes=python root_markers=5 settings=table\n",
		"OK",
		filepath.Join(bin, "vramlint") + ": vramlint ",
		"1 vramlint client(s) running",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "ERROR") {
		t.Errorf("checkhealth reports an error:\n%s", got)
	}
}

// Without the binary, opening Python buffers says so once, clearly, and
// raises no Lua error.
func TestNeovimWithoutTheBinary(t *testing.T) {
	nvim := editor(t, "nvim")
	got := runNeovimScript(t, "missing_binary.lua", filepath.Dir(nvim)+":/usr/bin:/bin")
	if strings.Count(got, "notify(") != 1 || !strings.Contains(got, "vramlint: `vramlint` was not found; install it (pip install vramlint)") ||
		!strings.Contains(got, "errors: none\n") || !strings.Contains(got, "clients: 0\n") {
		t.Errorf("report:\n%s", got)
	}
}

// Debian's Emacs with Eglot 1.9, in batch mode, set up by vramlint-eglot-setup
// from editors/emacs/vramlint.el.
// Eglot 1.9 cannot resolve code actions: the edits must be in the actions.
func TestEmacsEglotFixesTheArticleProgram(t *testing.T) {
	dir, _ := filepath.Abs(filepath.Join("..", "..", "editors", "emacs"))
	runEditorOnSeed(t, "emacs", func(file, report string) []string {
		return []string{"VRAMLINT_EMACS_FILE=" + file, "VRAMLINT_EMACS_OUT=" + report}
	}, "--batch", "-L", dir, "-l", filepath.Join(dir, "test.el"))
}

// Debian's Emacs with lsp-mode 8.0, in batch mode, vramlint registered as
// an add-on server by editors/emacs/vramlint.el. lsp-mode resolves code
// actions and applies edits its own way.
func TestEmacsLspModeFixesTheArticleProgram(t *testing.T) {
	dir, _ := filepath.Abs(filepath.Join("..", "..", "editors", "emacs"))
	report := runEditorOnSeed(t, "emacs", func(file, report string) []string {
		return []string{"VRAMLINT_EMACS_FILE=" + file, "VRAMLINT_EMACS_OUT=" + report}
	}, "--batch", "-L", dir, "-l", filepath.Join(dir, "test-lsp-mode.el"))
	// Beside the user's Python server, in both Python modes.
	if !strings.Contains(report, "add-on: t\n") || !strings.Contains(report, "modes: (python-mode python-ts-mode)\n") {
		t.Errorf("lsp-mode registration:\n%s", report)
	}
}

// editors/helix/languages.toml parses as TOML, declares the vramlint
// server beside Helix's default Python servers, and its command serves:
// initialize, shutdown and exit through exactly those arguments.
func TestHelixLanguagesToml(t *testing.T) {
	var conf struct {
		LanguageServer map[string]struct {
			Command string   `toml:"command"`
			Args    []string `toml:"args"`
		} `toml:"language-server"`
		Language []struct {
			Name            string   `toml:"name"`
			LanguageServers []string `toml:"language-servers"`
		} `toml:"language"`
	}
	if _, err := toml.DecodeFile(filepath.Join("..", "..", "editors", "helix", "languages.toml"), &conf); err != nil {
		t.Fatal(err)
	}
	server, ok := conf.LanguageServer["vramlint"]
	if !ok || server.Command != "vramlint" || strings.Join(server.Args, " ") != "server" {
		t.Fatalf("language-server.vramlint: %+v", conf.LanguageServer)
	}
	if len(conf.Language) != 1 || conf.Language[0].Name != "python" ||
		strings.Join(conf.Language[0].LanguageServers, " ") != "ruff jedi pylsp vramlint" {
		t.Errorf("python's language-servers must keep Helix's defaults and add vramlint: %+v", conf.Language)
	}
	bin := buildVramlint(t)
	cmd := exec.Command(filepath.Join(bin, server.Command), server.Args...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	replies := bufio.NewReader(stdout)
	// call sends a request and returns its reply, as a client waits for it.
	call := func(body string) string {
		fmt.Fprintf(stdin, "Content-Length: %d\r\n\r\n%s", len(body), body)
		var length int
		for {
			line, err := replies.ReadString('\n')
			if err != nil {
				t.Fatalf("reading the reply to %s: %v", body, err)
			}
			if n, ok := strings.CutPrefix(strings.TrimSpace(line), "Content-Length: "); ok {
				length, _ = strconv.Atoi(n)
			}
			if strings.TrimSpace(line) == "" && length > 0 {
				msg := make([]byte, length)
				if _, err := io.ReadFull(replies, msg); err != nil {
					t.Fatal(err)
				}
				return string(msg)
			}
		}
	}
	if reply := call(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`); !strings.Contains(reply, `"codeActionProvider"`) {
		t.Errorf("initialize through %s %v: %s", server.Command, server.Args, reply)
	}
	call(`{"jsonrpc":"2.0","id":2,"method":"shutdown"}`)
	fmt.Fprintf(stdin, "Content-Length: 33\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"exit\"}")
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit: %v", err)
	}
}
