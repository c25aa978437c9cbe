package analysis

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"iter"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"
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
	// focus is where a local rule looks for findings (see Rule.Local);
	// nil: the whole file.
	focus semantic.Focus
	// outside are the statements whose verdict read code outside their
	// top-level statement (see ReadsOutside); moduleLevel the candidates
	// at module level (see CandidateCalls).
	outside, moduleLevel []*pyast.Node
	// definitionsRead are the definitions of other top-level statements
	// whose code a verdict read (see ReadsDefinition).
	definitionsRead []definitionRead
}

// definitionRead: the verdict on stmt read def's code.
type definitionRead struct{ stmt, def *pyast.Node }

// ReadsOutside tells the runner that the local rule's verdict on n, a
// finding or none, reads code outside n's top-level statement that the
// model's tracked answers do not cover (every use of an attribute in the
// file, say). While a buffer is edited, n's statement is then analysed
// again on every version rather than kept (see Rule.Local).
func (p *Pass) ReadsOutside(n *pyast.Node) { p.outside = append(p.outside, n) }

// ReadsDefinition tells the runner that the local rule's verdict on n read
// the code of def, a definition of the file (what a function returns),
// beyond what the model's tracked answers cover. While a buffer is edited,
// n's statement is then analysed again on every version that changes
// def's top-level statement, or finds what that statement reads changed
// (see semantic.File.Reanalysed).
func (p *Pass) ReadsDefinition(n, def *pyast.Node) {
	p.definitionsRead = append(p.definitionsRead, definitionRead{n, def})
}

// A Shape is what a rule requires of a candidate statement's own syntax
// (its kind and parts, the loops around it within its top-level
// statement), read from the node alone. A candidate without it cannot be
// a finding whatever the rest of the file says, so its verdict never
// reads outside its statement.
type Shape func(*pyast.Node) bool

// InLoop is the Shape of statements inside a for or while loop of their
// own function or module code (see semantic.EnclosingLoops).
func InLoop(n *pyast.Node) bool { return len(semantic.EnclosingLoops(n)) > 0 }

// CandidateCalls returns, in source order, the calls a rule looks at for
// findings: those whose callee's last name is one of names (see
// semantic.File.CallsNamed) and that have the shape, of the whole file,
// or, for a local rule while a buffer is edited, of the statements the
// edit touched. A candidate at module level reads the module's other
// statements too (module code is one scope across statements): while a
// buffer is edited, it is analysed again on every version that changes
// module code (see semantic.File.ModuleCodeKept); the shape keeps that to
// the statements that may be findings.
func (p *Pass) CandidateCalls(shape Shape, names ...string) []*pyast.Node {
	return p.candidates(shape, p.File.CallsNamedIn(p.focus, names...))
}

// CandidateAssignments is CandidateCalls for assignments.
func (p *Pass) CandidateAssignments(shape Shape) []*pyast.Node {
	return p.candidates(shape, p.File.AssignmentsOf(p.focus))
}

// EachCandidateLoopCall is CandidateCalls for the calls in loops (see
// semantic.File.EachLoopCall).
func (p *Pass) EachCandidateLoopCall(do func(semantic.LoopCall)) {
	// A call and its innermost loop have no function, lambda or class
	// between them (see semantic.LoopCall), so they are at module level
	// together: asked once a loop, as the calls of a loop come one after
	// another. Most loop calls are in a method of a class of thousands of
	// lines, and an ancestor walk for each cost a tenth of the rules'
	// time on an edit there.
	var loop *pyast.Node
	moduleLevel := false
	p.File.EachLoopCallIn(p.focus, func(lc semantic.LoopCall) {
		if lc.Loop != loop {
			loop, moduleLevel = lc.Loop, semantic.EnclosingFunction(lc.Loop) == nil
		}
		if moduleLevel {
			p.moduleLevel = append(p.moduleLevel, lc.Call)
		}
		do(lc)
	})
}

