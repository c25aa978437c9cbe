package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// vramlint runs the command in-process and returns stdout, stderr and the
// exit code.
func vramlint(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return stdout.String(), stderr.String(), code
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

type jsonDiag struct {
	Code     string `json:"code"`
	Name     string `json:"name"`
	Message  string `json:"message"`
	Detail   string `json:"detail"`
	Severity string `json:"severity"`
	File     string `json:"file"`
	Start    struct{ Line, Column int }
	End      struct{ Line, Column int }
	Fix      *struct{ Title, Safety string }
	URL      string `json:"url"`
	Related  []struct {
		Message string
		Start   struct{ Line, Column int }
	}
}

func checkJSON(t *testing.T, args ...string) ([]jsonDiag, string, int) {
	t.Helper()
	out, errOut, code := vramlint(t, append([]string{"check", "--output-format", "json"}, args...)...)
	var diags []jsonDiag
	if err := json.Unmarshal([]byte(out), &diags); err != nil {
		t.Fatalf("JSON output does not parse: %v\n%s", err, out)
	}
	return diags, errOut, code
}

const leaky = `import torch
from torch.utils.data import Dataset


class D(Dataset):
    def __getitem__(self, i):
        return torch.ones(1).cuda()
`

// The article's program: GPU001 on both .cuda() lines in __getitem__
// (naming the 4 workers), GPU005 on the per-batch empty_cache(), and
// nothing else.
func TestSeedArticleProgram(t *testing.T) {
	diags, errOut, code := checkJSON(t, filepath.Join("..", "..", "testdata", "seed", "dataloader_leak.py"))
	if code != exitFindings || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var got []string
	for _, d := range diags {
		got = append(got, fmt.Sprintf("%s@%d", d.Code, d.Start.Line))
	}
	if strings.Join(got, " ") != "GPU001@42 GPU001@43 GPU005@87" {
		t.Fatalf("diagnostics: %v", got)
	}
	for _, d := range diags[:2] {
		if !strings.Contains(d.Message, "runs in 4 DataLoader workers") || !strings.Contains(d.Detail, "Cannot re-initialize CUDA") || d.Start.Column != 36 || d.Severity != "error" {
			t.Errorf("GPU001: %+v", d)
		}
		if len(d.Related) != 1 || d.Related[0].Start.Line != 51 {
			t.Errorf("GPU001 must point at the DataLoader on line 51: %+v", d.Related)
		}
	}
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "clean.py"), "import torch\nx = torch.ones(1)\n")
	writeFile(t, filepath.Join(dir, "leaky.py"), leaky)
	cases := []struct {
		args []string
		want int
	}{
		{[]string{"check", filepath.Join(dir, "clean.py")}, exitClean},
		{[]string{"check", filepath.Join(dir, "leaky.py")}, exitFindings},
		{[]string{"check", dir}, exitFindings},
		{[]string{"check", "--ignore", "GPU001", dir}, exitClean},
		{[]string{"check", "--select", "GPU005", dir}, exitClean},
		{[]string{"check", "--select", "GPU9", dir}, exitError},
		{[]string{"check", "--output-format", "xml", dir}, exitError},
		{[]string{"check", "--no-such-flag", dir}, exitError},
		{[]string{"check", filepath.Join(dir, "missing.py")}, exitError},
		{[]string{"frobnicate"}, exitError},
		{[]string{}, exitError},
		{[]string{"rule", "GPU999"}, exitError},
	}
	for _, c := range cases {
		if _, errOut, code := vramlint(t, c.args...); code != c.want {
			t.Errorf("%v: exit %d, want %d (stderr %q)", c.args, code, c.want, errOut)
		}
	}
}

func TestTextOutput(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "leaky.py")
	writeFile(t, path, strings.ReplaceAll(leaky, "        return", "\t\treturn"))
	out, _, _ := vramlint(t, "check", path)
	want := path + ":7:23: GPU001 "
	if !strings.HasPrefix(out, want) {
		t.Fatalf("first line: want prefix %q, got\n%s", want, out)
	}
	// The caret line keeps the tabs so the caret sits under `.cuda()`.
	if !strings.Contains(out, "7 | \t\treturn torch.ones(1).cuda()\n  | \t\t                    ^^^^^^^\n") {
		t.Errorf("source line and caret:\n%s", out)
	}
	// No loop over the Dataset in the file: the fix is advice only.
	if !strings.Contains(out, "  = fix (display-only): Return CPU tensors from `D.__getitem__` and move each batch where it is used (no loop over its batches in this file)\n") {
		t.Errorf("fix line:\n%s", out)
	}
	if !strings.HasSuffix(out, "Found 1 problem.\n") {
		t.Errorf("summary:\n%s", out)
	}
	clean := filepath.Join(dir, "clean.py")
	writeFile(t, clean, "import torch\n")
	if out, _, _ := vramlint(t, "check", clean); out != "All checks passed!\n" {
		t.Errorf("clean output: %q", out)
	}
}

