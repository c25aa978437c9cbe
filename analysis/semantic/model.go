package semantic

import (
	"cmp"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/source"
)

// File is the per-file model every rule shares: computed once, read-only
// afterwards.
//
// Node offsets, Src and Mapper are those of Tree.Src, which in a buffer
// laid out for editing is the source with spaces at the ends of some lines
// (see pyast.Tree); a Result's offsets are the source's.
type File struct {
	Path   string
	Src    []byte
	source []byte // the source itself
	Tree   *pyast.Tree
	Mapper *source.Mapper
	// Project is the workspace the file belongs to; nil when it is
	// analysed alone.
	Project Project
	module  struct {
		sync.Once
		name, pkg string // see moduleName
	}

	// Imports maps a local name to the qualified name it stands for:
	// `import torch as T` gives T -> torch, `from torch.utils.data import
	// DataLoader as DL` gives DL -> torch.utils.data.DataLoader.
	Imports map[string]string
	// Classes are the class definitions by name (the last one wins).
	Classes map[string]*Class
	// Functions are the function definitions by name, any nesting.
	Functions map[string][]*pyast.Node
	// DataLoaders are the DataLoader constructions, in source order.
	DataLoaders []*DataLoader

	// Source-ordered indexes of the node kinds rules ask about, for the
	// whole file: made on first use (see Calls), since most questions are
	// about one segment's (see CallsIn).
	all struct {
		sync.Once
		calls, loops, assignments []*pyast.Node
	}
	comments struct { // every analysis reads them, for noqa
		sync.Once
		all []*pyast.Node
	}
	noqaComments struct { // read once for the suppressions, and per finding for its noqa edit
		sync.Once
		all []*pyast.Node
	}

	indexes []*segmentIndex // in source order
	totals  segmentTotals   // of the indexes
	indent  int             // the indentation step most segments use; -1: tabs
	// structure is what the remembered answers below depend on besides the
	// bindings of names: the imports and the classes' headers (names and
	// bases; the methods that came or went are told apart, see
	// methodsCameOrWent).
	structure string
	bindings  struct {
		sync.Once
		m     map[string][]*pyast.Node // identifier -> right-hand sides bound to it
		built atomic.Pointer[map[string][]*pyast.Node]
	}
	// methodNames are the methods the file's classes define, found on
	// first use (see hasMethod).
	methodNames atomic.Pointer[map[string]bool]
	families    struct {
		sync.Once
		m     map[string][]string // class -> its family (see classFamily)
		built atomic.Pointer[map[string][]string]
	}

	// Answers remembered per file: about a name's text, and each scope's taint.
	memos struct {
		sync.Mutex
		module, loss map[string]bool
		taint        map[*pyast.Node]*Taint // by scope, asked of this version
		plainTaint   map[*pyast.Node]*Taint // by scope, see Summary
		// Carried while what they read is unchanged (see carryOver).
		taintFacts, plainTaintFacts map[*pyast.Node]*taintFacts // by scope
		summaries                   map[*pyast.Node]*Summary
		stepLoops                   map[*pyast.Node]*stepFact // carried, see StepLoopKind
		// calledUnderNoGrad: see calledOnlyUnderNoGrad.
		calledUnderNoGrad map[noGradKey]bool
		// calledAfterEval, feedsTraining: see CalledAfterEvalWithGrad,
		// FeedsTraining.
		calledAfterEval, feedsTraining map[*pyast.Node]bool
		instances                      map[string]*Class // classOfInstance by expression text
		// callsOf are callsByName's answers, by name, carried to the
		// next version; allCalls every name's calls, built when nothing
		// was carried.
		callsOf, allCalls map[string][]*pyast.Node
		loaders           map[loaderKey]bool            // see loaderLike
		loaderReads       map[loaderReadsKey][]string   // see loaderLike
		inflight          map[inflightKey]chan struct{} // see rememberShared
		gradOff           map[gradOffKey]bool
		ofVersion         map[question]any // see OfVersion
		moduleSets        map[string]any   // module-wide answers by question, see moduleAnswer
		// staleSerials are the serials of the segment indexes gone
		// since module and loss were last rid of their local keys (see
		// carryOver).
		staleSerials map[string]bool
		// moduleCallees: for module's answers that read what a call bound
		// to the name returns, the callees' names (see namesModule).
		moduleCallees map[string][]string
		returnsModule map[*pyast.Node]bool // by def, see returnsModule
	}

	// Computed on first use.
	lazy struct {
		sync.Once
		lineEnding, indentUnit string
	}
	// epoch numbers what the file's names are bound to: a version carried
	// over from the one before without a name bound anew keeps its epoch
	// (see Remember).
	epoch uint64
	// loadersOf are the DataLoaders by dataset class (see LoadersOf).
	loadersOf struct {
		sync.Once
		m map[*Class][]*DataLoader
	}
	// structureEpoch numbers the file's imports and class headers (its
	// structure) alike: a version carried over from the one before keeps
	// it (see classKind).
	structureEpoch uint64
	// stores is what flows into what in its segments, when asked (see
	// storesGraph).
	stores *storesGraph
	// id names the model, for a version to tell which one it was built
	// from (carried.from) without holding it.
	id uint64
	// carried is set by carryOver when it carried the answers of the
	// version the model was built from, with what changed between the two
	// (see asked). It keeps no pointer to that version: a chain of them
	// would keep every version alive.
	carried struct {
		ok      bool
		changed map[string]bool
		// What local rules analyse again, see Reanalysed.
		focus    Focus
		reusable bool
		// moduleCodeKept: see ModuleCodeKept.
		moduleCodeKept bool
		// edited are the positions of f's segments whose code the edit
		// changed, editedGone the indexes of those it removed: fresh and
		// gone, less the segments moved unchanged (see codeChanged).
		edited     []int
		editedGone []*segmentIndex
		// reach is what the code the edit changed reaches (see
		// ChangedCodeReaches), found when first asked: only where a
		// verdict on module code is to be kept.
		reach     map[uint64]bool
		reachOnce sync.Once
		// The DeviceBindings per segment of that version, if it found them.
		devices *deviceBindings
		// For Bindings to patch that version's map: the map, if it made
		// one, the segments only it has, and the fresh ones of f.
		bindings *map[string][]*pyast.Node
		// The classes' families of that version, if it found them: they
		// follow from the class headers alone.
		families *map[string][]string
		removed  []*segmentIndex
		fresh    []int
		// moduleSets are the module's sets that version found, to patch
		// (see NamesIn, moduleFlows).
		moduleSets map[string]any
		// methodsCameOrWent: see methodsCameOrWent.
		methodsCameOrWent map[string]bool
		// moduleTaint is the module's taint that version found, to
		// recompute only in part (see buildModuleTaint); taken by the
		// first build.
		moduleTaint *taintFacts
		// gone are the indexes of the segments only that version had,
		// kept for this version's life (removed is let go once Bindings
		// patched its map): see unchangedFor.
		gone []*segmentIndex
		// goneSegments are the segments of those indexes, from the
		// version of id from (see Keeps).
		goneSegments []*pyast.Segment
		from         uint64
		// pairs are the methods an edit inside one method of a class left
		// alone, when the edit replaced that one statement and the last
		// version indexed it by its methods (see indexUnits).
		pairs *unchangedUnits
		// paired: pairs were looked for (nil then means none).
		paired bool
		// judged counts the calls and definitions carryOver judged in
		// the segments only one version has (for tests).
		judged int
		// translated counts the answers about the methods an edit left
		// alone taken over from that version (for tests, see
		// unchangedUnits.counterpart).
		translated int
		// strays counts the stray methods still paired once the
		// judgement was done (for tests, see strayMethods).
		strays int
	}
	// touched are the indexes of carried.gone and of the segments in the
	// focus, once listed (see touchedIndexes).
	touched struct {
		sync.Once
		indexes []*segmentIndex
	}
	// tables are the answers of RememberEach by question (m), and those of
	// the version the model was built from when it bound every name alike
	// (last).
	tables struct {
		sync.Mutex
		m    map[string]any
		last map[string]any
		// lastReading are that version's tables whenever local rules
		// may reuse its findings (Reanalysed), for RememberReading.
		lastReading map[string]any
	}
	// workerMethods are the answer of WorkerMethods, once found; prev's
	// when the version shares its classes (see NewModelFrom).
	workerMethods atomic.Pointer[[]WorkerMethod]
	// devices are this version's DeviceBindings per segment, once found.
	devices atomic.Pointer[deviceBindings]
	// Declared facts, by *Fact (see Fact).
	facts        sync.Map
	gradSwitches []*pyast.Node // torch.set_grad_enabled(...) statements
}

