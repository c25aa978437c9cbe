package codeactions

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/rules"
)

var update = flag.Bool("update", false, "rewrite the fix golden files")

var fixtures = filepath.Join("..", "analysis", "rules", "testdata")

// goldens maps a golden file's suffix to the fixes it records.
var goldens = map[string]Chooser{
	// The preferred fixes, unsafe ones included: `check --fix --unsafe-fixes`.
	".golden": Preferred(true),
	// Only safe fixes: `check --fix`.
	".safe.golden": Preferred(false),
	// Each diagnostic's last fix with edits: the alternatives to the
	// preferred one (display-only fixes are advice, never applied).
	".alternative.golden": func(d analysis.Diagnostic) *analysis.Fix {
		for i := len(d.Fixes) - 1; i >= 0; i-- {
			if d.Fixes[i].Applicability != analysis.DisplayOnly {
				return &d.Fixes[i]
			}
		}
		return nil
	},
}

func fix(t *testing.T, path string, src []byte, choose Chooser) *FixResult {
	t.Helper()
	runner := &analysis.Runner{Rules: rules.All()}
	res, err := FixAll(context.Background(), runner, path, src, nil, choose)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, d := range res.Dropped {
		t.Errorf("%s", d)
	}
	return res
}

// Every golden file is the fixture after its fixes, byte for byte.
func TestFixGoldens(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(fixtures, "*", "*.py"))
	found := 0
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for suffix, choose := range goldens {
			golden := file + suffix
			want, err := os.ReadFile(golden)
			if err != nil && !*update {
				continue
			}
			got := fix(t, file, src, choose).Source
			if *update {
				if suffix == ".golden" && string(got) != string(src) || err == nil {
					if err := os.WriteFile(golden, got, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				continue
			}
			found++
			if string(got) != string(want) {
				t.Errorf("%s differs from the fixed source:\n%s", golden, UnifiedDiff(golden, want, got))
			}
		}
	}
	if found < 10 && !*update {
		t.Errorf("only %d golden files", found)
	}
}

// Fixing every fixture leaves code that parses as well as before, and a
// second run changes nothing.
func TestFixesIdempotentAndParse(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(fixtures, "*", "*.py"))
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for suffix, choose := range goldens {
			first := fix(t, file, src, choose)
			before, _ := pyast.Parse(context.Background(), src)
			after, _ := pyast.Parse(context.Background(), first.Source)
			if !before.HasError() && after.HasError() {
				t.Errorf("%s (%s): the fixed source does not parse", file, suffix)
			}
			if first.Rounds >= MaxRounds {
				t.Errorf("%s (%s): fixes did not settle in %d rounds", file, suffix, MaxRounds)
			}
			second := fix(t, file, first.Source, choose)
			if second.Fixed != 0 || string(second.Source) != string(first.Source) {
				t.Errorf("%s (%s): a second run changed the file:\n%s", file, suffix, UnifiedDiff(file, first.Source, second.Source))
			}
		}
	}
}

func TestSelectFixesSkipsOverlapsAndSharesIdenticalFixes(t *testing.T) {
	shared := analysis.Fix{Title: "a", Edits: []analysis.Edit{{Start: 0, End: 1}}}
	diags := []analysis.Diagnostic{
		{Fixes: []analysis.Fix{shared}},
		{Fixes: []analysis.Fix{shared}},
		{Fixes: []analysis.Fix{{Title: "b", Edits: []analysis.Edit{{Start: 0, End: 2, NewText: "x"}}}}},
		{Fixes: []analysis.Fix{{Title: "c", Applicability: analysis.Unsafe, Edits: []analysis.Edit{{Start: 5, End: 6}}}}},
		{Fixes: []analysis.Fix{{Title: "d", Applicability: analysis.DisplayOnly, Edits: []analysis.Edit{{Start: 8, End: 9}}}}},
	}
	edits, fixed := SelectFixes(diags, Preferred(false))
	if fixed != 2 || len(edits) != 1 {
		t.Errorf("safe only: %d fixed, edits %v", fixed, edits)
	}
	edits, fixed = SelectFixes(diags, Preferred(true))
	if fixed != 3 || len(edits) != 2 {
		t.Errorf("with unsafe: %d fixed, edits %v", fixed, edits)
	}
}