// candidates returns those of ns that have the shape (all of them for a
// nil shape), noting the module-level ones.
func (p *Pass) candidates(shape Shape, ns []*pyast.Node) []*pyast.Node {
	if shape != nil {
		ns = slices.DeleteFunc(slices.Clone(ns), func(n *pyast.Node) bool { return !shape(n) })
	}
	for _, n := range ns {
		if semantic.EnclosingFunction(n) == nil {
			p.moduleLevel = append(p.moduleLevel, n)
		}
	}
	return ns
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
	return p.sup != nil && p.sup.at(p.File, offset, p.Rule.Code)
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

// CheckEdited is CheckSource for src, a source passed CheckSource but for
// the bytes [lo, hi) an edit wrote: only those, and the characters they
// touch, are looked at (a keystroke in a 2 MB buffer looked at all of it).
func CheckEdited(src []byte, lo, hi int) error {
	lo, hi = max(0, min(lo, len(src))), max(0, min(hi, len(src)))
	if len(src) > MaxFileSize || hi < lo {
		return CheckSource(src)
	}
	// Out to the characters the edit's ends fall in: the one holding the
	// byte before lo (the edit may have cut it), and the one at hi. What
	// lies before from and from to on is a source that passed, cut between
	// characters.
	from, to := max(0, lo-1), hi
	for from > 0 && from > lo-1-utf8.UTFMax && !utf8.RuneStart(src[from]) {
		from--
	}
	for to < len(src) && to < hi+utf8.UTFMax && !utf8.RuneStart(src[to]) {
		to++
	}
	if from < len(src) && !utf8.RuneStart(src[from]) || to < len(src) && !utf8.RuneStart(src[to]) ||
		bytes.IndexByte(src[from:to], 0) >= 0 || !utf8.Valid(src[from:to]) {
		return CheckSource(src) // says what is wrong, and where
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
	// local are the findings of the local rules, for the next version of
	// an edited buffer (see Rule.Local); nil when not edited.
	local map[string]localFindings
	// verdicts are the verifications of its fixes by the hash of their
	// edits, for the next version (see keptVerdict); nil when not edited.
	verdicts map[uint64]keptVerdict
	dropped  []droppedFix // during the analysis, see DroppedFixes
	reused   int          // findings taken from the previous version
	// reexamined: segments the local rules analysed again (see
	// Reexamined).
	reexamined int

	mapper struct {
		sync.Once
		m *Mapper
	}
	compact *compacted // set by Compact

	// Timings says where the analysis spent its time (see Timings).
	Timings Timings
}

// Timings are the wall time of an analysis's phases, for the server's
// --trace-phases: the model (built or carried over from the last
// version's), the rules (side by side), and the check of their fixes.
type Timings struct {
	Model, Rules, Fixes time.Duration
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
	res.local, res.verdicts = nil, nil
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
	for _, c := range f.Comments() {
		res.compact.comments = append(res.compact.comments, [2]int{f.ToSource(c.Start()), f.ToSource(c.End())})
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
// version of the same buffer (nil for none): its model's answers, and
// the findings of local rules (see Rule.Local) in the statements the edit
// did not touch.
func (r *Runner) AnalyzeTree(prev *Result, path string, src []byte, tree *pyast.Tree, settings *Settings) *Result {
	var base *semantic.File
	if prev != nil {
		base = prev.file
	}
	start := time.Now()
	f := r.Model(base, path, src, tree)
	model := time.Since(start)
	res := r.analyze(prev, f, settings)
	res.Timings.Model = model
	return res
}

// Model is the semantic model the result was computed from, for tests and
// tools that look inside; the server and the reports need only the
// diagnostics, their fixes and NoqaEdit.
func (res *Result) Model() *semantic.File { return res.file }

// Analyze runs the enabled rules over a file model.
func (r *Runner) Analyze(f *semantic.File, settings *Settings) *Result {
	return r.analyze(nil, f, settings)
}

// localFindings are a local rule's findings by the segment they start in.
type localFindings map[*pyast.Segment]*segmentFindings

// segmentFindings are a local rule's findings in one segment: verified,
// with suppressed ones left out, before the settings' severity, at the
// offsets of the model's text (which a segment keeps across versions).
type segmentFindings struct {
	diags   []Diagnostic
	dropped []droppedFix // the fixes withheld from them
	// readsOutside: the rule's verdict on a statement of the segment read
	// code outside it (see Pass.ReadsOutside); analysed on every version.
	// readsModule: the segment holds a module-level candidate; analysed
	// on every version whose module code changed (see
	// semantic.File.ModuleCodeKept), or whose changed code reaches what
	// a candidate stores into (moduleKeys, see
	// semantic.File.ChangedCodeReaches).
	readsOutside, readsModule bool
	moduleKeys                []uint64
	// reads are the other segments whose definitions a verdict on a
	// statement of the segment read (see Pass.ReadsDefinition); analysed
	// again when one of them is.
	reads []*pyast.Segment
	// source holds diags at the source's offsets of the version that found
	// them, where the segment started at sourceStart. With settled (every
	// offset of diags and of the fixes withheld from them lies in the
	// segment's text, see
	// pyast.Segment.Settled), a later version holding the segment has them
	// at those offsets moved by as much as the segment moved: converting
	// every kept finding's offsets again took a tenth of a millisecond a
	// keystroke at 50,000 lines. Set once, by the analysis that made it.
	source      []Diagnostic
	sourceStart int
	settled     bool
}

// droppedFix is a fix verifyFixes withheld from the diagnostic at offset
// at of the model's text.
type droppedFix struct {
	at          int
	code, title string
	err         error
	// fix is the fix withheld: its verdict read the text its edits
	// reach, which may lie in other segments than the diagnostic's (a
	// statement moved after a loop that ends its class), so a finding
	// kept for a later version is kept only while that text is too.
	fix Fix
}

// reach is a diagnostic at d's place with the withheld fix alone: where
// the fix's verdict read (see within, settledIn).
func (d droppedFix) reach() Diagnostic {
	return Diagnostic{Start: d.at, End: d.at, Fixes: []Fix{d.fix}}
}

// analyze runs the enabled rules over f, a model built from prev's (nil
// for none).
func (r *Runner) analyze(prev *Result, f *semantic.File, settings *Settings) *Result {
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
	// Local rules run only where the findings may differ from prev's.
	var changed semantic.Focus
	incremental := false
	if prev != nil && prev.file != nil && prev.local != nil {
		changed, incremental = f.Reanalysed()
	}
	// The rules only read the model (its remembered answers are guarded),
	// so they run side by side; their results are taken in rule order.
	type outcome struct {
		focus semantic.Focus // nil: the whole file
		kept  localFindings  // prev's findings outside focus
		pass  *Pass          // what the rule found and read
		err   error
		// from, to: where its new findings are in res.Diagnostics.
		from, to int
	}
	outcomes := make([]outcome, len(enabled))
	for i, rule := range enabled {
		if cached, ok := prev.localFindings(rule.Code); ok && rule.Local && incremental {
			outcomes[i].focus, outcomes[i].kept = keepFindings(prev.file, f, cached, changed, f.ModuleCodeKept())
		}
	}
	for i, rule := range enabled {
		if rule.Local {
			res.reexamined = max(res.reexamined, len(outcomes[i].focus))
			if outcomes[i].focus == nil {
				res.reexamined = len(f.Tree.Segments)
				break
			}
		}
	}
	start := time.Now()
	semantic.InParallel(len(enabled), func(i int) {
		o := &outcomes[i]
		o.pass, o.err = runRule(enabled[i], f, sup, o.focus)
	})
	res.Timings.Rules = time.Since(start)
	for i := range enabled {
		o := &outcomes[i]
		if o.err != nil {
			res.RuleErrors = append(res.RuleErrors, o.err)
		}
		for path, other := range o.pass.others {
			if res.otherModels == nil {
				res.otherModels = map[string]*semantic.File{}
			}
			res.otherModels[path] = other
		}
		o.from = len(res.Diagnostics)
		for _, d := range o.pass.diagnostics {
			if sup.at(f, d.Start, d.Code) || o.focus != nil && !o.focus.Has(f.SegmentAt(d.Start)) {
				continue
			}
			res.Diagnostics = append(res.Diagnostics, d)
		}
		o.to = len(res.Diagnostics)
	}
	if f.Tree.LaidOut() {
		f.KeepModuleTaint()
	}
	start = time.Now()
	res.verifyFixes(prev)
	res.Timings.Fixes = time.Since(start)
	// Safe fixes first, otherwise in the rule's order (its main fix first):
	// the first fix is the one `check` shows and editors mark preferred.
	for _, d := range res.Diagnostics {
		slices.SortStableFunc(d.Fixes, func(a, b Fix) int { return int(a.Applicability) - int(b.Applicability) })
	}
	// What the next version may reuse: the findings of the local rules
	// that ran without failing, while the buffer is edited. owners are
	// the findings of each diagnostic's segment, when kept.
	owners := make([]*segmentFindings, len(res.Diagnostics))
	if f.Tree.LaidOut() {
		res.local = map[string]localFindings{}
		for i, rule := range enabled {
			o := outcomes[i]
			if !rule.Local || o.err != nil {
				continue
			}
			found := make(localFindings, len(o.kept))
			maps.Copy(found, o.kept) // kept stays prev's findings alone: they are added below
			in := func(at int) *segmentFindings {
				seg := f.SegmentAt(at)
				if found[seg] == nil {
					found[seg] = &segmentFindings{}
				}
				return found[seg]
			}
			for _, n := range o.pass.outside {
				in(n.Start()).readsOutside = true
			}
			for _, n := range o.pass.moduleLevel {
				sf := in(n.Start())
				sf.readsModule = true
				sf.moduleKeys = append(sf.moduleKeys, semantic.StoreKeys(f, n)...)
			}
			for _, r := range o.pass.definitionsRead {
				// A definition in the statement's own segment is read again
				// with it: nothing to record.
				if read := f.SegmentAt(r.def.Start()); read != f.SegmentAt(r.stmt.Start()) {
					if sf := in(r.stmt.Start()); !slices.Contains(sf.reads, read) {
						sf.reads = append(sf.reads, read)
					}
				}
			}
			for k, d := range res.Diagnostics[o.from:o.to] {
				sf := in(d.Start)
				sf.diags = append(sf.diags, d)
				owners[o.from+k] = sf
			}
			for _, drop := range res.dropped {
				if drop.code == rule.Code {
					in(drop.at).dropped = append(in(drop.at).dropped, drop)
				}
			}
			res.local[rule.Code] = found
		}
	}
	for i := range outcomes {
		for _, found := range outcomes[i].kept {
			res.reused += len(found.diags)
			res.dropped = append(res.dropped, found.dropped...)
		}
	}
	for _, drop := range res.dropped {
		line := f.Mapper.LineOf(drop.at) + 1
		res.DroppedFixes = append(res.DroppedFixes, fmt.Sprintf("%s:%d: %s: dropped fix %q: %v", f.Path, line, drop.code, drop.title, drop.err))
	}
	res.dropped = nil
	res.toSource()
	res.rememberSource(owners)
	for i := range outcomes {
		for seg, found := range outcomes[i].kept {
			res.Diagnostics = found.appendSource(res.Diagnostics, f, seg)
		}
	}
	for i := range res.Diagnostics {
		d := &res.Diagnostics[i]
		d.Severity = settings.severity(FindRule(enabled, d.Code), d.Severity)
	}
	res.Diagnostics = sortedDiagnostics(res.Diagnostics)
	return res
}

// rememberSource gives each segment's new findings (owners[i] is the
// owner of res.Diagnostics[i], converted to the source) their source
// form, for the versions that keep them.
func (res *Result) rememberSource(owners []*segmentFindings) {
	f := res.file
	for i, sf := range owners {
		if sf == nil {
			continue
		}
		if sf.source == nil {
			seg := f.SegmentAt(sf.diags[0].Start)
			sf.sourceStart, sf.settled = f.ToSource(seg.Base), true
			for _, d := range sf.diags {
				sf.settled = sf.settled && settledIn(seg, d)
			}
			for _, drop := range sf.dropped {
				sf.settled = sf.settled && settledIn(seg, drop.reach())
			}
		}
		sf.source = append(sf.source, res.Diagnostics[i])
	}
}

// appendSource appends the kept findings sf of segment seg, at f's source
// offsets.
func (sf *segmentFindings) appendSource(out []Diagnostic, f *semantic.File, seg *pyast.Segment) []Diagnostic {
	if !sf.settled || !f.Tree.LaidOut() {
		for _, d := range sf.diags {
			out = append(out, sourceDiagnostic(f, d))
		}
		return out
	}
	shift := f.ToSource(seg.Base) - sf.sourceStart
	for _, d := range sf.source {
		out = append(out, movedBy(d, shift))
	}
	return out
}

// settledIn reports whether every offset of d lies in seg's text (see
// pyast.Segment.Settled), and within it as keepFindings sees it: a kept
// finding whose offsets are settled needs no look at other segments.
func settledIn(seg *pyast.Segment, d Diagnostic) bool {
	for start, end := range d.Ranges() {
		if !seg.Settled(start) || !seg.Settled(end) {
			return false
		}
	}
	return within(d, func(off int) bool { return off >= seg.Base && off < seg.Base+seg.Len() })
}

// movedBy returns d with every offset moved by shift. Unmoved, it shares
// d's related places and fixes: nothing writes into a result's
// diagnostics once it is made.
func movedBy(d Diagnostic, shift int) Diagnostic {
	if shift == 0 {
		return d
	}
	return withOffsets(d, func(off int) int { return off + shift })
}

// withOffsets returns d with its offsets in this file (not those of
// related places in other files) mapped by to; copies of its related
// places and fixes, which other diagnostics may share.
func withOffsets(d Diagnostic, to func(int) int) Diagnostic {
	d.Start, d.End = to(d.Start), to(d.End)
	related := slices.Clone(d.Related)
	for j, r := range related {
		if r.Path == "" {
			related[j].Start, related[j].End = to(r.Start), to(r.End)
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
			edits[k] = Edit{Start: to(e.Start), End: to(e.End), NewText: e.NewText}
		}
		fixes[j].Edits = edits
	}
	d.Fixes = fixes
	return d
}

// sortedDiagnostics returns ds sorted by start, then code, stably. Each
// diagnostic gets a number that orders it so (its start, its code's rank
// among the codes present, its index), the numbers are sorted and each
// diagnostic is moved once. The kept findings of a version come in map
// order, so every version sorts them all: with a comparison of starts and
// codes and a stable sort, that was a twentieth of a keystroke's CPU in a
// script of 1,740 findings.
func sortedDiagnostics(ds []Diagnostic) []Diagnostic {
	if len(ds) < 2 {
		return ds
	}
	order, ok := diagnosticOrder(ds)
	if !ok {
		return sortedDiagnosticsByComparing(ds)
	}
	slices.Sort(order)
	sorted := make([]Diagnostic, len(ds))
	for k, key := range order {
		sorted[k] = ds[key&orderIndexMask]
	}
	return sorted
}

// The bits of a diagnostic's number (see diagnosticOrder): its start above
// its code's rank above its index.
const (
	orderIndexBits = 24
	orderRankBits  = 8
	orderIndexMask = 1<<orderIndexBits - 1
)

// diagnosticOrder returns, for each diagnostic of ds, a number that
// sorts as (start, code, index) does; ok is false when ds has more
// diagnostics, codes or bytes than the number holds.
func diagnosticOrder(ds []Diagnostic) (order []uint64, ok bool) {
	if len(ds) > orderIndexMask {
		return nil, false
	}
	var codes []string
	for i := range ds {
		if !slices.Contains(codes, ds[i].Code) {
			if len(codes) == 1<<orderRankBits {
				return nil, false
			}
			codes = append(codes, ds[i].Code)
		}
	}
	slices.Sort(codes)
	order = make([]uint64, len(ds))
	for i := range ds {
		d := &ds[i]
		if d.Start < 0 || uint64(d.Start) >= 1<<(64-orderIndexBits-orderRankBits) {
			return nil, false
		}
		rank, _ := slices.BinarySearch(codes, d.Code)
		order[i] = uint64(d.Start)<<(orderIndexBits+orderRankBits) | uint64(rank)<<orderIndexBits | uint64(i)
	}
	return order, true
}

// sortedDiagnosticsByComparing is sortedDiagnostics for what
// diagnosticOrder cannot number.
func sortedDiagnosticsByComparing(ds []Diagnostic) []Diagnostic {
	order := make([]int32, len(ds))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(i, j int32) int {
		a, b := &ds[i], &ds[j]
		return cmp.Or(cmp.Compare(a.Start, b.Start), strings.Compare(a.Code, b.Code))
	})
	sorted := make([]Diagnostic, len(ds))
	for k, i := range order {
		sorted[k] = ds[i]
	}
	return sorted
}

// Reused is how many of the diagnostics were taken, verified, from the
// result of the previous version (see Rule.Local), for tests and
// benchmarks.
func (res *Result) Reused() int { return res.reused }

// Reexamined is how many segments of the file a local rule analysed for
// this version (the most over the local rules; all of them when one ran
// over the whole file), for tests and benchmarks.
func (res *Result) Reexamined() int { return res.reexamined }

// localFindings returns the findings of the local rule code that the
// result keeps for the next version, if it does.
func (res *Result) localFindings(code string) (localFindings, bool) {
	if res == nil || res.local == nil {
		return nil, false
	}
	found, ok := res.local[code]
	return found, ok
}

// keepFindings splits a local rule's findings in prev (the model f was
// built from) into those f keeps and the segments where the rule runs
// again: those changed says (see semantic.File.Reanalysed), those where
// the rule read outside the segment (see Pass.ReadsOutside), those whose
// verdicts read a definition of a segment analysed again or gone (see
// Pass.ReadsDefinition), those holding a module-level candidate unless
// moduleKept (see semantic.File.ModuleCodeKept) and the code the edit
// changed does not reach what the candidates store into (see
// semantic.File.ChangedCodeReaches), and those holding a finding that
// reaches, with its related information, its fixes or a fix withheld from
// it, into a segment f does not share with prev, or into another file.
func keepFindings(prev, f *semantic.File, cached localFindings, changed semantic.Focus, moduleKept bool) (semantic.Focus, localFindings) {
	focus := maps.Clone(changed)
	kept := make(localFindings, len(cached))
	shared := func(off int) bool {
		seg := prev.SegmentAt(off)
		return seg != nil && seg == f.SegmentAt(off)
	}
	for seg, found := range cached {
		// seg is prev's: whether f has it too, f knows from what the
		// edit removed (see semantic.File.Keeps).
		if focus[seg] || !f.Keeps(prev, seg) {
			continue // analysed again, or gone
		}
		// The offsets inside the segment's own text are in it in both
		// versions, since both have it: most of a finding's offsets, and
		// no segment need be looked up for them.
		inside := func(off int) bool { return off >= seg.Base && off < seg.Base+seg.Len() || shared(off) }
		// Settled findings lie inside the segment (see settledIn).
		// A definition read is mostly one the statement calls by name, and
		// the focus (the segments mentioning what changed) has it already;
		// otherwise whether its segment is gone.
		readAgain := func(read *pyast.Segment) bool { return changed[read] || !f.Keeps(prev, read) }
		if found.readsOutside || found.readsModule && (!moduleKept || f.ChangedCodeReaches(found.moduleKeys)) || slices.ContainsFunc(found.reads, readAgain) || !found.settled && (slices.ContainsFunc(found.diags, func(d Diagnostic) bool { return !within(d, inside) }) ||
			slices.ContainsFunc(found.dropped, func(d droppedFix) bool { return !within(d.reach(), inside) })) {
			focus[seg] = true
			continue
		}
		kept[seg] = found
	}
	return focus, kept
}

// within reports whether every offset of d (its range, its related
// information and its fixes' edits) lies in this file where inside says.
func within(d Diagnostic, inside func(off int) bool) bool {
	if d.ReachesOtherFiles() {
		return false
	}
	for start, end := range d.Ranges() {
		if !inside(start) || !inside(max(start, end-1)) {
			return false
		}
	}
	return true
}

// verifyFixes drops every fix whose result would have a syntax error the
// source did not have: a fix is only offered if it leaves valid code.
// Distinct fixes (several diagnostics often share one, the same edits) are
// verified side by side; a fix prev verified, equal edits over the same
// segments, is not verified again (see keptVerdict).
func (res *Result) verifyFixes(prev *Result) {
	f := res.file
	index := map[editsID]int{} // a fix's edits -> its place in fixes
	var fixes []Fix
	at := make([][]int, len(res.Diagnostics)) // each diagnostic's fixes in fixes, -1: nothing to verify
	for i, d := range res.Diagnostics {
		for _, fix := range d.Fixes {
			j := -1
			if len(fix.Edits) > 0 {
				var seen bool
				if j, seen = index[idOf(fix.Edits)]; !seen {
					j = len(fixes)
					index[idOf(fix.Edits)] = j
					fixes = append(fixes, fix)
				}
			} else if len(fix.Others) > 0 {
				j = len(fixes)
				fixes = append(fixes, fix)
			}
			at[i] = append(at[i], j)
		}
	}
	verdicts := make([]keptVerdict, len(fixes))
	hashes := make([]uint64, len(fixes)) // of the fixes' edits, see hashEdits
	reused := make([]bool, len(fixes))   // verdicts[i] is prev's
	var prevVerdicts map[uint64]keptVerdict
	if prev != nil && f.Tree.LaidOut() {
		prevVerdicts = prev.verdicts
	}
	var trees regionTrees
	defer trees.close()
	otherTrees := map[string]*regionTrees{}
	for path := range res.otherModels {
		otherTrees[path] = &regionTrees{}
		defer otherTrees[path].close()
	}
	semantic.InParallel(len(fixes), func(i int) {
		fix := fixes[i]
		if len(fix.Edits) > 0 && len(fix.Others) == 0 {
			hashes[i] = hashEdits(fix.Edits)
			if kept, ok := prevVerdicts[hashes[i]]; ok && kept.holdsFor(f, fix.Edits) {
				verdicts[i], reused[i] = kept, true
				return
			}
		}
		regions := fixRegions(f, fix.Edits)
		v := keptVerdict{edits: fix.Edits, regions: regions, err: verifyFix(f, fix, regions, &trees)}
		for _, o := range fix.Others {
			if v.err != nil {
				break
			}
			other := res.otherModels[o.Path]
			if other == nil {
				v.err = fmt.Errorf("%s was not recorded with the fix", o.Path)
				break
			}
			edits := fromSource(other, o.Edits)
			if err := verifyFix(other, Fix{Edits: edits}, fixRegions(other, edits), otherTrees[o.Path]); err != nil {
				v.err = fmt.Errorf("in %s: %w", o.Path, err)
			}
		}
		if f.Tree.LaidOut() && len(fix.Others) == 0 {
			v.segments = slices.AppendSeq([]*pyast.Segment{}, segmentsOver(f, regions)) // not nil: kept
		}
		verdicts[i] = v
	})
	if f.Tree.LaidOut() {
		var computed map[uint64]keptVerdict
		for i, v := range verdicts {
			if v.segments != nil && !reused[i] {
				if computed == nil {
					computed = map[uint64]keptVerdict{}
				}
				computed[hashes[i]] = v
			}
		}
		res.verdicts = keepVerdicts(prevVerdicts, computed, f)
	}
	for i := range res.Diagnostics {
		d := &res.Diagnostics[i]
		kept := d.Fixes[:0]
		for k, fix := range d.Fixes {
			if j := at[i][k]; j >= 0 && verdicts[j].err != nil {
				res.dropped = append(res.dropped, droppedFix{at: d.Start, code: d.Code, title: fix.Title, err: verdicts[j].err, fix: fix})
				continue
			}
			kept = append(kept, fix)
		}
		d.Fixes = kept
	}
}

// keepVerdicts returns the verdicts the next version may reuse: those
// computed on f, and prev's (the last version's) while their segments are
// f's too. A finding kept rather than found again (see keepFindings) keeps
// its fixes' verdicts so: found again on a later version (an edit of the
// module code after keystrokes in a function of a script), its fixes are
// not all verified again. prev's map itself, unchanged, when nothing was
// computed.
func keepVerdicts(prev, computed map[uint64]keptVerdict, f *semantic.File) map[uint64]keptVerdict {
	if len(computed) == 0 && prev != nil {
		return prev
	}
	out := make(map[uint64]keptVerdict, len(prev)+len(computed))
	for h, v := range prev {
		if !slices.ContainsFunc(v.segments, func(seg *pyast.Segment) bool { return f.SegmentAt(seg.Base) != seg }) {
			out[h] = v
		}
	}
	maps.Copy(out, computed)
	return out
}

// keptVerdict is a fix's verification, with what it was made over: its
// edits, the regions of the text it parsed and the segments they lie in.
// A version of the buffer whose rule hands back equal edits (a remembered
// verdict's, see semantic.RememberReading, or those of a finding in module
// code, found again on every version that changes module code) over the
// same segments, in the same places, would parse the same text with the
// same edits.
type keptVerdict struct {
	edits    []Edit
	regions  []region
	segments []*pyast.Segment // the segments the regions overlap, in order
	err      error
}

// editsID is a fix's edits, the slice itself: the same one, not an equal
// one.
type editsID struct {
	first *Edit
	n     int
}

func idOf(edits []Edit) editsID { return editsID{&edits[0], len(edits)} }

// holdsFor reports whether the verdict holds in f for edits: they equal
// those it was made for, and the segments its regions overlap are the
// same ones.
func (v keptVerdict) holdsFor(f *semantic.File, edits []Edit) bool {
	if v.segments == nil || !slices.Equal(v.edits, edits) {
		return false
	}
	k := 0
	for seg := range segmentsOver(f, v.regions) {
		if k >= len(v.segments) || v.segments[k] != seg {
			return false
		}
		k++
	}
	return k == len(v.segments)
}

// segmentsOver yields the segments regions overlap, in order (a segment
// two regions overlap twice).
func segmentsOver(f *semantic.File, regions []region) iter.Seq[*pyast.Segment] {
	return func(yield func(*pyast.Segment) bool) {
		for _, r := range regions {
			for i := f.Tree.SegmentNumber(r.start); i >= 0 && i < len(f.Tree.Segments); i++ {
				seg := f.Tree.Segments[i]
				if seg.Base >= r.end {
					break
				}
				if !yield(seg) {
					return
				}
			}
		}
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
		res.Diagnostics[i] = sourceDiagnostic(f, res.Diagnostics[i])
	}
}

// sourceDiagnostic returns d, at offsets of f's laid-out text, at the
// source's.
func sourceDiagnostic(f *semantic.File, d Diagnostic) Diagnostic {
	return withOffsets(d, f.ToSource)
}

// runRule runs one rule, turning a panic into an error so that one broken
// rule never takes the others (or the language server) down.
func runRule(rule *Rule, f *semantic.File, sup *suppressions, focus semantic.Focus) (pass *Pass, err error) {
	pass = &Pass{File: f, Rule: rule, sup: sup, focus: focus}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("rule %s panicked on %s: %v\n%s", rule.Code, f.Path, p, debug.Stack())
		}
	}()
	rule.Run(pass)
	return pass, nil
}