// computeLazy fills the facts that only some rules and fixes need.
func (f *File) computeLazy() {
	f.lazy.Do(func() {
		f.lazy.lineEnding = f.lineEnding()
		f.lazy.indentUnit = f.indentUnit()
	})
}

// remember returns the answer for key remembered in *m (one of f.memos'
// maps), computing it outside the lock the first time: the computation may
// ask other remembered questions. Two goroutines may compute the same
// answer at once; the answers are equal, and the first one stays.
func remember[K comparable, V any](f *File, m *map[K]V, key K, compute func() V) V {
	f.memos.Lock()
	v, ok := (*m)[key]
	f.memos.Unlock()
	if ok {
		return v
	}
	v = compute()
	f.memos.Lock()
	defer f.memos.Unlock()
	if *m == nil {
		*m = map[K]V{}
	}
	if had, ok := (*m)[key]; ok {
		return had
	}
	(*m)[key] = v
	return v
}

// rememberShared is remember for the dear answers several rules ask at the
// same moment (a function's taint, a summary): a goroutine that asks while
// another computes waits for that answer instead of computing it again.
// The computation must not ask for its own key.
func rememberShared[K comparable, V any](f *File, m *map[K]V, key K, compute func() V) V {
	id := inflightKey{m, key}
	for {
		f.memos.Lock()
		if v, ok := (*m)[key]; ok {
			f.memos.Unlock()
			return v
		}
		wait, busy := f.memos.inflight[id]
		if !busy {
			break // computed here; still locked
		}
		f.memos.Unlock()
		<-wait // then look again (the computation may have failed)
	}
	done := make(chan struct{})
	if f.memos.inflight == nil {
		f.memos.inflight = map[inflightKey]chan struct{}{}
	}
	f.memos.inflight[id] = done
	f.memos.Unlock()
	defer func() {
		f.memos.Lock()
		delete(f.memos.inflight, id)
		f.memos.Unlock()
		close(done)
	}()
	v := compute()
	f.memos.Lock()
	if *m == nil {
		*m = map[K]V{}
	}
	(*m)[key] = v
	f.memos.Unlock()
	return v
}

// OfVersion returns the answer to the question called name about n (a
// scope, say) for this version of the file, computing it once: for an
// answer that may read anywhere in the file, which Remember and
// RememberReading could not keep across versions, but that several
// candidates of a version ask alike. It must not be changed once returned.
func OfVersion[T any](f *File, name string, n *pyast.Node, compute func() T) T {
	return rememberShared(f, &f.memos.ofVersion, question{name, n}, func() any { return compute() }).(T)
}

// inflightKey names an answer being computed: the memo map and the key.
type inflightKey struct {
	memo, key any
}

// memo returns the remembered answer for key in m, computing it once.
func (f *File) memo(m *map[string]bool, key string, compute func() bool) bool {
	f.memos.Lock()
	v, ok := (*m)[key]
	f.memos.Unlock()
	if ok {
		return v
	}
	// A copy: the answers outlive this version's text (see carryOver).
	return remember(f, m, strings.Clone(key), compute)
}

// Class is a class definition.
type Class struct {
	Name    string
	Node    *pyast.Node // class_definition
	Bases   []*pyast.Node
	Methods map[string]*pyast.Node // function_definition by name

	// kind is the class's classKind in the low byte, above it the
	// structure epoch it holds for (see File.classKind).
	kind atomic.Uint64
}

// DataLoader is one `DataLoader(...)` call.
type DataLoader struct {
	Call *pyast.Node
	// Var is the name the loader is assigned to ("" when it is not).
	Var string
	// Dataset is the dataset argument, and DatasetClass the class it was
	// built from when that can be seen in the file.
	Dataset      *pyast.Node
	DatasetClass *Class
	// DatasetType is the qualified name of the class the dataset was built
	// from when it is imported (`pkg.data.MyDS`), for the project to find.
	DatasetType string
	NumWorkers  *pyast.Node // nil when not given (0 workers)
	PinMemory   *pyast.Node
	CollateFn   *pyast.Node
}

// Workers returns the number of worker processes when it is a literal, and
// whether it is known. A missing num_workers is 0.
func (d *DataLoader) Workers(src []byte) (int, bool) {
	if d.NumWorkers == nil {
		return 0, true
	}
	n, err := strconv.Atoi(strings.ReplaceAll(d.NumWorkers.Text(src), "_", ""))
	return n, err == nil
}

// Source is the source the file was built from (Src may be laid out; see
// File).
func (f *File) Source() []byte { return f.source }

// ToSource converts an offset in f.Src to the source's.
func (f *File) ToSource(off int) int { return f.Tree.Real(off) }

// FromSource converts an offset in the source to one in f.Src.
func (f *File) FromSource(off int) int { return f.Tree.Virtual(off) }

// within returns the nodes of a source-ordered index that lie inside n,
// found by binary search on their start offsets.
func within(index []*pyast.Node, n *pyast.Node) []*pyast.Node {
	if n == nil {
		return nil
	}
	i := sort.Search(len(index), func(i int) bool { return index[i].Start() >= n.Start() })
	j := sort.Search(len(index), func(j int) bool { return index[j].Start() >= n.End() })
	// An ancestor that starts where n starts (f(x)(y) around f(x)) sorts
	// first; drop it.
	for i < j && !n.Contains(index[i]) {
		i++
	}
	return index[i:j:j] // capped: appending to it must not write into the index
}

// Calls returns the file's calls, in source order.
func (f *File) Calls() []*pyast.Node { f.indexAll(); return f.all.calls }

// Loops returns the file's for and while statements, in source order.
func (f *File) Loops() []*pyast.Node { f.indexAll(); return f.all.loops }

// Assignments returns the file's assignments and augmented assignments,
// in source order.
func (f *File) Assignments() []*pyast.Node { f.indexAll(); return f.all.assignments }

// Comments returns the file's comments, in source order.
func (f *File) Comments() []*pyast.Node {
	f.comments.Do(func() {
		for _, ix := range f.indexes {
			f.comments.all = append(f.comments.all, ix.comments...)
		}
	})
	return f.comments.all
}

// NoqaComments returns the file's comments that mention "noqa" in any
// case, in source order: the only ones that can suppress a finding, which
// every version reads, where a large file has thousands of comments.
// Most files have none, which the totals tell without a look at each of
// the segments (5,000 of them at 50,000 lines).
func (f *File) NoqaComments() []*pyast.Node {
	if f.totals.noqa == 0 {
		return nil
	}
	f.noqaComments.Do(func() {
		f.noqaComments.all = make([]*pyast.Node, 0, f.totals.noqa)
		for _, ix := range f.indexes {
			f.noqaComments.all = append(f.noqaComments.all, ix.noqaComments...)
		}
	})
	return f.noqaComments.all
}

