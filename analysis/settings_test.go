package analysis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vramlint/vramlint/analysis/pyast"
)

func withKnownCodes(t *testing.T) {
	old := KnownCodes
	KnownCodes = []string{"GPU001", "GPU002", "GPU005", "GPU101"}
	t.Cleanup(func() { KnownCodes = old })
}

func TestParseSettings(t *testing.T) {
	withKnownCodes(t)
	s, found, err := ParseSettings("/p/pyproject.toml", []byte(`
[project]
name = "x"

[tool.vramlint]
select = ["GPU0"]
ignore = ["GPU005"]
extend-select = ["GPU101"]
exclude = ["generated/**"]
unsafe-fixes = true

[tool.vramlint.per-file-ignores]
"tests/*.py" = ["GPU001"]

[tool.vramlint.severity]
GPU002 = "error"
`))
	if err != nil || !found {
		t.Fatalf("ParseSettings: found=%v err=%v", found, err)
	}
	if !s.UnsafeFixes || s.Root != "/p" || s.Severity["GPU002"] != SeverityError {
		t.Errorf("settings: %+v", s)
	}
	checks := []struct {
		code, path string
		want       bool
	}{
		{"GPU001", "/p/train.py", true},
		{"GPU005", "/p/train.py", false},   // ignored, more specific than GPU0
		{"GPU101", "/p/train.py", true},    // extend-select
		{"GPU001", "/p/tests/t.py", false}, // per-file-ignores
		{"GPU002", "/p/tests/t.py", true},
	}
	for _, c := range checks {
		if got := s.Enabled(c.code, c.path); got != c.want {
			t.Errorf("Enabled(%s, %s) = %v, want %v", c.code, c.path, got, c.want)
		}
	}
	if !s.Excluded("/p/generated/a/b.py") || s.Excluded("/p/src/generated.py") {
		t.Error("exclude patterns")
	}
}

func TestSelectorSpecificity(t *testing.T) {
	s := &Settings{Select: []string{"GPU005"}, Ignore: []string{"GPU0"}}
	if !s.Enabled("GPU005", "a.py") || s.Enabled("GPU001", "a.py") {
		t.Error("the more specific select must win over a prefix ignore")
	}
	s = &Settings{Select: []string{"GPU001"}, Ignore: []string{"GPU001"}}
	if s.Enabled("GPU001", "a.py") {
		t.Error("at equal specificity ignore wins")
	}
	if !(&Settings{}).Enabled("GPU101", "a.py") {
		t.Error("no select means every rule")
	}
}

func TestSettingsErrorsNameFileAndKey(t *testing.T) {
	withKnownCodes(t)
	cases := map[string]string{
		"[tool.vramlint]\nselct = [\"GPU0\"]\n":             `selct: unknown key`,
		"[tool.vramlint]\nselect = \"GPU0\"\n":              `select: must be a list of strings`,
		"[tool.vramlint]\nselect = [\"GPU9\"]\n":            `select: "GPU9" matches no rule`,
		"[tool.vramlint]\nunsafe-fixes = \"yes\"\n":         `unsafe-fixes: must be true or false`,
		"[tool.vramlint.severity]\nGPU001 = \"loud\"\n":     `severity: GPU001: unknown severity "loud"`,
		"[tool.vramlint]\nper-file-ignores = [\"x\"]\n":     `per-file-ignores: must be a table`,
		"[tool.vramlint\nselect = 1\n":                      `not valid TOML`,
		"[tool.vramlint.per-file-ignores]\n\"a\" = [\"X\"]": `per-file-ignores: "a": "X" matches no rule`,
	}
	for text, want := range cases {
		_, _, err := ParseSettings("/proj/pyproject.toml", []byte(text))
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "/proj/pyproject.toml: ") {
			t.Errorf("%q: error %v, want it to name the file and contain %q", text, err, want)
		}
	}
}

