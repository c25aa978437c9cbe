package codeactions

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/analysistest"
	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/rules"
)

// parses reports whether src parses without a syntax error.
func parses(t *testing.T, src []byte) bool {
	tree, err := pyast.Parse(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	return !tree.HasError()
}

// Every offered fix applies, and on a file that parses leaves it parsing
// (and aligned as Python requires, where it was);
// fix-all reaches a fixed point, and applying it again changes nothing.
func FuzzFixes(f *testing.F) {
	for _, src := range analysistest.Sources(f, filepath.Join(fixtures, "*", "*.py")) {
		f.Add(src)
	}
	runner := &analysis.Runner{Rules: rules.All()}
	f.Fuzz(func(t *testing.T, src []byte) {
		if analysis.CheckSource(src) != nil {
			return
		}
		res := analysistest.Analyze(t, runner, src)
		// On a file that parses, no fix may break the syntax. (On one that
		// does not, tree-sitter's error recovery is not local: fixes are
		// checked region by region, see analysis/verify.go.)
		// Nor, on one that Python's indentation rules accept too, the
		// indentation tree-sitter does not check.
		parsed := !res.Model().Tree.HasError()
		clean := parsed && pyast.ParsesCleanly(src)
		for _, d := range res.Diagnostics {
			for _, fix := range d.Fixes {
				fixed, err := analysis.ApplyEdits(src, fix.Edits)
				if err != nil {
					t.Fatalf("%s fix %q does not apply: %v", d.Code, fix.Title, err)
				}
				if parsed && !parses(t, fixed) {
					t.Fatalf("%s fix %q breaks the syntax:\n%s", d.Code, fix.Title, fixed)
				}
				if clean && !pyast.ParsesCleanly(fixed) {
					t.Fatalf("%s fix %q breaks the indentation:\n%s", d.Code, fix.Title, fixed)
				}
			}
		}
		once, err := FixAll(context.Background(), runner, "fuzz.py", src, nil, Preferred(true))
		if err != nil {
			t.Fatal(err)
		}
		if once.Rounds == MaxRounds {
			t.Fatalf("fix-all did not reach a fixed point in %d rounds:\n%s", MaxRounds, once.Source)
		}
		twice, err := FixAll(context.Background(), runner, "fuzz.py", once.Source, nil, Preferred(true))
		if err != nil {
			t.Fatal(err)
		}
		if twice.Fixed != 0 || string(twice.Source) != string(once.Source) {
			t.Fatalf("fix-all applied twice differs from once (%d more fixed):\n%s", twice.Fixed, UnifiedDiff("once", once.Source, twice.Source))
		}
	})
}
