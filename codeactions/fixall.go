// Package codeactions turns the fixes analysis computes into edits: LSP
// code actions for the server, and rewritten files for `vramlint check --fix`.
package codeactions

import (
	"context"
	"fmt"
	"slices"

	"github.com/vramlint/vramlint/analysis"
)

// MaxRounds bounds FixAll: fixes that overlap wait for the next round, and
// a fix that keeps producing new diagnostics must not loop forever.
const MaxRounds = 10

// Applicable reports whether fix may be applied without the user choosing
// it: safe fixes always, unsafe ones when enabled, display-only never.
func Applicable(fix analysis.Fix, unsafe bool) bool {
	switch fix.Applicability {
	case analysis.Safe:
		return true
	case analysis.Unsafe:
		return unsafe
	}
	return false
}

// Chooser picks the fix to apply for a diagnostic, or nil for none.
type Chooser func(d analysis.Diagnostic) *analysis.Fix

// Preferred chooses each diagnostic's first applicable fix: the preferred
// one among those the user allowed.
func Preferred(unsafe bool) Chooser {
	return func(d analysis.Diagnostic) *analysis.Fix {
		if i := slices.IndexFunc(d.Fixes, func(f analysis.Fix) bool { return Applicable(f, unsafe) }); i >= 0 {
			return &d.Fixes[i]
		}
		return nil
	}
}

// SelectFixes picks a fix for each diagnostic and keeps those whose edits
// do not overlap an earlier pick. Diagnostics that share one fix (GPU001
// on two lines of one __getitem__) count as fixed together. It returns the
// chosen edits and how many diagnostics they fix.
func SelectFixes(diags []analysis.Diagnostic, choose Chooser) (edits []analysis.Edit, fixed int) {
	var chosen [][]analysis.Edit
	for _, d := range diags {
		fix := choose(d)
		if fix == nil {
			continue
		}
		if slices.ContainsFunc(chosen, func(c []analysis.Edit) bool { return slices.Equal(c, fix.Edits) }) {
			fixed++
			continue
		}
		if slices.ContainsFunc(chosen, func(c []analysis.Edit) bool { return analysis.Overlaps(c, fix.Edits) }) {
			continue // next round
		}
		chosen = append(chosen, fix.Edits)
		edits = append(edits, fix.Edits...)
		fixed++
	}
	return edits, fixed
}

// FixResult is a file after FixAll.
type FixResult struct {
	Source    []byte
	Fixed     int              // diagnostics resolved by fixes
	Remaining *analysis.Result // the analysis of Source
	Rounds    int
	Dropped   []string // fixes withheld because they would break the syntax
}

// FixAll applies fixes to src in rounds until none applies (at most
// MaxRounds), re-analysing after each round. choose picks each
// diagnostic's fix (Preferred for `check --fix`).
func FixAll(ctx context.Context, runner *analysis.Runner, path string, src []byte, settings *analysis.Settings, choose Chooser) (*FixResult, error) {
	out := &FixResult{Source: src}
	for {
		res, err := runner.Run(ctx, path, out.Source, settings)
		if err != nil {
			return nil, err
		}
		out.Remaining = res
		out.Dropped = append(out.Dropped, res.DroppedFixes...)
		if out.Rounds == MaxRounds {
			return out, nil
		}
		edits, fixed := SelectFixes(res.Diagnostics, choose)
		if len(edits) == 0 {
			return out, nil
		}
		next, err := analysis.ApplyEdits(out.Source, edits)
		if err != nil {
			return nil, fmt.Errorf("%s: applying fixes: %w", path, err)
		}
		out.Source, out.Fixed, out.Rounds = next, out.Fixed+fixed, out.Rounds+1
	}
}