// mentionsNoqa reports whether text holds "noqa" in any case, as every
// suppression comment does.
func mentionsNoqa(text string) bool { return containsFold(text, "noqa") }

// indexAll joins the segments' indexes into the file's, once.
func (f *File) indexAll() {
	f.all.Do(func() {
		var calls, loops, assignments int
		for _, ix := range f.indexes {
			calls, loops, assignments = calls+len(ix.calls), loops+len(ix.loops), assignments+len(ix.assignments)
		}
		f.all.calls = make([]*pyast.Node, 0, calls)
		f.all.loops = make([]*pyast.Node, 0, loops)
		f.all.assignments = make([]*pyast.Node, 0, assignments)
		for _, ix := range f.indexes {
			f.all.calls = append(f.all.calls, ix.calls...)
			f.all.loops = append(f.all.loops, ix.loops...)
			f.all.assignments = append(f.all.assignments, ix.assignments...)
		}
	})
}

// indexOf returns the index of the segment holding n, or nil when n is the
// module (or not in the file): then the question is about the whole file.
func (f *File) indexOf(n *pyast.Node) *segmentIndex {
	if n == nil || n.Parent() == nil {
		return nil
	}
	// f.indexes lists the segments' indexes in the order of the tree's
	// segments: no lookup by segment.
	i := f.Tree.SegmentNumber(n.Start())
	if i < 0 {
		return nil
	}
	return f.indexes[i]
}

// CallsIn returns the calls inside n, in source order.
func (f *File) CallsIn(n *pyast.Node) []*pyast.Node {
	if ix := f.indexOf(n); ix != nil {
		return within(ix.calls, n)
	}
	return within(f.Calls(), n)
}

// CallsNamedWithin returns the calls inside n whose callee's last name is
// one of names, in source order: CallsIn less the others, found through
// the segment's calls by name (a function's few `eval()` calls of a
// class's thousands of calls).
func (f *File) CallsNamedWithin(n *pyast.Node, names ...string) []*pyast.Node {
	named := func(c *pyast.Node) bool { return slices.Contains(names, f.LastName(c.Child("function"))) }
	ix := f.indexOf(n)
	if ix == nil {
		return slices.DeleteFunc(slices.Clone(f.CallsIn(n)), func(c *pyast.Node) bool { return !named(c) })
	}
	ix.callIndex(f)
	var out []*pyast.Node
	for _, name := range names {
		for _, c := range ix.byName.named(name) {
			if c.Start() >= n.Start() && c.Start() < n.End() && n.Contains(c) {
				out = append(out, c)
			}
		}
	}
	// Source order is preorder: by start, an ancestor (f(x)(y) around
	// f(x)) before the call it holds.
	slices.SortFunc(out, func(a, b *pyast.Node) int {
		return cmp.Or(cmp.Compare(a.Start(), b.Start()), cmp.Compare(b.End(), a.End()))
	})
	return out
}

// AssignmentsIn returns the assignments inside n, in source order.
func (f *File) AssignmentsIn(n *pyast.Node) []*pyast.Node {
	if ix := f.indexOf(n); ix != nil {
		return within(ix.assignments, n)
	}
	return within(f.Assignments(), n)
}

// LoopsIn returns the loops inside n, in source order.
func (f *File) LoopsIn(n *pyast.Node) []*pyast.Node {
	if ix := f.indexOf(n); ix != nil {
		return within(ix.loops, n)
	}
	return within(f.Loops(), n)
}

// Text is the source text of n ("" for nil).
func (f *File) Text(n *pyast.Node) string {
	if n == nil {
		return ""
	}
	return n.Text(f.Src)
}

func (f *File) addImport(n *pyast.Node) {
	for _, c := range n.ChildrenOf("name") {
		switch c.Kind() {
		case "dotted_name":
			// `import torch.nn` binds `torch`.
			full := f.Text(c)
			first, _, _ := strings.Cut(full, ".")
			f.setImport(first, first)
		case "aliased_import":
			f.setImport(f.Text(c.Child("alias")), f.Text(c.Child("name")))
		}
	}
}

// setImport binds name to the module or object it imports, copying both:
// the later versions of a buffer share the map (see NewModelFrom), which
// must not keep this version's text alive.
func (f *File) setImport(name, imported string) {
	f.Imports[strings.Clone(name)] = strings.Clone(imported)
}

func (f *File) addFromImport(n *pyast.Node) {
	module := f.Text(n.Child("module_name"))
	if strings.HasPrefix(module, ".") {
		// The project's own modules: named when the project places the file.
		if module = f.resolveRelative(module); module == "" {
			return
		}
	}
	for _, c := range n.ChildrenOf("name") {
		switch c.Kind() {
		case "dotted_name":
			f.setImport(f.Text(c), module+"."+f.Text(c))
		case "aliased_import":
			f.setImport(f.Text(c.Child("alias")), module+"."+f.Text(c.Child("name")))
		}
	}
}

// importedByCall recognises an import made by a call, as libraries that
// keep torch optional write them: `torch = _safe_import("torch")`,
// `Dataset = _safe_import("torch.utils.data.Dataset")` (sktime), `nn =
// importlib.import_module("torch.nn")`, `torch = try_import("torch")`.
// It returns the name bound and the dotted path it stands for, or "" for
// the path: the callee's last name must contain "import" and its first
// argument must be a plain string naming a dotted path. Not __import__,
// which returns the top-level package of a dotted path.
func importedByCall(assignment *pyast.Node, src []byte) (name, path string) {
	left, right := assignment.Child("left"), assignment.Child("right")
	if !assignment.Is("assignment") || !left.Is("identifier") || !right.Is("call") {
		return "", ""
	}
	fn, args := right.Child("function"), right.Child("arguments")
	if fn == nil || args == nil || !fn.Is("identifier", "attribute") {
		return "", ""
	}
	callee := fn.Text(src)
	callee = callee[strings.LastIndexByte(callee, '.')+1:]
	if !containsFold(callee, "import") || callee == "__import__" {
		return "", ""
	}
	first := args.FirstNamed()
	if first == nil || !first.Is("string") {
		return "", ""
	}
	literal := first.Text(src)
	if len(literal) < 2 || (literal[0] != '"' && literal[0] != '\'') || literal[len(literal)-1] != literal[0] {
		return "", "" // a prefix (f"", r"") or a triple quote: not a plain path
	}
	path = literal[1 : len(literal)-1]
	for part := range strings.SplitSeq(path, ".") {
		if !isIdentifier(part) {
			return "", ""
		}
	}
	return left.Text(src), path
}

// containsFold reports whether s holds word, a word of ASCII lower-case
// letters, in any case, without allocating: it runs on every comment and
// every assignment of a call.
func containsFold(s, word string) bool {
	for i := 0; i+len(word) <= len(s); i++ {
		if s[i]|0x20 == word[0] && strings.EqualFold(s[i:i+len(word)], word) {
			return true
		}
	}
	return false
}

