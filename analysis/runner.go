package analysis

import (
	"bytes"
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/semantic"
)

// Pass is what a rule's Run sees: the shared per-file model and a way to
// report.
type Pass struct {
	*semantic.File
	Rule        *Rule
	diagnostics []Diagnostic
	sup         *suppressions
	others      map[string]*semantic.File
}

// Other records the model of another file that a diagnostic's related
// information or a fix's edits point into. Unlike those into the file
// itself, their offsets are into the other file's source (f.ToSource):
// the result keeps only its source (Result.Others).
func (p *Pass) Other(f *semantic.File) {
	if p.others == nil {
		p.others = map[string]*semantic.File{}
	}
	p.others[f.Path] = f
}

// Suppressed reports whether a `# noqa` comment silences this rule at the
// line holding offset. Fixes use it to leave suppressed code alone.
func (p *Pass) Suppressed(offset int) bool {
	return p.sup != nil && p.sup.line(p.Mapper.LineOf(offset), p.Rule.Code)
}

// Report records a diagnostic of the running rule.
func (p *Pass) Report(d Diagnostic) {
	d.Code = p.Rule.Code
	// Titles quote code, which may span lines (`f(\n)`); editors show
	// them on one line.
	for i, fix := range d.Fixes {
		if strings.ContainsAny(fix.Title, "\n\r\t") {
			d.Fixes[i].Title = strings.Join(strings.Fields(fix.Title), " ")
		}
	}
	p.diagnostics = append(p.diagnostics, d)
}

// MaxFileSize is the largest source vramlint analyses.
const MaxFileSize = 10 << 20