func TestWriteFixed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "train.py")
	if err := os.WriteFile(path, []byte("old\n"), 0o751); err != nil {
		t.Fatal(err)
	}
	if err := WriteFixed(path, []byte("old\n"), []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	info, _ := os.Stat(path)
	if string(got) != "new\n" || info.Mode().Perm() != 0o751 {
		t.Errorf("content %q, mode %v", got, info.Mode().Perm())
	}
	// The file changed since it was read: not written.
	if err := WriteFixed(path, []byte("old\n"), []byte("newer\n")); err != ErrChangedOnDisk {
		t.Errorf("changed on disk: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "new\n" {
		t.Errorf("a changed file was overwritten: %q", got)
	}
	// A symlink stays a symlink; its target is rewritten.
	link := filepath.Join(dir, "link.py")
	if err := os.Symlink("train.py", link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFixed(link, []byte("new\n"), []byte("newest\n")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the symlink was replaced by a file")
	}
	if got, _ := os.ReadFile(path); string(got) != "newest\n" {
		t.Errorf("target: %q", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestUnifiedDiff(t *testing.T) {
	old := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
	new := "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk"
	want := "--- x.py\n+++ x.py\n@@ -1,5 +1,5 @@\n a\n-b\n+B\n c\n d\n e\n@@ -8,3 +8,4 @@\n h\n i\n j\n+k\n\\ No newline at end of file\n"
	if got := UnifiedDiff("x.py", []byte(old), []byte(new)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if UnifiedDiff("x.py", []byte(old), []byte(old)) != "" {
		t.Error("equal inputs must give no diff")
	}
}

// A fix that does not resolve its diagnostic (here: one that adds a blank
// line and leaves the problem) is dropped after one try, the other fixes
// still apply, and fixing reaches a fixed point.
func TestFixThatDoesNotConvergeIsDropped(t *testing.T) {
	treadmill := &analysis.Rule{Code: "GPU997", Name: "treadmill", DefaultSeverity: analysis.SeverityWarning, Run: func(p *analysis.Pass) {
		if i := strings.Index(string(p.Src), "TREADMILL"); i >= 0 {
			p.Report(analysis.Diagnostic{Start: i, End: i + 9, Message: "never fixed", Fixes: []analysis.Fix{{
				Title: "Add a blank line", Edits: []analysis.Edit{{Start: 0, End: 0, NewText: "\n"}},
			}}})
		}
	}}
	runner := &analysis.Runner{Rules: append(rules.All(), treadmill)}
	src := []byte("import torch\n# TREADMILL\nfor step, b in enumerate(loader):\n    loss = model(b)\n    loss.backward()\n    torch.cuda.empty_cache()\n")
	once, err := FixAll(context.Background(), runner, "t.py", src, nil, Preferred(true))
	if err != nil {
		t.Fatal(err)
	}
	if once.Fixed != 1 || strings.Count(string(once.Source), "\n") != strings.Count(string(src), "\n") {
		t.Errorf("fixed %d, source:\n%s", once.Fixed, once.Source)
	}
	if len(once.Dropped) != 1 || !strings.Contains(once.Dropped[0], `GPU997: dropped fix "Add a blank line": it does not resolve the problem`) {
		t.Errorf("dropped: %q", once.Dropped)
	}
	twice, err := FixAll(context.Background(), runner, "t.py", once.Source, nil, Preferred(true))
	if err != nil {
		t.Fatal(err)
	}
	if twice.Fixed != 0 || string(twice.Source) != string(once.Source) {
		t.Errorf("a second run changed the file:\n%s", twice.Source)
	}
}
