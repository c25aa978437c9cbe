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

// Applicable reports whether fix may be applied to its file without the
// user choosing it: safe fixes always, unsafe ones when enabled,
// display-only never. A fix that also edits other files is not: fixing
// all of one file never touches another (see CrossFile).
func Applicable(fix analysis.Fix, unsafe bool) bool {
	if len(fix.Others) > 0 {
		return false
	}
	return allowed(fix, unsafe)
}

// allowed is Applicable without the one-file condition.
func allowed(fix analysis.Fix, unsafe bool) bool {
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
//
// Each round must bring the file strictly closer to clean: at least as many
// fewer diagnostics as the round claims to fix. A round that does not is
// undone and its fixes are tried one at a time; a fix that does not resolve
// what it claims is dropped (and named in Dropped), so fixing reaches a
// fixed point instead of rewriting the file on every run.
func FixAll(ctx context.Context, runner *analysis.Runner, path string, src []byte, settings *analysis.Settings, choose Chooser) (*FixResult, error) {
	out := &FixResult{Source: src}
	res, err := runner.Run(ctx, path, src, settings)
	if err != nil {
		return nil, err
	}
	out.Remaining = res
	out.Dropped = append(out.Dropped, res.DroppedFixes...)
	rejected := map[string]bool{}
	allowed := func(d analysis.Diagnostic) *analysis.Fix {
		fix := choose(d)
		if fix == nil || len(rejected) > 0 && rejected[fixKey(out.Remaining, d, fix)] {
			return nil
		}
		return fix
	}
	// try applies the fixes allowed for diags and keeps the result if it
	// is closer to clean by as many diagnostics as they claim to fix.
	try := func(diags []analysis.Diagnostic) (applied bool, err error) {
		edits, fixed := SelectFixes(diags, allowed)
		if len(edits) == 0 {
			return false, nil
		}
		next, err := analysis.ApplyEdits(out.Source, edits)
		if err != nil {
			return false, fmt.Errorf("%s: applying fixes: %w", path, err)
		}
		nextRes, err := runner.Run(ctx, path, next, settings)
		if err != nil {
			return false, err
		}
		if len(nextRes.Diagnostics) > len(out.Remaining.Diagnostics)-fixed {
			return false, nil
		}
		out.Source, out.Remaining = next, nextRes
		out.Fixed += fixed
		out.Dropped = append(out.Dropped, nextRes.DroppedFixes...)
		return true, nil
	}
	// oneFix applies the first allowed fix that resolves its diagnostic
	// alone, dropping (and naming) each that does not on the way.
	oneFix := func() (applied bool, err error) {
		for _, d := range out.Remaining.Diagnostics {
			fix := allowed(d)
			if fix == nil {
				continue
			}
			if applied, err := try([]analysis.Diagnostic{d}); applied || err != nil {
				return applied, err
			}
			rejected[fixKey(out.Remaining, d, fix)] = true
			line := out.Remaining.Mapper().LineOf(d.Start) + 1
			out.Dropped = append(out.Dropped, fmt.Sprintf("%s:%d: %s: dropped fix %q: it does not resolve the problem", path, line, d.Code, fix.Title))
		}
		return false, nil
	}
	for out.Rounds < MaxRounds {
		applied, err := try(out.Remaining.Diagnostics)
		if err != nil {
			return nil, err
		}
		if applied {
			out.Rounds++
			continue
		}
		// Nothing to apply, or a fix of the round let it down: one at a
		// time, each on the file as the last one left it, in one round.
		// Every fix kept leaves fewer diagnostics and every one refused is
		// not tried again, so the round ends. (With a round a fix, a file
		// of more than MaxRounds findings whose fixes together made a new
		// one ran out of rounds.)
		progress := false
		for {
			applied, err := oneFix()
			if err != nil {
				return nil, err
			}
			if !applied {
				break
			}
			progress = true
		}
		if !progress {
			break
		}
		out.Rounds++
	}
	return out, nil
}

// fixKey identifies a diagnostic's fix across rounds, whose offsets move:
// by its rule, title, and the text of the line it is reported on.
func fixKey(res *analysis.Result, d analysis.Diagnostic, fix *analysis.Fix) string {
	m := res.Mapper() // res is the analysis of the current source
	return d.Code + "\x00" + fix.Title + "\x00" + string(m.Line(m.LineOf(d.Start)))
}