func TestFindSettings(t *testing.T) {
	withKnownCodes(t)
	root := t.TempDir()
	sub := filepath.Join(root, "pkg", "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "pyproject.toml"), "[tool.vramlint]\nignore = [\"GPU005\"]\n")
	// A pyproject.toml without [tool.vramlint] is passed over.
	write(filepath.Join(root, "pkg", "pyproject.toml"), "[project]\nname = \"pkg\"\n")
	s, err := FindSettings(sub)
	if err != nil || s.Source != filepath.Join(root, "pyproject.toml") || s.Enabled("GPU005", filepath.Join(sub, "a.py")) {
		t.Fatalf("FindSettings: %+v, %v", s, err)
	}
	// A broken file is reported, and the defaults are returned.
	write(filepath.Join(root, "pkg", "pyproject.toml"), "[tool.vramlint]\nselect = [1]\n")
	s, err = FindSettings(sub)
	if err == nil || s == nil || !s.Enabled("GPU005", "a.py") {
		t.Fatalf("broken config: %+v, %v", s, err)
	}
}

func TestOverrides(t *testing.T) {
	withKnownCodes(t)
	base := &Settings{Ignore: []string{"GPU001"}}
	s, err := base.WithOverrides(Overrides{"ignore": []string{}, "select": []any{"GPU001"}})
	if err != nil || !s.Enabled("GPU001", "a.py") || s.Enabled("GPU002", "a.py") {
		t.Fatalf("overrides: %+v %v", s, err)
	}
	if base.Ignore[0] != "GPU001" {
		t.Error("WithOverrides changed its receiver")
	}
	if _, err := base.WithOverrides(Overrides{"bogus": 1}); err == nil {
		t.Error("an unknown override key must be an error")
	}
}

func TestMatchGlob(t *testing.T) {
	cases := []struct {
		pattern, path string
		want          bool
	}{
		{"build", "a/build/x.py", true},
		{"*.py", "a/b.py", true},
		{"/a/*.py", "a/b.py", true},
		{"a/*.py", "a/c/b.py", false},
		{"a/**/b.py", "a/x/y/b.py", true},
		{"a/**/b.py", "a/b.py", true},
		{"tests/", "tests/x.py", true},
		{"x[0-9].py", "x1.py", true},
		{"x[!0-9].py", "x1.py", false},
		{"foo", "foobar/x.py", false},
	}
	for _, c := range cases {
		if got := MatchGlob(c.pattern, c.path); got != c.want {
			t.Errorf("MatchGlob(%q, %q) = %v, want %v", c.pattern, c.path, got, c.want)
		}
	}
}

// testRule reports every call to a function named `flag` (and panics on
// `boom`), so runner behaviour can be tested without the real rules.
var testRule = &Rule{
	Code: "GPU001", Name: "test-rule", DefaultSeverity: SeverityWarning,
	Run: func(p *Pass) {
		for _, c := range p.Calls() {
			switch p.Text(c.Child("function")) {
			case "flag":
				p.Report(Diagnostic{Start: c.Start(), End: c.End(), Message: "flagged"})
			case "flag_error":
				p.Report(Diagnostic{Start: c.Start(), End: c.End(), Message: "flagged", Severity: SeverityError})
			case "boom":
				var n *pyast.Node
				_ = n.Kind()
			}
		}
	},
}

var otherRule = &Rule{
	Code: "GPU002", Name: "other-rule", DefaultSeverity: SeverityInfo,
	Run: func(p *Pass) {
		for _, c := range p.Calls() {
			if p.Text(c.Child("function")) == "flag" {
				p.Report(Diagnostic{Start: c.Start(), End: c.End(), Message: "other"})
			}
		}
	},
}

func run(t *testing.T, src string, s *Settings) *Result {
	t.Helper()
	r := &Runner{Rules: []*Rule{testRule, otherRule}}
	res, err := r.Run(context.Background(), "t.py", []byte(src), s)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func lines(res *Result) []string {
	var out []string
	for _, d := range res.Diagnostics {
		p := res.file.Mapper.Position(d.Start, UTF8)
		out = append(out, strings.Join([]string{d.Code, string(rune('0' + p.Line + 1)), d.Severity.String()}, ":"))
	}
	return out
}

func TestNoqa(t *testing.T) {
	src := `flag()  # noqa: GPU001
flag()  # noqa: GPU001, GPU002
flag()  # noqa
flag()  # NOQA:GPU002
s = "# noqa"; flag()
flag()
`
	got := strings.Join(lines(run(t, src, nil)), " ")
	want := "GPU002:1:info GPU001:4:warning GPU001:5:warning GPU002:5:info GPU001:6:warning GPU002:6:info"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestNoqaEdit checks the edit that silences a finding on its line: a
// code added to the line's noqa comment, a comment added where there is
// none (after another comment too), nothing where the line ends inside a
// string (a bare noqa silences the finding itself), and the same in a block of
// thousands of statements, where the comment and the string are looked
// up rather than walked past.
func TestNoqaEdit(t *testing.T) {
	body := strings.Repeat("    x = 1\n", 3000)
	src := "flag()  # noqa: GPU002\n" +
		"flag()  # noqa\n" +
		"flag()  # a note\n" +
		"s = flag(), \"\"\"a\nb\"\"\"\n" +
		"def f():\n" + body + "    flag()  # noqa: GPU005\n    t = flag(), '''\n    '''\n" + body +
		"flag()\n"
	res := run(t, src, nil)
	var got []string
	for _, d := range res.Diagnostics {
		if d.Code != "GPU001" {
			continue
		}
		line := res.file.Mapper.Position(d.Start, UTF8).Line + 1
		e, ok := res.NoqaEdit(d)
		if !ok {
			got = append(got, fmt.Sprintf("%d:none", line))
			continue
		}
		at := res.file.Mapper.Position(res.file.FromSource(e.Start), UTF8)
		got = append(got, fmt.Sprintf("%d:%d:%d:%q", line, at.Line+1, at.Column, e.NewText))
	}
	want := []string{
		`1:1:22:", GPU001"`, `3:3:16:"  # noqa: GPU001"`, "4:none",
		`3007:3007:26:", GPU001"`, "3008:none", `6010:6010:6:"  # noqa: GPU001"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("noqa edits\ngot  %q\nwant %q", got, want)
	}
}

func TestFileNoqa(t *testing.T) {
	if got := lines(run(t, "flag()\n# vramlint: noqa\n", nil)); len(got) != 0 {
		t.Errorf("file-level noqa: %v", got)
	}
	if got := strings.Join(lines(run(t, "flag()\n# vramlint: noqa: GPU001\n", nil)), " "); got != "GPU002:1:info" {
		t.Errorf("file-level noqa with a code: %v", got)
	}
}

func TestSeverityPrecedence(t *testing.T) {
	src := "flag()\nflag_error()\n"
	if got := strings.Join(lines(run(t, src, nil)), " "); got != "GPU001:1:warning GPU002:1:info GPU001:2:error" {
		t.Errorf("defaults: %s", got)
	}
	s := &Settings{Severity: map[string]Severity{"GPU0": SeverityHint, "GPU001": SeverityInfo}}
	if got := strings.Join(lines(run(t, src, s)), " "); got != "GPU001:1:info GPU002:1:hint GPU001:2:info" {
		t.Errorf("configured: %s", got)
	}
}

func TestRulePanicIsContained(t *testing.T) {
	res := run(t, "flag()\nboom()\n", nil)
	if len(res.RuleErrors) != 1 || !strings.Contains(res.RuleErrors[0].Error(), "GPU001 panicked") {
		t.Fatalf("RuleErrors = %v", res.RuleErrors)
	}
	if got := strings.Join(lines(res), " "); got != "GPU001:1:warning GPU002:1:info" {
		t.Errorf("diagnostics around the panic: %s", got)
	}
}

func TestSyntaxErrorsStillAnalysed(t *testing.T) {
	res := run(t, "def broken(:\n    pass\nflag()\n", nil)
	if !res.file.Tree.HasError() || len(res.Diagnostics) != 2 {
		t.Errorf("diagnostics after a syntax error: %v", lines(res))
	}
}

func TestFixesThatBreakSyntaxAreDropped(t *testing.T) {
	rule := &Rule{
		Code: "GPU001", Name: "fixes", DefaultSeverity: SeverityWarning,
		Run: func(p *Pass) {
			for _, c := range p.Calls() {
				p.Report(Diagnostic{Start: c.Start(), End: c.End(), Message: "m", Fixes: []Fix{
					{Title: "break it", Edits: []Edit{{Start: c.End(), End: c.End(), NewText: "("}}},
					{Title: "keep it", Edits: []Edit{{Start: c.End(), End: c.End(), NewText: ".item()"}}},
				}})
			}
		},
	}
	res, err := (&Runner{Rules: []*Rule{rule}}).Run(context.Background(), "t.py", []byte("flag()\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	fixes := res.Diagnostics[0].Fixes
	if len(fixes) != 1 || fixes[0].Title != "keep it" {
		t.Errorf("fixes offered: %+v", fixes)
	}
	if len(res.DroppedFixes) != 1 || !strings.Contains(res.DroppedFixes[0], `t.py:1: GPU001: dropped fix "break it": the result would not parse`) {
		t.Errorf("drop not logged: %v", res.DroppedFixes)
	}
}