func TestJSONOutput(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "leaky.py")
	// A CJK comment before the call: columns count code points.
	writeFile(t, path, strings.Replace(leaky, "        return torch", "        x = '中文😀'; return torch", 1))
	diags, _, code := checkJSON(t, path)
	if code != exitFindings || len(diags) != 1 {
		t.Fatalf("exit %d, %d diagnostics", code, len(diags))
	}
	d := diags[0]
	if d.Code != "GPU001" || d.Name != "device-move-in-dataset" || d.File != path || d.Severity != "warning" ||
		d.Start.Line != 7 || d.Start.Column != 40 || d.End.Line != 7 || d.End.Column != 47 ||
		!strings.HasSuffix(d.URL, "/docs/rules/GPU001.md") {
		t.Errorf("diagnostic: %+v", d)
	}
	clean := filepath.Join(dir, "clean.py")
	writeFile(t, clean, "import torch\n")
	out, _, _ := vramlint(t, "check", "--output-format", "json", clean)
	if strings.TrimSpace(out) != "[]" {
		t.Errorf("no findings must be an empty array, got %q", out)
	}
}

func TestSARIFOutput(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "leaky.py"), strings.Replace(leaky, "        return torch", "        x = '😀'; return torch", 1))
	out, _, code := vramlint(t, "check", "--output-format", "sarif", dir)
	if code != exitFindings {
		t.Fatalf("exit %d", code)
	}
	var doc struct {
		Schema  string `json:"$schema"`
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name  string
					Rules []struct {
						ID                   string
						Name                 string
						ShortDescription     struct{ Text string }
						HelpURI              string `json:"helpUri"`
						DefaultConfiguration struct{ Level string }
					}
				}
			}
			Results []struct {
				RuleID    string `json:"ruleId"`
				RuleIndex int    `json:"ruleIndex"`
				Level     string
				Message   struct{ Text string }
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string }
						Region           struct{ StartLine, StartColumn, EndLine, EndColumn int }
					}
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("SARIF does not parse: %v", err)
	}
	if doc.Version != "2.1.0" || !strings.Contains(doc.Schema, "sarif-2.1.0") || len(doc.Runs) != 1 {
		t.Fatalf("SARIF header: %+v", doc)
	}
	run := doc.Runs[0]
	if run.Tool.Driver.Name != "vramlint" || len(run.Tool.Driver.Rules) < 5 {
		t.Fatalf("driver: %+v", run.Tool.Driver)
	}
	for _, r := range run.Tool.Driver.Rules {
		if r.ID == "" || r.Name == "" || r.ShortDescription.Text == "" || r.HelpURI == "" || r.DefaultConfiguration.Level == "" {
			t.Errorf("rule metadata incomplete: %+v", r)
		}
	}
	if len(run.Results) != 1 {
		t.Fatalf("results: %+v", run.Results)
	}
	res := run.Results[0]
	loc := res.Locations[0].PhysicalLocation
	// SARIF columns are UTF-16 code units: the emoji counts 2.
	if res.RuleID != "GPU001" || run.Tool.Driver.Rules[res.RuleIndex].ID != "GPU001" || res.Level != "warning" ||
		!strings.HasSuffix(loc.ArtifactLocation.URI, "leaky.py") || loc.Region.StartLine != 7 || loc.Region.StartColumn != 39 {
		t.Errorf("result: %+v", res)
	}
}

func TestGitHubOutput(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "leaky.py")
	writeFile(t, path, leaky)
	out, _, _ := vramlint(t, "check", "--output-format", "github", path)
	re := regexp.MustCompile(`^::warning title=GPU001 device-move-in-dataset,file=[^,]+leaky\.py,line=7,col=29,endLine=7,endColumn=36::GPU001 [^\n]+\n$`)
	if !re.MatchString(out) {
		t.Errorf("github output:\n%s", out)
	}
}