// isIdentifier reports whether s is a Python identifier in ASCII.
func isIdentifier(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// canonicalNames folds the private modules PyTorch defines public names in.
var canonicalNames = strings.NewReplacer(
	"torch.utils.data.dataset.", "torch.utils.data.",
	"torch.utils.data.dataloader.", "torch.utils.data.",
	"torch.autograd.grad_mode.", "torch.",
)

// QualifiedName resolves an identifier or attribute chain through the
// imports: with `import torch.nn.functional as F`, `F.cross_entropy` is
// torch.nn.functional.cross_entropy. It returns "" for names that do not
// come from an import.
func (f *File) QualifiedName(n *pyast.Node) string {
	switch {
	case n == nil:
		return ""
	case n.Kind() == "identifier":
		if q, ok := f.Imports[f.Text(n)]; ok {
			return canonical(q)
		}
		// `torch` that no import names came through a star import
		// (`from pkg.utils import *`); nobody names anything else so.
		if f.Text(n) == "torch" && len(f.Bindings("torch")) == 0 {
			return "torch"
		}
	case n.Kind() == "attribute":
		if base := f.QualifiedName(n.Child("object")); base != "" {
			return canonical(base + "." + f.Text(n.Child("attribute")))
		}
	}
	return ""
}

// canonical folds private module paths; most names have none, and the
// check is much cheaper than the replacement.
func canonical(q string) string {
	if strings.HasPrefix(q, "torch.utils.data.data") || strings.HasPrefix(q, "torch.autograd.grad_mode.") {
		return canonicalNames.Replace(q)
	}
	return q
}

// mayCall reports whether call can call a function whose last name is
// one of names: it is named so, or calls a name imported under another
// (an alias). It is the cheap test before Callee.
func (f *File) mayCall(call *pyast.Node, names ...string) bool {
	fn := call.Child("function")
	last := f.LastName(fn)
	return slices.Contains(names, last) || fn.Is("identifier") && f.Imports[last] != ""
}

// Callee returns the qualified name of the function a call calls, or "".
func (f *File) Callee(call *pyast.Node) string { return f.QualifiedName(call.Child("function")) }

// MethodName returns the method name of a call like x.name(...), or "".
func (f *File) MethodName(call *pyast.Node) string {
	if fn := call.Child("function"); fn.Is("attribute") {
		return f.Text(fn.Child("attribute"))
	}
	return ""
}

// Receiver returns x in a call x.name(...), or nil.
func Receiver(call *pyast.Node) *pyast.Node {
	if fn := call.Child("function"); fn.Is("attribute") {
		return fn.Child("object")
	}
	return nil
}

// Arg returns the argument of call given by keyword, or else the positional
// argument at index pos (pos < 0: keyword only).
func (f *File) Arg(call *pyast.Node, keyword string, pos int) *pyast.Node {
	args := call.Child("arguments")
	if args == nil {
		return nil
	}
	i := 0
	for _, a := range args.NamedChildren() {
		switch a.Kind() {
		case "keyword_argument":
			if f.Text(a.Child("name")) == keyword {
				return a.Child("value")
			}
		case "list_splat", "dictionary_splat":
			i = -1 << 30 // positions after a splat are unknown
		default:
			if i == pos {
				return a
			}
			i++
		}
	}
	return nil
}

// KeywordArg returns the keyword_argument node for keyword, or nil.
func (f *File) KeywordArg(call *pyast.Node, keyword string) *pyast.Node {
	if args := call.Child("arguments"); args != nil {
		for _, a := range args.NamedChildren() {
			if a.Kind() == "keyword_argument" && f.Text(a.Child("name")) == keyword {
				return a
			}
		}
	}
	return nil
}

// --- classes ---

// IsDataset reports whether c derives from torch.utils.data.Dataset or
// IterableDataset, directly or through classes in this file.
func (f *File) IsDataset(c *Class) bool { return f.classKind(c)&dataset != 0 }

// IsIterableDataset reports whether c derives from IterableDataset.
func (f *File) IsIterableDataset(c *Class) bool { return f.classKind(c)&iterableDataset != 0 }

// IsModule reports whether c derives from torch.nn.Module.
func (f *File) IsModule(c *Class) bool { return f.classKind(c)&module != 0 }

// classKind is what a class derives from, as bits.
type classKind uint8

const (
	dataset classKind = 1 << iota
	iterableDataset
	module
	known // computed
)

// classKind answers the three questions about c once per file, and
// across versions while the imports and class headers stay the same (one
// structure epoch): the answer stays with the class, which the versions
// sharing its statement share.
func (f *File) classKind(c *Class) classKind {
	if c == nil {
		return known
	}
	if v := c.kind.Load(); v>>8 == f.structureEpoch {
		return classKind(v)
	}
	k := known
	if f.derivesFrom(c, map[*Class]bool{}, func(q string) bool {
		return q == "torch.utils.data.Dataset" || q == "torch.utils.data.IterableDataset" ||
			q == "torch.utils.data.TensorDataset" || strings.HasPrefix(q, "torchvision.datasets.")
	}) {
		k |= dataset
	}
	if f.derivesFrom(c, map[*Class]bool{}, func(q string) bool { return q == "torch.utils.data.IterableDataset" }) {
		k |= iterableDataset
	}
	if f.derivesFrom(c, map[*Class]bool{}, isModuleBase) {
		k |= module
	}
	c.kind.Store(f.structureEpoch<<8 | uint64(k))
	return k
}

// isModuleBase reports whether a qualified base name makes a class an
// nn.Module.
func isModuleBase(q string) bool {
	return q == "torch.nn.Module" || strings.HasPrefix(q, "torch.nn.") && !strings.HasSuffix(q, "Loss") ||
		q == "pytorch_lightning.LightningModule" || q == "lightning.LightningModule" ||
		q == "lightning.pytorch.LightningModule"
}

func (f *File) derivesFrom(c *Class, seen map[*Class]bool, match func(string) bool) bool {
	if c == nil || seen[c] {
		return false
	}
	seen[c] = true
	for _, b := range c.Bases {
		q := f.QualifiedName(b)
		if match(q) {
			return true
		}
		if b.Kind() == "identifier" && f.Classes[f.Text(b)] != nil {
			if f.derivesFrom(f.Classes[f.Text(b)], seen, match) {
				return true
			}
			continue
		}
		if q != "" && f.derivesFromProject(f.Path, q, map[string]bool{}, 0, match) {
			return true
		}
	}
	return false
}

// EnclosingClass returns the class whose body holds n, or nil.
//
// A class defined twice under one name still holds its methods: the answer
// depends on the class's own segment only.
func (f *File) EnclosingClass(n *pyast.Node) *Class {
	if cd := n.Ancestor("class_definition"); cd != nil {
		if ix := f.indexOf(cd); ix != nil {
			for _, c := range ix.classes {
				if c.Node == cd {
					return c
				}
			}
		}
	}
	return nil
}

// --- scopes ---

// EnclosingFunction returns the nearest function_definition or lambda
// holding n, or nil at module level.
func EnclosingFunction(n *pyast.Node) *pyast.Node {
	return n.Ancestor("function_definition", "lambda")
}

// Scope returns the function or module whose code n belongs to; for
// module-level code inside a syntax error, the outermost error holding it.
// What such code assigns is its own (see brokenStatement), so what is said
// of its names reads it alone: typing a function whose header the parser
// does not see yet, its body is module-level code, and reading the whole
// module for it cost a keystroke ten times what it does in a function.
func Scope(n *pyast.Node) *pyast.Node {
	if fn := EnclosingFunction(n); fn != nil {
		return fn
	}
	var broken *pyast.Node
	for n.Parent() != nil {
		n = n.Parent()
		if n.Kind() == "ERROR" && n.Parent() != nil {
			broken = n
		}
	}
	if broken != nil {
		return broken
	}
	return n
}

// InScope reports whether n belongs to scope's own code, not to a function
// nested in it.
func InScope(n, scope *pyast.Node) bool { return Scope(n) == scope }

// EnclosingLoops returns the loops whose body holds n, innermost first,
// stopping at the enclosing function.
func EnclosingLoops(n *pyast.Node) []*pyast.Node {
	var loops []*pyast.Node
	for p := n.Parent(); p != nil && !p.Is("function_definition", "lambda", "class_definition"); p = p.Parent() {
		if p.Is("for_statement", "while_statement") && p.Child("body").Contains(n) {
			loops = append(loops, p)
		}
	}
	return loops
}

// DecoratorsOf returns the decorator expressions of a function definition.
func DecoratorsOf(fn *pyast.Node) []*pyast.Node {
	var out []*pyast.Node
	if fn.Parent().Is("decorated_definition") {
		for d := range fn.Parent().Children() {
			if d.Kind() == "decorator" {
				if e := d.NamedChildren(); len(e) > 0 {
					out = append(out, e[0])
				}
			}
		}
	}
	return out
}

// lightningNoGrad reports whether a method of that name is a Lightning
// hook that Lightning runs inside its evaluation loops, under inference
// mode or no_grad: the validation/test/predict steps, and the callbacks'
// and modules' on_validation_*/on_test_*/on_predict_* hooks.
func lightningNoGrad(name string) bool {
	switch name {
	case "validation_step", "test_step", "predict_step", "validation_epoch_end", "test_epoch_end":
		return true
	}
	return strings.HasPrefix(name, "on_validation_") || strings.HasPrefix(name, "on_test_") || strings.HasPrefix(name, "on_predict_")
}

// IsNoGradContext reports whether e (a with-item value or a decorator)
// turns autograd off: torch.no_grad(), torch.inference_mode(),
// torch.set_grad_enabled(False).
func (f *File) IsNoGradContext(e *pyast.Node) bool {
	e, target := contextTarget(e)
	q := f.QualifiedName(target)
	if q == "" || !strings.HasPrefix(q, "torch.") {
		// Project wrappers named for what they do: ultralytics'
		// smart_inference_mode(), MONAI's eval_mode() (no_grad inside),
		// a local torch_no_grad().
		switch last := f.LastName(target); {
		case strings.HasSuffix(last, "no_grad"), strings.HasSuffix(last, "inference_mode"), last == "eval_mode":
			return true
		}
		if f.noGradImportedByName(target) {
			return true
		}
	}
	if e.Is("call") && q == "" {
		if def := f.resolveCall(e); def != nil && f.turnsGradOff(def, e) {
			return true
		}
	}
	switch q {
	case "torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.inference_mode":
		if e.Is("call") && f.QualifiedName(target) != "torch.no_grad" {
			// inference_mode(False) turns it off.
			if a := f.Arg(e, "mode", 0); a != nil && f.Text(a) == "False" {
				return false
			}
		}
		return true
	case "torch.set_grad_enabled", "torch.autograd.set_grad_enabled":
		return e.Is("call") && f.Text(f.Arg(e, "mode", 0)) == "False"
	}
	return false
}

// contextTarget returns a with-item's or decorator's expression without
// its `as` name, and what it calls (itself when it is no call).
func contextTarget(e *pyast.Node) (expr, target *pyast.Node) {
	if e.Is("as_pattern") && e.FirstNamed() != nil {
		e = e.FirstNamed()
	}
	if e.Is("call") {
		return e, e.Child("function")
	}
	return e, e
}

// turnsGradOff reports whether def, a context manager of this file called
// as call, turns autograd off around its yield: its body is under a
// no-grad `with`, or under `torch.set_grad_enabled(p)` where call passes a
// literal False (Poutyne's `with self._set_training_mode(False):`).
func (f *File) turnsGradOff(def, call *pyast.Node) bool {
	passesFalse := false
	if args := call.Child("arguments"); args != nil {
		for _, a := range args.NamedChildren() {
			if a.Is("keyword_argument") {
				a = a.Child("value")
			}
			passesFalse = passesFalse || a.Is("false")
		}
	}
	return remember(f, &f.memos.gradOff, gradOffKey{def, passesFalse}, func() bool {
		return f.bodyTurnsGradOff(def, passesFalse)
	})
}

type gradOffKey struct {
	def         *pyast.Node
	passesFalse bool
}

func (f *File) bodyTurnsGradOff(def *pyast.Node, passesFalse bool) bool {
	off := false
	pyast.Walk(def.Child("body"), func(n *pyast.Node) bool {
		if off || n.Is("function_definition", "lambda", "class_definition") {
			return false
		}
		if n.Is("with_statement") {
			for _, item := range n.ChildOfKind("with_clause").NamedChildren() {
				v, target := contextTarget(item.Child("value"))
				switch f.QualifiedName(target) {
				case "torch.no_grad", "torch.inference_mode":
					off = true
				case "torch.set_grad_enabled", "torch.autograd.set_grad_enabled":
					arg := f.Arg(v, "mode", 0)
					off = arg.Is("false") || arg.Is("identifier") && passesFalse
				}
			}
		}
		return !off
	})
	return off
}

// InNoGrad reports whether n runs with autograd off: inside a no-grad
// `with` block, or in a function decorated with one, or in a Lightning
// validation/test/predict step, or in a function every call of which in
// this file is itself under no-grad.
func (f *File) InNoGrad(n *pyast.Node) bool { return f.inNoGrad(n, 0, nil) }

// inNoGrad is InNoGrad; consulted, when not nil, is told what the answer
// read outside n's own syntax, as it reads it: each with item's and
// decorator's context expression (what a name there is bound to, what a
// function of the file called there does) and each enclosing function
// whose callers it asked about (see Taint.inNoGrad).
func (f *File) inNoGrad(n *pyast.Node, depth int, consulted func(*pyast.Node)) bool {
	noGrad := func(context *pyast.Node) bool {
		if consulted != nil {
			consulted(context)
		}
		return f.IsNoGradContext(context)
	}
	for p := n.Parent(); p != nil; p = p.Parent() {
		switch p.Kind() {
		case "with_statement":
			if !p.Child("body").Contains(n) {
				continue
			}
			for _, item := range p.ChildOfKind("with_clause").NamedChildren() {
				if noGrad(item.Child("value")) {
					return true
				}
			}
		case "function_definition":
			for _, d := range DecoratorsOf(p) {
				if noGrad(d) {
					return true
				}
			}
			if lightningNoGrad(f.Text(p.Child("name"))) && f.EnclosingClass(p) != nil {
				return true
			}
			if consulted != nil {
				consulted(p)
			}
			if f.calledOnlyUnderNoGrad(p, depth) {
				return true
			}
		}
	}
	return f.gradDisabledBefore(n)
}

// calledOnlyUnderNoGrad reports whether every call of the function fn in
// this file (there is at least one) runs with autograd off: then fn's body
// does too. Calls by name only (a method may share its name with another
// class's); recursion is cut at a small depth. A function Python runs
// without its name (see reachedWithoutItsName) is never judged so: a
// `super().__init__()` or `self.forward(x)` under no_grad is not every
// construction of the class or call of the model.
func (f *File) calledOnlyUnderNoGrad(fn *pyast.Node, depth int) bool {
	if depth > 2 {
		return false
	}
	name := f.Text(fn.Child("name"))
	method := f.EnclosingClass(fn) != nil && fn.Parent() != nil && fn.Ancestor("function_definition") == nil
	if reachedWithoutItsName(name, method) {
		return false
	}
	return remember(f, &f.memos.calledUnderNoGrad, noGradKey{fn, depth}, func() bool {
		calls, underNoGrad := f.callsUnderNoGrad(fn, name, method, depth)
		return calls > 0 && underNoGrad
	})
}

// CalledAfterEvalWithGrad reports whether n is code of a function (a
// top-level one, or a method of a top-level class) that this file calls,
// outside the function itself, with autograd on right after putting
// something in eval mode: the last `.eval()` or `.train(...)` before the
// call in its scope is `x.eval()` or `x.train(False)`. A script's
// `model.eval(); evaluate(model, criterion, test_data)` runs evaluate's
// loop with autograd on, whatever other calls of it do under no_grad.
// Mode calls are matched by their method alone, on any receiver: what
// decides stays in the caller's own statement (a module-level caller's
// mode calls are other statements; see carryOver).
func (f *File) CalledAfterEvalWithGrad(n *pyast.Node) bool {
	fn := EnclosingFunction(n)
	if !fn.Is("function_definition") {
		return false
	}
	method := false
	switch outer := fn.Ancestor("class_definition", "function_definition", "lambda"); {
	case outer == nil:
	case outer.Is("class_definition") && outer.Ancestor("class_definition", "function_definition", "lambda") == nil:
		method = true
	default:
		return false // a closure or a nested class's method
	}
	return remember(f, &f.memos.calledAfterEval, fn, func() bool {
		for _, c := range f.callsOutside(fn, f.Text(fn.Child("name")), method) {
			if f.evalModeBefore(c) && !f.InNoGrad(c) && !f.resultTrains(c) {
				return true
			}
		}
		return false
	})
}

// modeCalls are the file's `x.eval()` and `x.train(...)` calls (on an
// attribute), sorted by where they start, eval's first where two start
// together (see evalModeBefore).
func (f *File) modeCalls() []*pyast.Node {
	return OfVersion(f, "mode calls", f.Tree.Root, func() []*pyast.Node {
		var calls []*pyast.Node
		for _, name := range [...]string{"eval", "train"} {
			for _, c := range f.callsByName(name) {
				if c.Child("function").Is("attribute") {
					calls = append(calls, c)
				}
			}
		}
		slices.SortStableFunc(calls, func(a, b *pyast.Node) int { return a.Start() - b.Start() })
		return calls
	})
}

// evalModeBefore reports whether the last mode call (`x.eval()`,
// `x.train(...)`, any receiver) before n in n's scope put its object in
// eval mode, in a block that holds n (not a branch that returned), and
// without freezing it in the same chain (`m.eval().requires_grad_(False)`
// records no graph of m's weights).
func (f *File) evalModeBefore(n *pyast.Node) bool {
	last := f.lastModeCall(Scope(n), n.Start())
	if last == nil || !f.putsInEvalMode(last) {
		return false
	}
	block := last.Ancestor("block", "module")
	return block != nil && block.Contains(n)
}

// evalModeAfterSegment is evalModeBefore for a module-level call in a
// segment from f's i-th on (len(Segments): after the last), with no mode
// call between: whether the last module-level mode call before that
// segment puts its object in eval mode for the rest of the module.
func (f *File) evalModeAfterSegment(i int) bool {
	at := len(f.Src)
	if i < len(f.Tree.Segments) {
		at = f.Tree.Segments[i].Base
	}
	last := f.lastModeCall(f.Tree.Root, at)
	if last == nil || !f.putsInEvalMode(last) {
		return false
	}
	// A call in a later statement is in the block of a mode call only
	// when that block is the module's.
	block := last.Ancestor("block", "module")
	return block != nil && block.Parent() == nil
}

// lastModeCall returns the mode call in scope that starts last among
// those ending by offset at; nil when there is none.
func (f *File) lastModeCall(scope *pyast.Node, at int) *pyast.Node {
	// The mode calls by where they start: walked back from at, to the
	// start of the scope. Every mode call of the file was tested for its
	// scope, for every call of every function asked about: quadratic in
	// the file (5 s of a 50,000-line file's 6).
	calls := f.modeCalls()
	var last *pyast.Node
	i, _ := slices.BinarySearchFunc(calls, at, func(c *pyast.Node, at int) int { return c.Start() - at })
	for i--; i >= 0 && calls[i].Start() >= scope.Start(); i-- {
		c := calls[i]
		if last != nil && c.Start() < last.Start() {
			break // the latest start found; ties went to the one listed first
		}
		if c.End() <= at && InScope(c, scope) {
			last = c
		}
	}
	return last
}

// putsInEvalMode reports whether the mode call c leaves its object in
// eval mode (`x.eval()`, `x.train(False)`) with its parameters trainable.
func (f *File) putsInEvalMode(c *pyast.Node) bool {
	if f.MethodName(c) == "train" && f.Text(f.Arg(c, "mode", 0)) != "False" {
		return false
	}
	if f.MethodName(c) == "eval" && f.Arg(c, "", 0) != nil {
		return false // df.eval("a + b") evaluates an expression
	}
	for c.Parent().Is("attribute") && c.Parent().Parent().Is("call") {
		c = c.Parent().Parent()
		if FreezesParameters(f, c) {
			return false
		}
	}
	return true
}

// resultTrains reports whether what call returns trains where it is made:
// `loss = self.compute_loss(out, x, y)` followed by `loss.backward()`,
// `step(x).backward()`, or the names it assigns handed to a function of
// the file that trains (trl's PPO: `logprobs = self.batched_forward_pass(
// ...)`, then `self.train_minibatch(logprobs, ...)`). A function computing
// a training loss in eval mode (dropout off, BatchNorm frozen) trains.
// In a function only: module-level code is one scope across statements,
// and the backward may be in another one, which an edit changes without
// this call's (see carryOver).
func (f *File) resultTrains(call *pyast.Node) bool {
	p, fn, names, decided, trains := f.resultFlows(call)
	if decided {
		return trains
	}
	// Only the calls that take one of the names: what a call does is a
	// look-up across the project, and asking it of every call after every
	// assignment of a long function was most of a keystroke in one.
	taking := f.callsTaking(fn)
	for _, name := range names {
		for _, c := range taking[name] {
			if c.Start() < p.End() {
				continue
			}
			if s := f.SummaryOfCall(c); s != nil && s.Trains {
				return true
			}
		}
	}
	return false
}

// resultFlows is resultTrains up to the calls the names go to: the
// assignment p of call in function fn and the plain names it binds, or
// decided with the answer (a backward pass on the result, or on a name it
// binds; no assignment in a function).
func (f *File) resultFlows(call *pyast.Node) (p, fn *pyast.Node, names []string, decided, trains bool) {
	p = call.Parent()
	if p.Is("attribute") && p.Parent().Is("call") && isBackwardCall(f, p.Parent()) {
		return nil, nil, nil, true, true
	}
	fn = EnclosingFunction(call)
	if !p.Is("assignment") || p.Child("right") != call || !fn.Is("function_definition") {
		return nil, nil, nil, true, false
	}
	for _, name := range targetNames(f, p.Child("left")) {
		if !strings.Contains(name, ".") {
			names = append(names, name)
		}
	}
	for _, name := range names {
		if f.ReachesBackward(name, fn) {
			return nil, nil, nil, true, true
		}
	}
	return p, fn, names, false, false
}

// callsTaking returns fn's own calls (not those of functions nested in
// it) by each identifier their arguments mention (as MentionsName finds
// a plain name: the parts of attribute chains included), in source order;
// found once a version.
func (f *File) callsTaking(fn *pyast.Node) map[string][]*pyast.Node {
	return OfVersion(f, "calls taking", fn, func() map[string][]*pyast.Node {
		taking := map[string][]*pyast.Node{}
		for _, c := range f.CallsIn(fn) {
			if !InScope(c, fn) {
				continue
			}
			pyast.Walk(c.Child("arguments"), func(n *pyast.Node) bool {
				if n.Is("identifier") {
					name := f.Text(n)
					if calls := taking[name]; len(calls) == 0 || calls[len(calls)-1] != c {
						taking[name] = append(calls, c)
					}
				}
				return true
			})
		}
		return taking
	})
}

// FeedsTraining reports whether a call in this file of the function
// holding n (by its name: a method's through an attribute, a function's
// bare) hands what it returns to training in the caller's function (see
// resultTrains). A model put in eval mode there runs without dropout, not
// without gradients: PPO's batched_forward_pass returns log-probs that
// train_minibatch backpropagates.
func (f *File) FeedsTraining(n *pyast.Node) bool {
	def := EnclosingFunction(n)
	if !def.Is("function_definition") {
		return false
	}
	method := def.Ancestor("class_definition", "function_definition").Is("class_definition")
	return remember(f, &f.memos.feedsTraining, def, func() bool {
		for _, c := range f.callsOutside(def, f.Text(def.Child("name")), method) {
			if f.resultTrains(c) {
				return true
			}
		}
		return false
	})
}

type noGradKey struct {
	fn    *pyast.Node
	depth int
}

// reachedWithoutItsName reports whether Python runs a function named
// name (a method when method is set) by other means than a call by its
// name: a model's forward through `model(x)`, the dunders through syntax
// (a constructor runs __init__, an index __getitem__, a loop __iter__, an
// attribute of the module its `__getattr__`). Its calls by name are not
// all its calls. A private `__name` (no trailing underscores) is called
// by name.
func reachedWithoutItsName(name string, method bool) bool {
	return method && name == "forward" || len(name) > 4 && strings.HasPrefix(name, "__") && strings.HasSuffix(name, "__")
}

// callsUnderNoGrad counts the calls in this file of the function fn (a
// method when method is set), outside fn itself, and reports whether every
// one runs with autograd off; it stops at the first that does not.
func (f *File) callsUnderNoGrad(fn *pyast.Node, name string, method bool, depth int) (calls int, underNoGrad bool) {
	for _, c := range f.callsOutside(fn, name, method) {
		if method && delegates(f, c, name) {
			continue
		}
		if !f.inNoGrad(c, depth+1, nil) {
			return calls, false
		}
		calls++
	}
	return calls, true
}

// callsOutside returns this file's calls of the function fn, named name
// (a method when method is set), outside fn itself. callsByName matches
// the last name; a method is called through an attribute, a function by
// its bare name.
func (f *File) callsOutside(fn *pyast.Node, name string, method bool) []*pyast.Node {
	var out []*pyast.Node
	for _, c := range f.callsByName(name) {
		if !fn.Contains(c) && c.Child("function").Is("attribute") == method {
			out = append(out, c)
		}
	}
	return out
}

// delegates reports whether the call c of a method named name is made
// by a method of that name (`Base.name(self, ...)`, `super().name(...)` in
// an override): it runs as the override's callers run it, and those are
// calls of the name too.
func delegates(f *File, c *pyast.Node, name string) bool {
	fn := EnclosingFunction(c)
	return fn.Is("function_definition") && f.Text(fn.Child("name")) == name
}

// noGradImportedByName reports whether target is a name bound to a no-grad
// context imported by its dotted name: `ng = _safe_import("torch.no_grad")`
// (sktime's optional dependencies), `importlib`-style helpers alike. Wider
// than importedByCall, which needs a callee named for importing: for these
// few strings any callee will do (`load_symbol("torch.inference_mode")`).
func (f *File) noGradImportedByName(target *pyast.Node) bool {
	if !target.Is("identifier") {
		return false
	}
	for _, b := range f.BindingsOf(target) {
		if !b.Is("call") || b.Child("arguments") == nil {
			continue
		}
		if first := b.Child("arguments").FirstNamed(); first.Is("string") {
			switch strings.Trim(f.Text(first), `"'`) {
			case "torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.inference_mode":
				return true
			}
		}
	}
	return false
}

// CalledUnderNoGradAcrossFiles reports whether n is code of a top-level
// function, or of a method of a top-level class, every call of which runs
// with autograd off, some of them in other files of the project: scvi's
// `compute_elbo`, whose callers are methods of another module decorated
// with `@torch.inference_mode()`; cornac's `HypAR.inference`, which its
// recommender calls as `self.model.inference(...)` under `torch.no_grad()`.
// A method's calls are found by name, whatever their receiver (as in the
// file, see calledOnlyUnderNoGrad): another class's method of the same
// name only adds calls that must run under no-grad too. The file's own
// calls count as they do for InNoGrad; another file's as that file sees
// them alone (see Project.CallersUnderNoGrad). The rules ask it last,
// before they report, rather than InNoGrad: what a file says of itself to
// other files (its summaries, its calls) stays its own, so no file's
// answer goes round through another's.
func (f *File) CalledUnderNoGradAcrossFiles(n *pyast.Node) bool {
	def := EnclosingFunction(n)
	if f.Project == nil || !def.Is("function_definition") {
		return false
	}
	// A closure runs when the function around it calls it, in its grad
	// mode: sglang's denoising step defines `evaluate_stage1_guided_x0`
	// and calls it; the step's callers decide.
	for {
		outer := def.Ancestor("function_definition", "lambda", "class_definition")
		if !outer.Is("function_definition") || !closureRunsInside(f, def, outer) {
			break
		}
		def = outer
	}
	name := f.Text(def.Child("name"))
	method := false
	statement := def // in its block: the decorated definition, for a decorated one
	if p := def.Parent(); p.Is("decorated_definition") {
		statement = p
	}
	switch outer := def.Ancestor("class_definition", "function_definition", "lambda"); {
	case outer == nil:
	case outer.Is("class_definition") && outer.Ancestor("class_definition", "function_definition", "lambda") == nil &&
		statement.Parent() == outer.Child("body"):
		// What a model runs when it is called, and Python's own hooks,
		// are reached by other means than `.name(...)`.
		if name == "forward" || strings.HasPrefix(name, "__") {
			return false
		}
		method = true
	default:
		return false
	}
	// Depth -1: the file's calls are judged as InNoGrad judges them.
	if _, here := f.callsUnderNoGrad(def, name, method, -1); !here {
		return false
	}
	var calls int
	var underNoGrad bool
	if method {
		calls, underNoGrad = f.Project.MethodCallersUnderNoGrad(f.Path, name)
	} else {
		calls, underNoGrad = f.Project.CallersUnderNoGrad(f.Path, name)
	}
	// Not known yet: the finding waits for the answer rather than show
	// and perhaps go again a second later.
	return calls < 0 || calls > 0 && underNoGrad
}

// closureRunsInside reports whether the function def, defined in outer,
// runs only while outer does and in its grad mode: outer only ever calls
// it (never returns, stores or passes it: a hook registered with it runs
// later, in its caller's mode), and turns autograd on nowhere.
func closureRunsInside(f *File, def, outer *pyast.Node) bool {
	name := f.Text(def.Child("name"))
	escapes := false
	pyast.Walk(outer.Child("body"), func(m *pyast.Node) bool {
		switch {
		case escapes || m == def:
			return false
		case m.Is("identifier") && f.Text(m) == name:
			p := m.Parent()
			escapes = !(p.Is("call") && p.Child("function") == m)
		case m.Is("call"):
			switch f.LastName(m.Child("function")) {
			case "enable_grad", "set_grad_enabled":
				escapes = true
			}
		}
		return !escapes
	})
	return !escapes
}

// MethodCallsUnderNoGrad counts the calls in f of a method named name,
// through any receiver (`x.name(...)`), and reports whether every one of
// them runs with autograd off as f alone tells.
func (f *File) MethodCallsUnderNoGrad(name string) (calls int, underNoGrad bool) {
	underNoGrad = true
	for _, c := range f.callsByName(name) {
		if !c.Child("function").Is("attribute") || delegates(f, c, name) {
			continue
		}
		calls++
		underNoGrad = underNoGrad && f.InNoGrad(c)
	}
	return calls, underNoGrad
}

// gradDisabledBefore reports whether the last `torch.set_grad_enabled(...)`
// statement before n in n's own scope turned autograd off.
func (f *File) gradDisabledBefore(n *pyast.Node) bool {
	scope, disabled := Scope(n), false
	for _, c := range f.gradSwitches {
		if c.Start() >= n.Start() {
			break
		}
		if InScope(c, scope) {
			disabled = f.Text(f.Arg(c, "mode", 0)) == "False"
		}
	}
	return disabled
}

// --- devices ---

var (
	deviceName = regexp.MustCompile(`(?i)(^|_)(device|dev|gpu|cuda)s?($|_)|device$|^(local_)?rank$`)
	dtypeNames = map[string]bool{
		"float": true, "float16": true, "float32": true, "float64": true, "half": true, "double": true,
		"bfloat16": true, "int": true, "int8": true, "int16": true, "int32": true, "int64": true,
		"long": true, "short": true, "uint8": true, "bool": true, "complex64": true, "complex128": true,
		"cfloat": true, "cdouble": true, "float8_e4m3fn": true, "float8_e5m2": true,
	}
)

// IsDeviceExpr reports whether e may name a CUDA device: "cuda", "cuda:0",
// torch.device("cuda" ...), an integer device index, or a name bound to one
// (or named like one: device, dev, gpu, self.device). "cpu" and dtypes do
// not count.
func (f *File) IsDeviceExpr(e *pyast.Node) bool {
	return f.isDeviceExpr(e, 0)
}

func (f *File) isDeviceExpr(e *pyast.Node, depth int) bool {
	if e == nil || depth > 8 {
		return false
	}
	switch e.Kind() {
	case "string":
		// Past any prefix (f"cuda:{rank}", r'cuda') and the quotes.
		s := strings.TrimLeft(f.Text(e), "rRbBuUfF")
		return strings.HasPrefix(strings.TrimLeft(s, `"'`), "cuda")
	case "integer":
		return true // a device index
	case "conditional_expression":
		for _, c := range e.NamedChildren() {
			if f.isDeviceExpr(c, depth+1) {
				return true
			}
		}
		return false
	case "parenthesized_expression":
		return f.isDeviceExpr(e.FirstNamed(), depth+1)
	case "call":
		switch f.Callee(e) {
		case "torch.device":
			return f.isDeviceExpr(f.Arg(e, "type", 0), depth+1)
		case "torch.cuda.current_device":
			return true
		}
		return false
	case "identifier", "attribute":
		q := f.QualifiedName(e)
		if strings.HasPrefix(q, "torch.") && dtypeNames[strings.TrimPrefix(q, "torch.")] {
			return false
		}
		if e.Kind() == "attribute" && f.Text(e.Child("attribute")) == "device" && q == "" {
			// x.device follows a tensor (or a module) wherever it is: not
			// a move to CUDA. self.device is a configured device.
			if obj := e.Child("object"); !(obj.Is("identifier") && (f.Text(obj) == "self" || f.Text(obj) == "cls")) &&
				len(f.BindingsOf(e)) == 0 {
				return false
			}
		}
		if binds := f.BindingsOf(e); len(binds) > 0 {
			for _, b := range binds {
				if f.isDeviceExpr(b, depth+1) {
					return true
				}
			}
			// Bound only to non-device values (such as "cpu"): judge by the
			// values, not the name.
			return false
		}
		last := f.Text(e)
		if e.Kind() == "attribute" {
			last = f.Text(e.Child("attribute"))
		}
		return deviceName.MatchString(last)
	}
	return false
}

// --- torch.utils.data ---

func (f *File) newDataLoader(call *pyast.Node) *DataLoader {
	d := &DataLoader{
		Call:       call,
		Dataset:    f.Arg(call, "dataset", 0),
		NumWorkers: f.Arg(call, "num_workers", 2),
		PinMemory:  f.Arg(call, "pin_memory", 7),
		CollateFn:  f.Arg(call, "collate_fn", 6),
	}
	if p := call.Parent(); p.Is("assignment") && p.Child("right") == call && p.Child("left").Is("identifier", "attribute") {
		d.Var = strings.Clone(f.Text(p.Child("left"))) // copies: later versions may share d
	}
	d.DatasetClass = f.classOfInstance(d.Dataset, 0)
	if d.DatasetClass == nil {
		d.DatasetType = strings.Clone(f.typeOfInstance(d.Dataset, 0))
	}
	return d
}

// typeOfInstance is classOfInstance for a class the file imports: the
// qualified name of what built the value, or "".
func (f *File) typeOfInstance(e *pyast.Node, depth int) string {
	if e == nil || depth > 8 {
		return ""
	}
	switch e.Kind() {
	case "call":
		return f.QualifiedName(f.unwrapModuleChain(e).Child("function"))
	case "identifier", "attribute":
		for _, b := range f.BindingsOf(e) {
			if t := f.typeOfInstance(b, depth+1); t != "" {
				return t
			}
		}
	}
	return ""
}

// classOfInstance finds the class an expression is an instance of, when the
// file shows it: `CustomDataset(...)` or a name bound to one.
func (f *File) classOfInstance(e *pyast.Node, depth int) *Class {
	if e == nil || depth > 8 {
		return nil
	}
	if depth == 0 && e.Is("identifier", "attribute") {
		// Asked for every method call's receiver: remembered per version
		// by the name's text (the answer follows its bindings).
		return remember(f, &f.memos.instances, f.NameKey(e), func() *Class { return f.classOfInstance(e, 1) })
	}
	switch e.Kind() {
	case "call":
		if fn := f.unwrapModuleChain(e).Child("function"); fn.Is("identifier") {
			return f.Classes[f.Text(fn)]
		}
	case "identifier", "attribute":
		for _, b := range f.BindingsOf(e) {
			if c := f.classOfInstance(b, depth+1); c != nil {
				return c
			}
		}
	}
	return nil
}

// WorkerMethod is a method of a dataset class that a DataLoader's worker
// processes call: __getitem__ or __getitems__ of a Dataset, __iter__ of an
// IterableDataset.
type WorkerMethod struct {
	Class *Class
	Name  string
	Fn    *pyast.Node // function_definition
}

// workerMethodNames are the methods a DataLoader's workers run: a
// dataset's, and an iterable dataset's last one too.
var workerMethodNames = []string{"__getitem__", "__getitems__", "__iter__"}

// WorkerMethods returns the worker methods of the file's dataset classes,
// in source order. They follow from the classes and what they derive
// from: a version whose edit left the file's structure alone shares the
// answer with the one before (a large file has hundreds of datasets among
// a thousand classes, and this is asked on every version).
func (f *File) WorkerMethods() []WorkerMethod {
	if had := f.workerMethods.Load(); had != nil {
		return *had
	}
	var out []WorkerMethod
	for _, c := range f.Classes {
		if !f.IsDataset(c) {
			continue
		}
		names := workerMethodNames[:2]
		if f.IsIterableDataset(c) {
			names = workerMethodNames
		}
		for _, name := range names {
			if fn := c.Methods[name]; fn != nil {
				out = append(out, WorkerMethod{Class: c, Name: name, Fn: fn})
			}
		}
	}
	slices.SortFunc(out, func(a, b WorkerMethod) int { return a.Fn.Start() - b.Fn.Start() })
	f.workerMethods.Store(&out)
	return out
}

// LoadersOf returns the DataLoaders built over instances of class c.
func (f *File) LoadersOf(c *Class) []*DataLoader {
	// A large file has hundreds of datasets and loaders: one pass.
	return slices.Clip(f.loadersByClass()[c])
}

// loadersByClass returns the DataLoaders by the class of their dataset,
// found once.
func (f *File) loadersByClass() map[*Class][]*DataLoader {
	f.loadersOf.Do(func() {
		f.loadersOf.m = map[*Class][]*DataLoader{}
		for _, d := range f.DataLoaders {
			f.loadersOf.m[d.DatasetClass] = append(f.loadersOf.m[d.DatasetClass], d)
		}
	})
	return f.loadersOf.m
}