// CheckSource says why src cannot be analysed as Python source, or nil.
func CheckSource(src []byte) error {
	if len(src) > MaxFileSize {
		return tooLarge(int64(len(src)))
	}
	if i := bytes.IndexByte(src, 0); i >= 0 {
		return fmt.Errorf("looks like a binary file (NUL byte at offset %d)", i)
	}
	if !utf8.Valid(src) {
		off := 0
		for off < len(src) {
			r, size := utf8.DecodeRune(src[off:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			off += size
		}
		m := NewMapper(src)
		p := m.Position(off, UTF8)
		return fmt.Errorf("is not valid UTF-8 (line %d, byte %d of the line)", p.Line+1, p.Column+1)
	}
	return nil
}

// Result is the outcome of analysing one file.
type Result struct {
	file *semantic.File
	// Src is the source; the offsets of diagnostics, related information
	// and fixes are its own (the model's may differ, see semantic.File).
	Src         []byte
	Diagnostics []Diagnostic // sorted by position, suppressions applied
	// RuleErrors are rules that failed (panicked) on this file; the other
	// rules' diagnostics are still there.
	RuleErrors []error
	// DroppedFixes explains each fix withheld because applying it would
	// have broken the file's syntax.
	DroppedFixes []string
	// Others are the sources of the other files that related information
	// and fixes point into, as they were analysed, by path.
	Others map[string][]byte

	otherModels map[string]*semantic.File // during the analysis

	mapper struct {
		sync.Once
		m *Mapper
	}
	compact *compacted // set by Compact
}

// Mapper maps Src's offsets to lines and columns.
func (res *Result) Mapper() *Mapper {
	res.mapper.Do(func() {
		if res.file == nil { // compacted
			res.mapper.m = NewMapper(res.Src)
			return
		}
		res.mapper.m = res.file.Mapper
		if res.file.Tree.LaidOut() {
			res.mapper.m = NewMapper(res.Src)
		}
	})
	return res.mapper.m
}

// Runner runs a set of rules over files. `vramlint check` and `vramlint
// server` share it, so the terminal and the editor say the same thing.
type Runner struct {
	Rules []*Rule
	// Project is the workspace the files belong to, for what a file's
	// findings depend on in other files; nil analyses each file alone.
	Project semantic.Project
}

// Run parses src and analyses it under settings.
func (r *Runner) Run(ctx context.Context, path string, src []byte, settings *Settings) (*Result, error) {
	tree, err := pyast.Parse(ctx, src)
	if err != nil {
		return nil, err
	}
	return r.Analyze(r.Model(nil, path, src, tree), settings), nil
}

// Model builds the model of a version of the file at path, reusing what it
// can of prev's, and placed in the runner's project.
func (r *Runner) Model(prev *semantic.File, path string, src []byte, tree *pyast.Tree) *semantic.File {
	return semantic.NewModelFrom(prev, semantic.ModuleInfo{Path: path, Project: r.Project}, src, tree)
}

// ReleaseMemory gives memory back to the system after a large file (see
// pyast.ReleaseMemory).
func ReleaseMemory() { pyast.ReleaseMemory() }

// Compact drops what only the analysis needed (the model, and the source
// and line index of a file without diagnostics), keeping what reports,
// fixes, NoqaEdit and NoqaCodeAt read, so that `check`, and the server for
// a large file, hold little per file.
func (res *Result) Compact() {
	f := res.file
	if f == nil {
		return
	}
	if len(res.Diagnostics) == 0 {
		res.Src = nil
		res.file = nil
		return
	}
	res.Mapper() // from the model, before it goes
	res.compact = &compacted{noqa: make([]noqaAnswer, len(res.Diagnostics))}
	for i, d := range res.Diagnostics {
		res.compact.noqa[i].edit, res.compact.noqa[i].ok = res.NoqaEdit(d)
	}
	for _, c := range f.Comments {
		res.compact.comments = append(res.compact.comments, [2]int{f.ToSource(c.Start), f.ToSource(c.End)})
	}
	res.file = nil
}

// compacted is what a compacted Result keeps of its model.
type compacted struct {
	noqa     []noqaAnswer // NoqaEdit of each diagnostic, in order
	comments [][2]int     // the source ranges of the comments
}

type noqaAnswer struct {
	edit Edit
	ok   bool
}

// AnalyzeTree analyses a version of a buffer already parsed (see
// pyast.Editor), reusing what it can of prev, the result of an earlier
// version of the same buffer (nil for none).
func (r *Runner) AnalyzeTree(prev *Result, path string, src []byte, tree *pyast.Tree, settings *Settings) *Result {
	var base *semantic.File
	if prev != nil {
		base = prev.file
	}
	return r.Analyze(r.Model(base, path, src, tree), settings)
}

// Model is the semantic model the result was computed from, for tests and
// tools that look inside; the server and the reports need only the
// diagnostics, their fixes and NoqaEdit.
func (res *Result) Model() *semantic.File { return res.file }

// Analyze runs the enabled rules over a file model.
func (r *Runner) Analyze(f *semantic.File, settings *Settings) *Result {
	if settings == nil {
		settings = &Settings{}
	}
	res := &Result{file: f, Src: f.Source()}
	sup := parseSuppressions(f)
	var enabled []*Rule
	for _, rule := range r.Rules {
		if settings.Enabled(rule.Code, f.Path) && !sup.file(rule.Code) {
			enabled = append(enabled, rule)
		}
	}
	// The rules only read the model (its remembered answers are guarded),
	// so they run side by side; their results are taken in rule order.
	type outcome struct {
		diags  []Diagnostic
		others map[string]*semantic.File
		err    error
	}
	outcomes := make([]outcome, len(enabled))
	semantic.InParallel(len(enabled), func(i int) {
		outcomes[i].diags, outcomes[i].others, outcomes[i].err = runRule(enabled[i], f, sup)
	})
	for i, rule := range enabled {
		diags, err := outcomes[i].diags, outcomes[i].err
		if err != nil {
			res.RuleErrors = append(res.RuleErrors, err)
		}
		for path, other := range outcomes[i].others {
			if res.otherModels == nil {
				res.otherModels = map[string]*semantic.File{}
			}
			res.otherModels[path] = other
		}
		for _, d := range diags {
			if sup.line(f.Mapper.LineOf(d.Start), d.Code) {
				continue
			}
			d.Severity = settings.severity(rule, d.Severity)
			res.Diagnostics = append(res.Diagnostics, d)
		}
	}
	res.verifyFixes()
	// Safe fixes first, otherwise in the rule's order (its main fix first):
	// the first fix is the one `check` shows and editors mark preferred.
	for _, d := range res.Diagnostics {
		slices.SortStableFunc(d.Fixes, func(a, b Fix) int { return int(a.Applicability) - int(b.Applicability) })
	}
	res.toSource()
	sort.SliceStable(res.Diagnostics, func(i, j int) bool {
		a, b := res.Diagnostics[i], res.Diagnostics[j]
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		return a.Code < b.Code
	})
	return res
}

// verifyFixes drops every fix whose result would have a syntax error the
// source did not have: a fix is only offered if it leaves valid code.
// Distinct fixes (several diagnostics often share one) are verified side
// by side.
func (res *Result) verifyFixes() {
	f := res.file
	index := map[string]int{} // a fix's edits -> its place in fixes
	var fixes []Fix
	at := make([][]int, len(res.Diagnostics)) // each diagnostic's fixes in fixes
	for i, d := range res.Diagnostics {
		for _, fix := range d.Fixes {
			key := fix.EditsKey()
			j, seen := index[key]
			if !seen {
				j = len(fixes)
				index[key] = j
				fixes = append(fixes, fix)
			}
			at[i] = append(at[i], j)
		}
	}
	verdicts := make([]error, len(fixes))
	var trees regionTrees
	defer trees.close()
	otherTrees := map[string]*regionTrees{}
	for path := range res.otherModels {
		otherTrees[path] = &regionTrees{}
		defer otherTrees[path].close()
	}
	semantic.InParallel(len(fixes), func(i int) {
		verdicts[i] = verifyFix(f, fixes[i], &trees)
		for _, o := range fixes[i].Others {
			if verdicts[i] != nil {
				break
			}
			if other := res.otherModels[o.Path]; other == nil {
				verdicts[i] = fmt.Errorf("%s was not recorded with the fix", o.Path)
			} else if err := verifyFix(other, Fix{Edits: fromSource(other, o.Edits)}, otherTrees[o.Path]); err != nil {
				verdicts[i] = fmt.Errorf("in %s: %w", o.Path, err)
			}
		}
	})
	for i := range res.Diagnostics {
		d := &res.Diagnostics[i]
		kept := d.Fixes[:0]
		for k, fix := range d.Fixes {
			if err := verdicts[at[i][k]]; err != nil {
				line := f.Mapper.LineOf(d.Start) + 1
				res.DroppedFixes = append(res.DroppedFixes, fmt.Sprintf("%s:%d: %s: dropped fix %q: %v", f.Path, line, d.Code, fix.Title, err))
				continue
			}
			kept = append(kept, fix)
		}
		d.Fixes = kept
	}
}

// fromSource converts edits to another file's source (see Pass.Other) to
// offsets into its model's text.
func fromSource(f *semantic.File, edits []Edit) []Edit {
	out := make([]Edit, len(edits))
	for i, e := range edits {
		out[i] = Edit{Start: f.FromSource(e.Start), End: f.FromSource(e.End), NewText: e.NewText}
	}
	return out
}

// toSource converts the offsets rules reported in f.Src to the source's.
func (res *Result) toSource() {
	f := res.file
	for path, other := range res.otherModels {
		if res.Others == nil {
			res.Others = map[string][]byte{}
		}
		res.Others[path] = other.Source()
	}
	res.otherModels = nil // their sources are all that is kept of them
	if !f.Tree.LaidOut() {
		return // the same text
	}
	for i := range res.Diagnostics {
		d := &res.Diagnostics[i]
		d.Start, d.End = f.ToSource(d.Start), f.ToSource(d.End)
		// Copies: diagnostics may share their fixes.
		related := slices.Clone(d.Related)
		for j, r := range related {
			if r.Path == "" {
				related[j].Start, related[j].End = f.ToSource(r.Start), f.ToSource(r.End)
			}
		}
		d.Related = related
		fixes := slices.Clone(d.Fixes)
		for j, fix := range fixes {
			if fix.Edits == nil {
				continue // display-only
			}
			edits := make([]Edit, len(fix.Edits))
			for k, e := range fix.Edits {
				edits[k] = Edit{Start: f.ToSource(e.Start), End: f.ToSource(e.End), NewText: e.NewText}
			}
			fix.Edits = edits
			fixes[j] = fix
		}
		d.Fixes = fixes
	}
}

// runRule runs one rule, turning a panic into an error so that one broken
// rule never takes the others (or the language server) down.
func runRule(rule *Rule, f *semantic.File, sup *suppressions) (diags []Diagnostic, others map[string]*semantic.File, err error) {
	pass := &Pass{File: f, Rule: rule, sup: sup}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("rule %s panicked on %s: %v\n%s", rule.Code, f.Path, p, debug.Stack())
			diags, others = pass.diagnostics, pass.others
		}
	}()
	rule.Run(pass)
	return pass.diagnostics, pass.others, nil
}