// Bad input never stops the run: each gets one line on stderr, the rest is
// checked, and the exit code is 2.
func TestBadInputs(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "good.py"), leaky)
	writeFile(t, filepath.Join(dir, "binary.py"), "import torch\x00\x01\x02")
	writeFile(t, filepath.Join(dir, "latin1.py"), "import torch\n# caf\xe9\n")
	huge := bytes.Repeat([]byte("x = 1  # torch\n"), 50<<20/15)
	if err := os.WriteFile(filepath.Join(dir, "huge.py"), huge, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("gone.py", filepath.Join(dir, "dangling.py")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("self.py", filepath.Join(dir, "self.py")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..", filepath.Join(dir, "sub", "up")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "broken_syntax.py"), "import torch\ndef f(:\n")

	diags, errOut, code := checkJSON(t, dir)
	if code != exitError {
		t.Errorf("exit %d, want %d", code, exitError)
	}
	if len(diags) != 1 || !strings.HasSuffix(diags[0].File, "good.py") {
		t.Errorf("the good file must still be checked: %+v", diags)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	wants := []string{
		"binary.py: looks like a binary file",
		"latin1.py: is not valid UTF-8 (line 2",
		"huge.py: file is too large (49 MB; the limit is 10 MB)",
		"dangling.py: broken symbolic link (to gone.py), skipped",
		"self.py: symbolic link loop, skipped",
		"note: " + filepath.Join(dir, "sub", "up") + ": links back to",
	}
	if len(lines) != len(wants) {
		t.Errorf("want %d stderr lines, got %d:\n%s", len(wants), len(lines), errOut)
	}
	for _, w := range wants {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errOut)
		}
	}
}

func TestGitignoreAndExclude(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".gitignore"), "generated/\n*_tmp.py\n!keep_tmp.py\n")
	writeFile(t, filepath.Join(dir, "pyproject.toml"), "[tool.vramlint]\nexclude = [\"vendor\"]\n[tool.vramlint.per-file-ignores]\n\"scripts/*.py\" = [\"GPU001\"]\n")
	for _, name := range []string{"a.py", "generated/b.py", "c_tmp.py", "keep_tmp.py", "vendor/d.py", "scripts/e.py", ".venv/f.py", "sub/g.py"} {
		writeFile(t, filepath.Join(dir, name), leaky)
	}
	diags, errOut, _ := checkJSON(t, dir)
	var got []string
	for _, d := range diags {
		rel, _ := filepath.Rel(dir, d.File)
		got = append(got, filepath.ToSlash(rel))
	}
	if strings.Join(got, " ") != "a.py keep_tmp.py sub/g.py" || errOut != "" {
		t.Errorf("checked: %v (stderr %q)", got, errOut)
	}
	// A file named on the command line is checked even if ignored.
	if diags, _, _ := checkJSON(t, filepath.Join(dir, "generated", "b.py")); len(diags) != 1 {
		t.Errorf("an explicitly named file must be checked")
	}
}

// .gitignore files above the checked folder count, up to the repository
// root, and not beyond it.
func TestGitignoreAboveTheCheckedFolder(t *testing.T) {
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, ".gitignore"), "*.py\n")
	repo := filepath.Join(outside, "repo")
	if err := os.MkdirAll(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(repo, ".gitignore"), "gen/\n")
	writeFile(t, filepath.Join(repo, "src", "gen", "a.py"), leaky)
	writeFile(t, filepath.Join(repo, "src", "b.py"), leaky)
	diags, _, _ := checkJSON(t, filepath.Join(repo, "src"))
	if len(diags) != 1 || !strings.HasSuffix(diags[0].File, "b.py") {
		t.Errorf("checked: %+v", diags)
	}
}

func TestBrokenConfigReportedOnce(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "pyproject.toml"), "[tool.vramlint]\nignroe = [\"GPU001\"]\n")
	for _, name := range []string{"a.py", "b.py", "sub/c.py"} {
		writeFile(t, filepath.Join(dir, name), leaky)
	}
	diags, errOut, code := checkJSON(t, dir)
	if code != exitError || len(diags) != 3 {
		t.Errorf("exit %d with %d diagnostics: linting must go on with the defaults", code, len(diags))
	}
	if strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "pyproject.toml: invalid configuration, using the defaults: [tool.vramlint] ignroe: unknown key") {
		t.Errorf("stderr: %q", errOut)
	}
}

func TestConfigSeverityAndSelect(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "pyproject.toml"), "[tool.vramlint]\nselect = [\"GPU005\"]\n[tool.vramlint.severity]\nGPU001 = \"hint\"\n")
	writeFile(t, filepath.Join(dir, "a.py"), leaky)
	if diags, _, code := checkJSON(t, dir); len(diags) != 0 || code != exitClean {
		t.Errorf("select must come from pyproject.toml: %+v", diags)
	}
	// The command line's --select replaces the file's.
	diags, _, _ := checkJSON(t, "--select", "GPU0", dir)
	if len(diags) != 1 || diags[0].Severity != "hint" {
		t.Errorf("--select over config, severity from config: %+v", diags)
	}
}

func TestRuleCommands(t *testing.T) {
	out, _, code := vramlint(t, "rule", "gpu001")
	for _, heading := range []string{"# GPU001 device-move-in-dataset", "## What it does", "## Why is this bad?", "## Example", "Use instead:", "## Fix safety"} {
		if !strings.Contains(out, heading) || code != exitClean {
			t.Errorf("rule GPU001 lacks %q", heading)
		}
	}
	out, _, _ = vramlint(t, "rules")
	for _, code := range []string{"GPU001", "GPU002", "GPU003", "GPU004", "GPU005"} {
		if !strings.Contains(out, code) {
			t.Errorf("rules lacks %s", code)
		}
	}
	out, _, _ = vramlint(t, "version")
	if !strings.HasPrefix(out, "vramlint ") {
		t.Errorf("version: %q", out)
	}
}
