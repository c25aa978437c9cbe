package semantic

import (
	"bytes"
	"hash/maphash"
	"iter"
	"maps"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/source"
)

// A buffer's versions share the segments an edit did not touch (see
// pyast.Tree), and with them what the model finds in each: its calls,
// loops, assignments, classes and bindings. The answers the model
// remembers about names and scopes carry over too, as long as what they
// were computed from is unchanged: the imports, the classes' headers and
// the bindings of the names they looked at.

// NewFile builds the model for a parsed file; src is its source.
func NewFile(path string, src []byte, tree *pyast.Tree) *File {
	return NewModelFrom(nil, ModuleInfo{Path: path}, src, tree)
}

// NewFileFrom builds the model for a version of a buffer, reusing what it
// can of prev, the model of an earlier version (nil for none).
func NewFileFrom(prev *File, path string, src []byte, tree *pyast.Tree) *File {
	return NewModelFrom(prev, ModuleInfo{Path: path}, src, tree)
}

// NewModelFrom is NewFileFrom for a file placed in a project.
func NewModelFrom(prev *File, info ModuleInfo, src []byte, tree *pyast.Tree) *File {
	f := &File{
		Path: info.Path, Project: info.Project,
		Src: tree.Src, source: src, Tree: tree, Mapper: newMapper(prev, tree),
		Imports: map[string]string{},
		Classes: map[string]*Class{},
		indexes: make([]*segmentIndex, len(tree.Segments)),
		// Epochs of its own from the start, until carryOver tells whether
		// it shares the last version's: comparing summaries there asks
		// questions of this version. With the zero epoch every version
		// had then, the answers one version remembered while carrying over
		// were taken for another's, and a class nothing had asked about
		// yet (its kind's zero value, epoch 0) was taken for neither a
		// module nor a dataset.
		epoch: bindingEpochs.Add(1), structureEpoch: bindingEpochs.Add(1),
		stores: newStoresGraph(prev),
		id:     fileIDs.Add(1),
	}
	if prev != nil {
		f.carried.from = prev.id
	}
	fresh, removed, removedSegments := f.shareIndexes(prev)
	// An edit inside a method of a class: the methods it left alone keep
	// their shares of the class's index (see indexUnits), and carryOver
	// their answers.
	var kept *keptUnits
	if len(fresh) == 1 && len(removed) == 1 && removed[0].units != nil {
		f.carried.pairs, f.carried.paired = pairUnchangedUnits(prev, removedSegments[0], f, tree.Segments[fresh[0]]), true
		kept = newKeptUnits(f.carried.pairs, removed[0], removedSegments[0], tree)
	}
	// A whole file's worth of segments is indexed on every core.
	InParallel(len(fresh), func(k int) {
		f.indexes[fresh[k]] = buildSegmentIndex(tree.Segments[fresh[k]], tree, kept)
	})
	f.indexFunctions(prev, fresh, removed)
	f.carried.removed, f.carried.fresh, f.carried.gone, f.carried.goneSegments = removed, fresh, removed, removedSegments
	if prev != nil {
		f.carried.bindings = prev.bindings.built.Load()
		f.carried.moduleSets = prev.moduleSetsSoFar()
	}
	// A keystroke in a function's body leaves the file's structure (its
	// imports, classes and their headers), its DataLoaders and its grad
	// switches as prev had them: they are taken from prev rather than
	// gathered again from every segment.
	freshIndexes := f.indexesAt(fresh)
	// The structure ends with the project's part (see below), which
	// changes when other files do.
	project := f.projectStructure()
	sameProject := prev != nil && prev.Path == f.Path && prev.Project == f.Project &&
		prev.structure[strings.LastIndexByte(prev.structure, 0)+1:] == project
	sameStructure := sameProject && !holdStructure(removed) && !holdStructure(freshIndexes)
	sameClasses := false // the very classes of prev
	// A method typed into a class (its name, letter by letter) or broken
	// by a bracket left open adds or removes methods, not classes: the
	// structure stays, and what reads the methods is told which came or
	// went.
	f.carried.methodsCameOrWent = methodsCameOrWent(removed, freshIndexes)
	sameMethods := len(f.carried.methodsCameOrWent) == 0
	switch {
	case sameStructure:
		sameClasses = true
		f.Imports, f.Classes, f.structure = prev.Imports, prev.Classes, prev.structure
		// The same classes, deriving from the same bases, with the same
		// methods.
		f.workerMethods.Store(prev.workerMethods.Load())
		f.methodNames.Store(prev.methodNames.Load())
	case sameProject && sameHeaders(removed, freshIndexes):
		// An edit inside a class that leaves its header alone: the same
		// structure, the edited classes' objects new.
		sameStructure = true
		f.Imports, f.structure = prev.Imports, prev.structure
		f.Classes = maps.Clone(prev.Classes)
		// The headers list the classes in order: the i-th removed is the
		// i-th fresh one, edited.
		replaced := map[*Class]*Class{}
		fresh := classesOf(freshIndexes)
		for i, old := range classesOf(removed) {
			if prev.Classes[old.Name] == old {
				f.Classes[old.Name] = fresh[i]
				replaced[old] = fresh[i]
			}
		}
		// A worker method come or gone: they are found anew, not patched
		// (__getitem__ is seldom typed).
		if !slices.ContainsFunc(workerMethodNames, func(name string) bool { return f.carried.methodsCameOrWent[name] }) {
			f.workerMethods.Store(prev.workerMethodsWith(replaced))
		}
		if sameMethods {
			f.methodNames.Store(prev.methodNames.Load())
		}
	default:
		var structure strings.Builder
		for _, ix := range f.indexes {
			for _, n := range ix.imports {
				switch n.Kind() {
				case "assignment":
					f.setImport(importedByCall(n, f.Src))
				case "import_statement":
					f.addImport(n)
				default:
					f.addFromImport(n)
				}
				// Where torch is bound matters to the fixes that name it
				// (see TorchNameAt): an import of it that moves into a
				// function or under TYPE_CHECKING, or one at module level
				// that goes while another binds the name, changes them.
				if torchBinding(f, n) != "" {
					structure.WriteString(torchImportPlace(f, n) + " " + f.Text(n) + ";")
				}
			}
			for _, c := range ix.classes {
				f.Classes[c.Name] = c
			}
			structure.WriteString(ix.classHeaders)
		}
		imports := make([]string, 0, len(f.Imports))
		for k, v := range f.Imports {
			imports = append(imports, k+"="+v)
		}
		sort.Strings(imports)
		f.structure = strings.Join(imports, ";") + "\x00" + structure.String() + "\x00" + project
	}
	f.totals = totalsFrom(prev, f.indexes, freshIndexes, removed)
	f.indent = f.totals.indent()
	var loaderCalls []*pyast.Node
	sameCalls := false // prev's loader calls
	switch {
	case sameStructure && !holdLoadersOrSwitches(prev, removed) && !holdLoadersOrSwitches(f, freshIndexes):
		f.gradSwitches, loaderCalls = prev.gradSwitches, loaderCallsOf(prev)
		sameCalls = true
	case sameStructure && len(removedSegments) <= fewRemoved:
		// An edit in a function that builds a DataLoader: the others'
		// stay where they were.
		f.gradSwitches = f.spliceFacts(prev, prev.gradSwitches, removedSegments, freshIndexes, func(facts *importFacts) []*pyast.Node { return facts.gradSwitches })
		loaderCalls = f.spliceFacts(prev, loaderCallsOf(prev), removedSegments, freshIndexes, func(facts *importFacts) []*pyast.Node { return facts.dataLoaders })
	default:
		for _, ix := range f.indexes {
			facts := ix.importFacts(f)
			f.gradSwitches = append(f.gradSwitches, facts.gradSwitches...)
			loaderCalls = append(loaderCalls, facts.dataLoaders...)
		}
	}
	f.carryOver(prev, freshIndexes, removed, removedSegments)
	f.carried.pairs = nil // the last version's nodes: not kept past carryOver
	for _, ix := range freshIndexes {
		// Not kept past this version's building either: each version's
		// index would keep the last one's.
		ix.mu.Lock()
		ix.takenFrom = nil
		ix.mu.Unlock()
	}
	if f.carried.ok {
		f.structureEpoch = prev.structureEpoch
		if !f.namesChanged() {
			f.epoch = prev.epoch
		}
	}
	if prev != nil && f.epoch == prev.epoch {
		f.tables.last = prev.tablesSoFar()
	}
	if prev != nil {
		// A segment moved unchanged is analysed again (its nodes are
		// new), but its code is the same: the model's answers and other
		// verdicts read it as before.
		edited, moved, editedGone := codeChanged(tree.Segments, fresh, removed, removedSegments)
		f.carried.edited, f.carried.editedGone = edited, editedGone
		f.carried.focus, f.carried.reusable = f.reanalyse(prev, edited)
		f.carried.moduleCodeKept = f.carried.reusable && !f.holdsModuleCode(f.carried.focus, editedGone)
		if f.carried.focus != nil {
			for _, i := range moved {
				f.carried.focus[tree.Segments[i]] = true
			}
		}
	}
	f.DataLoaders = f.dataLoaders(prev, loaderCalls, sameClasses && sameCalls)
	if prev != nil && slices.Equal(f.DataLoaders, prev.DataLoaders) {
		// The same loaders, over the same classes (see dataLoaders).
		f.loadersOf.Do(func() { f.loadersOf.m = prev.loadersByClass() })
	}
	if prev != nil {
		if f.carried.reusable {
			f.carried.devices = prev.devices.Load()
			// RememberReading's answers carry over even when names are
			// bound anew: the focus has every segment whose code reads
			// differently then (see unchangedFor).
			f.tables.lastReading = prev.tablesSoFar()
		}
	}
	return f
}

// segmentTotals add up what the segments' indexes count for the whole
// file: its line breaks (see File.lineEnding) and how many segments indent
// by each step (see File.indent). A version takes prev's and adjusts them
// by the segments removed and added, rather than visiting thousands of
// segments on every keystroke.
type segmentTotals struct {
	crlf, lf, cr int
	indents      map[int]int // a segment's indentation step -> how many have it
	noqa         int         // comments that mention noqa (see NoqaComments)
}

// totalsFrom returns the totals of indexes, a version's, from prev's
// (nil for none) and the indexes only prev has (removed) and only this
// version has (fresh).
func totalsFrom(prev *File, indexes, fresh, removed []*segmentIndex) segmentTotals {
	if prev == nil {
		t := segmentTotals{indents: map[int]int{}}
		for _, ix := range indexes {
			t.add(ix, 1)
		}
		return t
	}
	t := prev.totals
	t.indents = maps.Clone(t.indents)
	for _, ix := range removed {
		t.add(ix, -1)
	}
	for _, ix := range fresh {
		t.add(ix, 1)
	}
	return t
}

// add counts ix's segment times times (-1 to take it away).
func (t *segmentTotals) add(ix *segmentIndex, times int) {
	t.crlf += times * ix.breaks.crlf
	t.lf += times * ix.breaks.lf
	t.cr += times * ix.breaks.cr
	t.noqa += times * len(ix.noqaComments)
	if ix.indent != 0 {
		if t.indents[ix.indent] += times; t.indents[ix.indent] == 0 {
			delete(t.indents, ix.indent)
		}
	}
}

// indent is the file's indentation step: the one most of its segments
// indent by (a segment's is its smallest, see segmentIndex.indent), the
// smaller on a tie, tabs (-1) before any; 0 when none indents. The most
// common rather than the smallest: a line typed one space at a time (or
// one odd block) made the smallest step 1, 2 and 3 in turn, and since the
// fixes follow the file's step, every version analysed the whole file
// again (see File.reanalyse); at 50,000 lines 13% of the keys of a typed
// function did.
func (t *segmentTotals) indent() int {
	best, most := 0, 0
	for step, n := range t.indents {
		if n > most || n == most && step < best {
			best, most = step, n
		}
	}
	return best
}

// shareIndexes takes prev's index of every segment f's tree shares with
// prev's, and returns the positions of the segments left without one
// (fresh), and the indexes and segments only prev has (removed). The
// segments are paired in one walk over both lists (segmentsByOffset):
// maps of every segment, built and looked up on every version, took a
// third of a millisecond a keystroke at 50,000 lines (5,000 segments).
func (f *File) shareIndexes(prev *File) (fresh []int, removed []*segmentIndex, removedSegments []*pyast.Segment) {
	var inPrev segmentsByOffset
	if prev != nil {
		inPrev.old = prev.Tree.Segments
	}
	next := 0 // prev's first segment neither paired nor removed
	dropUpTo := func(end int) {
		for ; next < end; next++ {
			removed = append(removed, prev.indexes[next])
			removedSegments = append(removedSegments, inPrev.old[next])
		}
	}
	for i, seg := range f.Tree.Segments {
		j := inPrev.find(seg)
		if j < 0 {
			fresh = append(fresh, i)
			continue
		}
		dropUpTo(j)
		f.indexes[i] = prev.indexes[j]
		next = j + 1
	}
	dropUpTo(len(inPrev.old))
	return fresh, removed, removedSegments
}

// codeChanged splits fresh, the positions of the segments of segs an
// edit made, into those whose code it changed (edited) and those moved
// unchanged from one of removedSegments (see pyast.Segment.Code), and
// returns the indexes of removed (those of removedSegments) whose code no
// segment of segs has.
func codeChanged(segs []*pyast.Segment, fresh []int, removed []*segmentIndex, removedSegments []*pyast.Segment) (edited, moved []int, editedGone []*segmentIndex) {
	codes := make(map[uint64]int, len(removedSegments)) // code -> k of removedSegments, while not moved
	for k, seg := range removedSegments {
		codes[seg.Code()] = k
	}
	movedOut := make([]bool, len(removed))
	for _, i := range fresh {
		k, ok := codes[segs[i].Code()]
		if !ok {
			edited = append(edited, i)
			continue
		}
		delete(codes, segs[i].Code())
		movedOut[k] = true
		moved = append(moved, i)
	}
	if len(moved) == 0 {
		return fresh, nil, removed
	}
	for k, ix := range removed {
		if !movedOut[k] {
			editedGone = append(editedGone, ix)
		}
	}
	return edited, moved, editedGone
}

// Keeps reports whether f has seg, a segment of last. When f was built
// from last (NewModelFrom), it shares every segment of last but those the
// edit removed, a keystroke's one or two: no lookup by offset, which
// keeping a script's findings did for each of its segments with one
// (6% of a keystroke's CPU after a 10,000-line script).
func (f *File) Keeps(last *File, seg *pyast.Segment) bool {
	if gone := f.carried.goneSegments; f.carried.from == last.id && len(gone) <= fewRemoved {
		return !slices.Contains(gone, seg)
	}
	return f.SegmentAt(seg.Base) == seg
}

// fileIDs numbers the models (see File.id).
var fileIDs atomic.Uint64

// segmentNumber is seg's position in f's tree, or -1 when f's tree does
// not have it.
func (f *File) segmentNumber(seg *pyast.Segment) int {
	if i := f.Tree.SegmentNumber(seg.Base); i >= 0 && f.Tree.Segments[i] == seg {
		return i
	}
	return -1
}

// fewRemoved is the most segments an edit may remove (a keystroke removes
// one or two, a paste thousands) for what it removed to be looked up one
// by one: spliceFacts then patches the last version's lists, and carryOver
// checks each answer's segment against them.
const fewRemoved = 8

// maxStaleSerials is how many segments may go before the answers
// remembered by their local keys are dropped (see carryOver): each leaves
// a few, which nothing asks for again.
const maxStaleSerials = 32

// spliceFacts returns had, prev's list of nodes of one kind of importFacts
// (in source order), without those of the segments removed, and with
// those of the fresh segments' indexes (of f, in source order) that of
// picks, in source order. The imports are prev's, so the segments both
// versions share have the same facts; a shared segment keeps its offsets.
func (f *File) spliceFacts(prev *File, had []*pyast.Node, removed []*pyast.Segment, fresh []*segmentIndex, of func(*importFacts) []*pyast.Node) []*pyast.Node {
	var added []*pyast.Node
	for _, ix := range fresh {
		added = append(added, of(ix.importFacts(f))...)
	}
	var out []*pyast.Node // nil when empty, as gathering them leaves it
	for _, n := range had {
		if slices.Contains(removed, prev.segmentOf(n)) {
			continue
		}
		for len(added) > 0 && added[0].Start() < n.Start() {
			out, added = append(out, added[0]), added[1:]
		}
		out = append(out, n)
	}
	return append(out, added...)
}

// indexesAt returns the indexes of f's segments at positions, in order.
func (f *File) indexesAt(positions []int) []*segmentIndex {
	out := make([]*segmentIndex, len(positions))
	for k, i := range positions {
		out[k] = f.indexes[i]
	}
	return out
}

// holdStructure reports whether any of the segments has imports or
// classes, which make up a file's structure.
func holdStructure(indexes []*segmentIndex) bool {
	for _, ix := range indexes {
		if len(ix.imports) > 0 || len(ix.classes) > 0 || ix.classHeaders != "" {
			return true
		}
	}
	return false
}

// torchImportPlace says where an import of torch binds it, as TorchNameAt
// tells them apart: in a function, for type checkers only, or at run time
// for the whole module.
func torchImportPlace(f *File, imp *pyast.Node) string {
	switch {
	case EnclosingFunction(imp) != nil:
		return "inner"
	case typeCheckingOnly(f, imp):
		return "typing"
	}
	return "module"
}

// holdLoadersOrSwitches reports whether any of the segments of f
// constructs a DataLoader or switches gradients on or off.
func holdLoadersOrSwitches(f *File, indexes []*segmentIndex) bool {
	for _, ix := range indexes {
		if facts := ix.importFacts(f); len(facts.dataLoaders) > 0 || len(facts.gradSwitches) > 0 {
			return true
		}
	}
	return false
}

// dataLoaders describes the DataLoader constructions calls, taking prev's
// description of a call in a segment both versions share while the names
// it mentions are bound alike (no name is bound anew, or the segment is
// not in the focus, which has those that mention one: see reanalyse) and
// the dataset's class is the same. With sameCalls (prev's very classes
// and loader calls) and no loader's segment in the focus, that is every
// description: prev's list, without a look at each.
func (f *File) dataLoaders(prev *File, calls []*pyast.Node, sameCalls bool) []*DataLoader {
	var had []*DataLoader // prev's, in offset order as calls are
	namesChanged := f.namesChanged()
	if prev != nil && f.carried.ok && (!namesChanged || f.carried.reusable) {
		if sameCalls && (!namesChanged || !f.loadersIn(f.carried.focus)) {
			return prev.DataLoaders
		}
		had = prev.DataLoaders
	}
	out := make([]*DataLoader, len(calls))
	j := 0 // had's first loader not before the call
	for i, call := range calls {
		// A shared call keeps its offset: one walk over both lists.
		for j < len(had) && had[j].Call.Start() < call.Start() {
			j++
		}
		var d *DataLoader
		if j < len(had) && had[j].Call == call {
			d = had[j]
		}
		if d != nil && (d.DatasetClass == nil || f.Classes[d.DatasetClass.Name] == d.DatasetClass) &&
			(!namesChanged || !f.carried.focus[f.segmentOf(call)]) {
			out[i] = d
			continue
		}
		out[i] = f.newDataLoader(call)
	}
	return out
}

// loadersIn reports whether a segment of focus builds a DataLoader.
func (f *File) loadersIn(focus Focus) bool {
	for seg := range focus {
		if i := f.segmentNumber(seg); i >= 0 && len(f.indexes[i].importFacts(f).dataLoaders) > 0 {
			return true
		}
	}
	return false
}

// sameHeaders reports whether the segments removed and those fresh hold
// no imports and the same class headers (names and bases), in the same
// order: an edit inside classes that leaves the file's structure as it
// was, whatever methods came or went.
func sameHeaders(removed, fresh []*segmentIndex) bool {
	headers := func(indexes []*segmentIndex) string {
		var b strings.Builder
		for _, ix := range indexes {
			if len(ix.imports) > 0 {
				return "\x00" // never equal to the other's
			}
			b.WriteString(ix.classHeaders)
		}
		return b.String()
	}
	had := headers(removed)
	if had == "\x00" || had != headers(fresh) {
		return false
	}
	// A header may span lines (class A(\n  Base)): the classes one by one.
	olds, news := classesOf(removed), classesOf(fresh)
	return slices.EqualFunc(olds, news, func(a, b *Class) bool { return a.Name == b.Name })
}

// classesOf lists the classes of indexes, in order.
func classesOf(indexes []*segmentIndex) []*Class {
	var out []*Class
	for _, ix := range indexes {
		out = append(out, ix.classes...)
	}
	return out
}

// fewMethodsCameOrWent is how many methods may come or go in an edit
// that carryOver carries the model over (see carryOver).
const fewMethodsCameOrWent = 8

// methodsCameOrWent returns the names of the methods that a class of
// the segments removed defines and the same class of those fresh does
// not, or the reverse (nil for none): what a version whose edit left the
// file's structure alone (its imports, classes and their bases) must tell
// the answers that read a class's methods by name (hasMethod, the worker
// methods, a class's forward; those by a name mentioned follow the
// mention, see carryOver).
func methodsCameOrWent(removed, fresh []*segmentIndex) map[string]bool {
	// Most keystrokes in a class leave its methods as they were: compared
	// class by class, without a key made for each (a large class has
	// hundreds).
	if olds, news := classesOf(removed), classesOf(fresh); len(olds) == len(news) {
		same := true
		for i, old := range olds {
			same = same && sameMethodNames(old, news[i])
		}
		if same {
			return nil
		}
	}
	var balance map[string]int // "class.method"
	for side, indexes := range [2][]*segmentIndex{removed, fresh} {
		for _, ix := range indexes {
			for _, c := range ix.classes {
				if balance == nil {
					balance = map[string]int{}
				}
				for m := range c.Methods {
					balance[c.Name+"."+m] += 2*side - 1
				}
			}
		}
	}
	var out map[string]bool
	for key, n := range balance {
		if n != 0 {
			if out == nil {
				out = map[string]bool{}
			}
			_, method, _ := strings.Cut(key, ".")
			out[method] = true
		}
	}
	return out
}

// sameMethodNames reports whether classes a and b have one name and
// methods of the same names.
func sameMethodNames(a, b *Class) bool {
	if a.Name != b.Name || len(a.Methods) != len(b.Methods) {
		return false
	}
	for name := range a.Methods {
		if _, ok := b.Methods[name]; !ok {
			return false
		}
	}
	return true
}

// workerMethodsWith returns f's WorkerMethods with the classes of
// replaced (same headers, so the same datasets) in place of the ones they
// replace, for a version of f whose edit brought no worker method (see
// methodsCameOrWent); nil when f has not found them.
func (f *File) workerMethodsWith(replaced map[*Class]*Class) *[]WorkerMethod {
	had := f.workerMethods.Load()
	if had == nil || len(replaced) == 0 {
		return had
	}
	out := slices.Clone(*had)
	for i, m := range out {
		if c := replaced[m.Class]; c != nil {
			fn := c.Methods[m.Name]
			if fn == nil {
				return nil // cannot be, with the same headers; found afresh
			}
			out[i] = WorkerMethod{Class: c, Name: m.Name, Fn: fn}
		}
	}
	return &out
}

// bindingEpochs numbers what the names of a file are bound to, and its
// structures (see File.epoch, File.structureEpoch).
var bindingEpochs atomic.Uint64

// Remember returns the answer to the question called name about n,
// computing it on the first ask. The answer must follow from the code of
// n's top-level statement and from what names are bound to (imports,
// class headers, BindingsOf; not what the file's functions do): the
// versions of an edited buffer then share it while they share n's
// statement and bind every name alike, rather than each asking again
// about every statement of the file. It must not be changed once
// returned.
func Remember[T any](f *File, name string, n *pyast.Node, compute func() T) T {
	ix := f.indexOf(n)
	if ix == nil {
		return compute()
	}
	q := question{name, n}
	ix.answers.Lock()
	if ix.answers.epoch == f.epoch {
		if v, ok := ix.answers.m[q]; ok {
			ix.answers.Unlock()
			return v.(T)
		}
	}
	ix.answers.Unlock()
	v := compute()
	ix.answers.Lock()
	defer ix.answers.Unlock()
	if ix.answers.epoch != f.epoch {
		// Another epoch's answers (an older version analysed late, or
		// a newer one): this version's replace them.
		ix.answers.epoch, ix.answers.m = f.epoch, nil
	}
	if ix.answers.m == nil {
		ix.answers.m = map[question]any{}
	}
	ix.answers.m[q] = v
	return v
}

// RememberEach returns the answers to the question called name about
// each of nodes, as Remember does for one node: each answer must follow
// from the code of its node's top-level statement and from what names are
// bound to. A version keeps its answers as one table, which the next
// version starts from while every name keeps its binding: a node of a
// statement the edit left alone is the same node there, with the same
// answer. For a question asked of hundreds of nodes on every version
// (GPU001 asks for the device moves in every dataset's __getitem__), one
// table costs a comparison a node where Remember's lookups in each node's
// segment cost the better part of a microsecond. Ask with the same list
// in the same order on every version (a table is matched to the nodes by
// position first). The table keeps nodes: neither it nor the answers
// returned may be changed afterwards.
func RememberEach[T any](f *File, name string, nodes []*pyast.Node, compute func(*pyast.Node) T) []T {
	// This version's table, if it asked already, or the last version's.
	f.tables.Lock()
	had := f.tables.m[name]
	if had == nil {
		had = f.tables.last[name]
	}
	f.tables.Unlock()
	last, _ := had.(*answerTable[T])
	var byNode map[*pyast.Node]T // last's answers, when the lists differ
	out := &answerTable[T]{nodes: nodes, answers: make([]T, len(nodes))}
	for i, n := range nodes {
		switch {
		case last == nil:
			out.answers[i] = compute(n)
			continue
		case i < len(last.nodes) && last.nodes[i] == n:
			out.answers[i] = last.answers[i]
			continue
		case byNode == nil:
			byNode = make(map[*pyast.Node]T, len(last.nodes))
			for k, m := range last.nodes {
				byNode[m] = last.answers[k]
			}
		}
		if v, ok := byNode[n]; ok {
			out.answers[i] = v
		} else {
			out.answers[i] = compute(n)
		}
	}
	f.tables.Lock()
	defer f.tables.Unlock()
	if f.tables.m == nil {
		f.tables.m = map[string]any{}
	}
	f.tables.m[name] = out
	return out.answers
}

// answerTable is a version's answers to one question of RememberEach.
type answerTable[T any] struct {
	nodes   []*pyast.Node
	answers []T
}

// tablesSoFar returns the tables of RememberEach that f has so far (its
// analysis may still be asking).
func (f *File) tablesSoFar() map[string]any {
	f.tables.Lock()
	defer f.tables.Unlock()
	return maps.Clone(f.tables.m)
}

// namesChanged reports whether carryOver found a name bound to other
// values (its changed set also names functions, "def:" and "calls:").
func (f *File) namesChanged() bool {
	for key := range f.carried.changed {
		if !strings.HasPrefix(key, "def:") && !strings.HasPrefix(key, "calls:") {
			return true
		}
	}
	return false
}

// sameModeAfterEdit reports whether every module-level call in the
// segments f shares with prev is in eval mode (see evalModeBefore) in f as
// it is in prev, when the segments only one of them has are one run at the
// same place (a keystroke's): then the last mode call before the run's end
// decides for the calls after it in both, unless a shared one comes
// between, and its verdict is compared. Calls in the run itself are judged
// one by one (see carryOver); those before it read no mode call of it.
// False when the edit is spread out.
func (f *File) sameModeAfterEdit(prev *File, removed []*pyast.Segment) bool {
	fresh := f.carried.fresh // f's, in order
	gone := make([]int, len(removed))
	for k, seg := range removed {
		if gone[k] = prev.segmentNumber(seg); gone[k] < 0 {
			return false
		}
	}
	// Before the run both versions have the same segments, so the run
	// starts at the same number in both.
	var from int
	switch {
	case len(fresh) > 0:
		from = fresh[0]
	case len(gone) > 0:
		from = gone[0]
	default:
		return true // nothing changed
	}
	if !oneRunFrom(fresh, from) || !oneRunFrom(gone, from) {
		return false
	}
	return f.evalModeAfterSegment(from+len(fresh)) == prev.evalModeAfterSegment(from+len(gone))
}

// oneRunFrom reports whether the segment numbers ns are from, from+1, ...
func oneRunFrom(ns []int, from int) bool {
	for k, n := range ns {
		if n != from+k {
			return false
		}
	}
	return true
}

// segmentsByOffset finds which of an earlier version's segments (old, in
// offset order) a version shares with it. A shared segment keeps its
// offset (see pyast.Tree), so asked in offset order, find walks old once:
// no map of thousands of segments on every version.
type segmentsByOffset struct {
	old []*pyast.Segment
	at  int // old's first segment at or after the last offset asked
}

// find returns seg's index in old, or -1 when old does not have it. Ask
// in increasing offset order.
func (s *segmentsByOffset) find(seg *pyast.Segment) int {
	for s.at < len(s.old) && s.old[s.at].Base < seg.Base {
		s.at++
	}
	if s.at < len(s.old) && s.old[s.at] == seg {
		return s.at
	}
	return -1
}

// atBase returns the index in old of the segment at base, after find was
// last asked for one there; -1 for none.
func (s *segmentsByOffset) atBase(base int) int {
	if s.at < len(s.old) && s.old[s.at].Base == base {
		return s.at
	}
	return -1
}

// newMapper indexes the lines of tree.Src, taking those of the segments
// prev's tree shares with it, laid out alike, from prev's index.
func newMapper(prev *File, tree *pyast.Tree) *source.Mapper {
	if prev == nil || !prev.Tree.LaidOut() || !tree.LaidOut() {
		return source.NewMapper(tree.Src)
	}
	end := func(t *pyast.Tree, i int) int { // of segment i's laid-out text
		if i+1 < len(t.Segments) {
			return t.Segments[i+1].Base
		}
		return len(t.Src)
	}
	var reuse []source.Reuse
	share := func(from, to, shift int) {
		if from >= to {
			return
		}
		if n := len(reuse); n > 0 && reuse[n-1].To == from && reuse[n-1].Shift == shift {
			reuse[n-1].To = to
		} else {
			reuse = append(reuse, source.Reuse{From: from, To: to, Shift: shift})
		}
	}
	inPrev := segmentsByOffset{old: prev.Tree.Segments}
	for i, seg := range tree.Segments {
		segEnd := end(tree, i)
		j := inPrev.find(seg)
		if j >= 0 && end(prev.Tree, j) == segEnd {
			share(seg.Base, segEnd, 0)
			continue
		}
		// A statement edited in its place and room (a keystroke in a class
		// of thousands of lines): the lines of the same first bytes are
		// where they were, those of the same last bytes before the spaces
		// moved by the change of length, and only the changed bytes are
		// looked at (the whole class took a third of a millisecond).
		if k := inPrev.atBase(seg.Base); j < 0 && k >= 0 && end(prev.Tree, k) == segEnd {
			old := prev.Tree.Segments[k]
			oldPad, pad := old.PadAt(), seg.PadAt()
			if oldPad < 0 || pad < 0 {
				continue
			}
			same, sameEnd := pyast.CommonEnds(old.Text()[:oldPad], seg.Text()[:pad])
			share(seg.Base, seg.Base+same, 0)
			share(seg.Base+pad-sameEnd, seg.Base+pad, pad-oldPad)
		}
	}
	return source.NewMapperFrom(prev.Mapper, tree.Src, reuse)
}

// indexFunctions fills f.Functions, from prev's when f is a version of the
// same buffer (see byName).
func (f *File) indexFunctions(prev *File, fresh []int, removed []*segmentIndex) {
	var had map[string][]*pyast.Node
	if prev != nil && prev.Tree.LaidOut() && f.Tree.LaidOut() {
		had = prev.Functions
	}
	f.Functions = f.byName(had, fresh, removed, func(ix *segmentIndex, add func(string, *pyast.Node)) {
		for _, d := range ix.functions {
			add(d.name, d.node)
		}
	})
}

// byName maps the names that each segment's pairs give to their nodes, in
// source order. With had, the map of the version f was built from, it
// patches a copy of it instead of reading every segment: the pairs of the
// segments only that version has (removed) go, those of f's fresh ones
// come. Names are the segments' copies (see binding): a map carried across
// versions must keep no version's text alive.
func (f *File) byName(had map[string][]*pyast.Node, fresh []int, removed []*segmentIndex, pairs func(*segmentIndex, func(string, *pyast.Node))) map[string][]*pyast.Node {
	if had == nil {
		m := map[string][]*pyast.Node{}
		for _, ix := range f.indexes {
			pairs(ix, func(name string, n *pyast.Node) { m[name] = append(m[name], n) })
		}
		return m
	}
	m := maps.Clone(had)
	gone := map[*pyast.Node]bool{}
	touched := map[string][]*pyast.Node{}
	for _, ix := range removed {
		pairs(ix, func(name string, n *pyast.Node) {
			gone[n] = true
			touched[name] = touched[name]
		})
	}
	for _, i := range fresh {
		pairs(f.indexes[i], func(name string, n *pyast.Node) { touched[name] = append(touched[name], n) })
	}
	for name, added := range touched {
		nodes := slices.DeleteFunc(slices.Clone(m[name]), func(n *pyast.Node) bool { return gone[n] })
		nodes = append(nodes, added...)
		if len(nodes) == 0 {
			delete(m, name)
			continue
		}
		sort.Slice(nodes, func(i, j int) bool { return nodes[i].Start() < nodes[j].Start() })
		m[name] = nodes
	}
	return m
}

// segmentIndex is what NewFile finds in one segment; it depends on the
// segment alone, so versions that share the segment share it.
type segmentIndex struct {
	calls, loops, assignments, comments []*pyast.Node
	noqaComments                        []*pyast.Node // see NoqaComments
	definitions                         []*pyast.Node // imports and functions
	imports                             []*pyast.Node // import and from-import statements
	functions                           []namedNode   // function definitions, any nesting
	classes                             []*Class
	classHeaders                        string // the classes' names and bases
	bindings                            []binding
	// scopes are the functions of the segment that assign names of their
	// own or declare names global, by definition (see localScope).
	scopes map[*pyast.Node]*localScope
	// classAttributes are the values assigned to the attributes of the
	// segment's classes in their methods, by classAttribute(class, chain).
	classAttributes  nodesByName
	serial           uint64        // unique to this index, for its scopes' keys
	deviceCandidates []*pyast.Node // name = string, call or conditional
	indent           int           // as File.indent
	// mentions are the hashes of the texts of the segment's identifiers
	// and attribute chains (but functions' names where they are defined),
	// sorted: the names whose bindings and definitions its analysis may
	// read (see reanalyse).
	mentions []uint64
	bloom    [8]uint64 // a bit per mention (see mentionsHash), to skip most lookups
	// localOnly are the hashes of mentions, sorted, that are all a
	// function's own names (parameters, names it assigns): no binding of
	// the module's is read there (see onlyLocal, File.mentioning).
	localOnly []uint64
	// shares are what the segment adds to the module's sets of names
	// (see NamesIn).
	shares nameShares
	// moduleCode: a statement of the segment is module code, not a
	// definition (see File.ModuleCodeKept).
	moduleCode bool
	// units are where the methods of a class statement have their shares
	// of the index, for the next version to take over (see indexUnits);
	// nil for other statements.
	units *indexUnits
	// breaks counts the segment's line breaks, for File.lineEnding.
	breaks struct{ crlf, lf, cr int }

	// What depends on the imports too, for the imports it was found with.
	mu    sync.Mutex
	facts *importFacts
	// stores are what flows into what in the segment, by identifier,
	// found on first use (see File.storesOf).
	stores     []uint64
	storesDone bool
	// What a class statement's methods read and bind, found on first use
	// (see classReads).
	classReadsFound *classReads
	classReadsDone  bool

	// Calls by the last name of what they call, and the calls in loops:
	// what rules look for, found on first use.
	byName    *nodesByName
	loopCalls []LoopCall
	// With units: each call's innermost loop (nil for none), and each of
	// byName's nodes' place in calls, for the next version's index to take
	// over (see callIndex); and, until callIndex runs, the units this index
	// took over.
	callLoops     []*pyast.Node
	callsByNameAt []int32
	takenFrom     *takenUnits

	// answers are what Remember was told about the segment's nodes, for
	// the versions of one binding epoch (see File.epoch).
	answers struct {
		sync.Mutex
		epoch uint64
		m     map[question]any
	}
}

// question is what Remember remembers an answer under: the question asked
// and the node it is about.
type question struct {
	name string
	n    *pyast.Node
}

// namedNode is a definition and its name, a copy (see binding).
type namedNode struct {
	name string
	node *pyast.Node
}

// binding is a plain assignment to a name (or attribute chain). The name
// is a view of the segment's own text (Segment.Own): a string taken from
// the laid-out text of the version that made the segment would keep that
// whole text alive as long as the segment.
type binding struct {
	name          string
	target, value *pyast.Node
	// scope is the function the name is local to, or nil for the module's
	// names and attribute chains. class is the class whose attribute the
	// chain is (self.device in its methods: see attributeClass), or "".
	scope *localScope
	class string
}

type importFacts struct {
	imports      string // File.structure's imports part
	dataLoaders  []*pyast.Node
	gradSwitches []*pyast.Node
}

// newSegmentIndex indexes a segment afresh.
func newSegmentIndex(seg *pyast.Segment, tree *pyast.Tree) *segmentIndex {
	return buildSegmentIndex(seg, tree, nil)
}

// buildSegmentIndex indexes a segment, taking over from the last version
// the shares of the methods kept says an edit left alone (nil: none).
func buildSegmentIndex(seg *pyast.Segment, tree *pyast.Tree, kept *keptUnits) *segmentIndex {
	ix := &segmentIndex{serial: indexSerial.Add(1)}
	b := &indexBuilder{ix: ix, seg: seg, tree: tree, kept: kept}
	// The identifiers mentioned in functions, each with the innermost
	// function around it, which the walk keeps on a stack (an ancestor
	// walk per identifier made indexing a 50,000-line file 15% slower).
	// A scratch list, kept between indexes: a class's grows to tens of
	// thousands, and growing it was a tenth of indexing one.
	b.inFunctions, b.units.inFunctions = mentionScratch.Get().(*[]mentionInFunction), mentionScratch.Get().(*[]mentionInFunction)
	defer func() {
		for _, scratch := range []*[]mentionInFunction{b.inFunctions, b.units.inFunctions} {
			clear(*scratch) // its nodes and names are the segment's
			*scratch = (*scratch)[:0]
			mentionScratch.Put(scratch)
		}
	}()
	// Only a buffer being edited has a next version to take them over, and
	// only a large class is worth it.
	if indexByUnits && tree.LaidOut() && seg.Len() >= unitsFrom && len(seg.Nodes) == 1 && isClassStatement(seg.Nodes[0]) {
		if roots := outermostFunctions(seg.Nodes[0]); len(roots) >= 2 {
			ix.units = &indexUnits{roots: roots, parts: make([]unitPart, len(roots))}
		}
	}
	for _, stmt := range seg.Nodes {
		// What a syntax error at the top level holds is its own scope
		// (see Scope, brokenStatement), as a function's body is: no reader
		// of the module's code reads it as the module's.
		if !stmt.Is("function_definition", "class_definition", "decorated_definition", "comment", "ERROR") {
			ix.moduleCode = true
		}
		pyast.Walk(stmt, b.visit)
	}
	b.scopeBindings()
	if len(b.keptRuns) > 0 {
		ix.takenFrom = &takenUnits{prev: b.kept.prev, runs: b.keptRuns}
	}
	if ix.units != nil {
		ix.units.declarations, ix.units.params = b.declarations, b.params
		ix.units.noteScopes(ix.scopes)
	}
	packNodes(&ix.calls, &ix.loops, &ix.assignments, &ix.comments, &ix.noqaComments, &ix.definitions, &ix.imports, &ix.deviceCandidates)
	ix.classHeaders = b.headers.String()
	segText := seg.Text()
	ix.breaks.crlf, ix.breaks.lf, ix.breaks.cr = bytes.Count(segText, []byte("\r\n")), bytes.Count(segText, []byte("\n")), bytes.Count(segText, []byte("\r"))
	ix.mentions, ix.localOnly = b.mentions()
	for _, h := range ix.mentions {
		ix.bloom[h>>6&7] |= 1 << (h & 63)
	}
	return ix
}

// indexBuilder is what building a segment's index keeps while it walks the
// segment's nodes.
type indexBuilder struct {
	ix   *segmentIndex
	seg  *pyast.Segment
	tree *pyast.Tree
	kept *keptUnits
	// inFunctions are the identifiers mentioned in functions (see
	// mentionInFunction); outside, the other mentions, never a function's
	// own name. Those of the units walked go to units' lists instead,
	// each unit's a run of them (unitRuns).
	inFunctions *[]mentionInFunction
	outside     hashList
	units       struct {
		inFunctions *[]mentionInFunction
		outside     hashList
	}
	unitRuns []unitRun
	// keptRuns are the units taken over, in order.
	keptRuns []keptRun
	// nextUnit is the first of ix.units.roots the walk has not reached;
	// walking, the unit it is in (nil outside units).
	nextUnit int
	walking  *pyast.Node
	// The functions around the node visited, innermost last, and the
	// names of the parameters node visited last: its names, not their
	// values.
	functions  []enclosingFunction
	paramNames []*pyast.Node
	// The classes around the node visited, innermost last, for the class
	// of a chain on self (attributeClass, without its ancestor walk: most
	// chains in a class of thousands of lines are on self).
	classes []enclosingClass
	headers strings.Builder
	// The global and nonlocal statements in functions, and the functions'
	// parameters, in the walk's order.
	declarations []*pyast.Node
	params       []functionParams
}

// unitRun is where a unit walked has its mentions in the builder's units
// lists.
type unitRun struct {
	part                   int
	idsFrom, idsTo         int
	outsideFrom, outsideTo int
}

// text returns n's text as a view of the segment's own text (see
// Segment.Own): no allocation, and no version's laid-out text kept alive
// (see binding).
func (b *indexBuilder) text(n *pyast.Node) string { return b.seg.Own(n.Text(b.tree.Src), b.tree.Src) }

// classOf is the class of an attribute chain on self at the node visited.
func (b *indexBuilder) classOf(chain *pyast.Node) string {
	if chain.Kind() != "attribute" || len(b.classes) == 0 {
		return ""
	}
	return selfChainClass(chain.Text(b.tree.Src), b.classes[len(b.classes)-1].name)
}

// visit indexes n, the walk's next node.
func (b *indexBuilder) visit(n *pyast.Node) bool {
	ix, tree := b.ix, b.tree
	functions := b.functions
	for len(functions) > 0 && functions[len(functions)-1].fn.End() <= n.Start() && functions[len(functions)-1].fn != n {
		functions = functions[:len(functions)-1]
	}
	b.functions = functions
	for len(b.classes) > 0 && b.classes[len(b.classes)-1].class.End() <= n.Start() && b.classes[len(b.classes)-1].class != n {
		b.classes = b.classes[:len(b.classes)-1]
	}
	if u := ix.units; u != nil && b.nextUnit < len(u.roots) && n == u.roots[b.nextUnit] && n != b.walking {
		b.unit(n)
		return false
	}
	switch n.Kind() {
	case "import_statement", "import_from_statement":
		ix.definitions = append(ix.definitions, n)
		ix.imports = append(ix.imports, n)
	case "function_definition":
		ix.definitions = append(ix.definitions, n)
		if name := n.Child("name"); name != nil {
			ix.functions = append(ix.functions, namedNode{b.text(name), n})
		}
		b.functions = append(b.functions, enclosingFunction{n, n.Child("parameters")})
	case "lambda":
		b.functions = append(b.functions, enclosingFunction{n, n.Child("parameters")})
	case "class_definition":
		b.classes = append(b.classes, enclosingClass{n, className(n, tree.Src)})
		b.addClass(n)
	case "call":
		ix.calls = append(ix.calls, n)
	case "for_statement", "while_statement":
		ix.loops = append(ix.loops, n)
	case "assignment", "augmented_assignment":
		ix.assignments = append(ix.assignments, n)
		left, right := n.Child("left"), n.Child("right")
		if n.Kind() != "assignment" || right == nil {
			break
		}
		if left.Is("identifier") && right.Is("string", "call", "conditional_expression") {
			ix.deviceCandidates = append(ix.deviceCandidates, n)
		}
		// `Dataset = _safe_import("torch.utils.data.Dataset")` is an
		// import too (see importedByCall), and a binding.
		if _, path := importedByCall(n, tree.Src); path != "" {
			ix.imports = append(ix.imports, n)
		}
		// `losses, top1 = AverageMeter(), AverageMeter()` binds each
		// target to its own value; `a, b = f()` binds them to parts
		// of one value nobody here knows, so to nothing.
		targets, values := AssignedPairs(left, right)
		for i, target := range targets {
			if target.Is("identifier", "attribute") {
				ix.bindings = append(ix.bindings, binding{name: b.text(target), target: target, value: values[i], class: b.seg.Own(b.classOf(target), tree.Src)})
			}
		}
	case "identifier", "attribute":
		if isMention(n, tree.Src) {
			h := attributeKeyHash(n.Text(tree.Src), b.classOf(n))
			inFunctions, outside := b.inFunctions, &b.outside
			if b.walking != nil {
				inFunctions, outside = b.units.inFunctions, &b.units.outside
			}
			// A parameter's default value or annotation is evaluated
			// where the function is defined, not in it.
			if in := b.functions; n.Kind() == "identifier" && len(in) > 0 &&
				(!in[len(in)-1].holdsInParameters(n) || slices.Contains(b.paramNames, n)) {
				*inFunctions = append(*inFunctions, mentionInFunction{h, b.text(n), in[len(in)-1].fn})
			} else {
				outside.add(h)
			}
		}
	case "global_statement", "nonlocal_statement":
		if EnclosingFunction(n) != nil {
			b.declarations = append(b.declarations, n)
		}
	case "parameters", "lambda_parameters":
		b.paramNames = b.paramNames[:0]
		if fn := n.Parent(); fn.Is("function_definition", "lambda") {
			var names []string
			for _, p := range n.NamedChildren() {
				name := parameterName(p)
				if name.Is("list_splat_pattern", "dictionary_splat_pattern") {
					name = name.FirstNamed() // *args, **kwargs
				}
				if name.Is("identifier") {
					names = append(names, b.text(name))
					b.paramNames = append(b.paramNames, name)
				}
			}
			if len(names) > 0 {
				b.params = append(b.params, functionParams{fn, names})
			}
		}
	case "comment":
		ix.comments = append(ix.comments, n)
		if mentionsNoqa(n.Text(tree.Src)) {
			ix.noqaComments = append(ix.noqaComments, n)
		}
	case "block":
		if ix.indent != -1 && n.FirstChild() != nil && n.Parent() != nil {
			inner, outer := indentAt(tree.Src, n.FirstChild().Start()), indentAt(tree.Src, n.Parent().Start())
			switch step := len(inner) - len(outer); {
			case len(inner) > 0 && inner[0] == '\t':
				ix.indent = -1
			case step > 0 && (ix.indent == 0 || step < ix.indent):
				ix.indent = step
			}
		}
	}
	return true
}

// addClass adds the class n defines to the index, and its line to the
// classes' headers: its name and bases. (Its methods are no part of the
// file's structure: see methodsCameOrWent.)
func (b *indexBuilder) addClass(n *pyast.Node) {
	c := newClass(n, b.text)
	b.ix.classes = append(b.ix.classes, c)
	b.headers.WriteString(c.Name)
	if supers := n.Child("superclasses"); supers != nil {
		b.headers.WriteString(b.text(supers))
	}
	b.headers.WriteString("\n")
}

// mentionScratch holds the lists of mentions newSegmentIndex collects.
var mentionScratch = sync.Pool{New: func() any { return new([]mentionInFunction) }}

// mentionInFunction is an identifier mentioned in a function's code: the
// hash and text of its name, and the innermost function or lambda around it.
type mentionInFunction struct {
	hash uint64
	name string
	fn   *pyast.Node
}

// decideMentions sorts mentions into the names that are a function's own
// there (local) and the others: ids, identifiers in functions, each to one
// or the other, and outside, the mentions that are no function's own name
// for sure. Each list sorted, each name once (local then holds a name
// both ways too); the lists are outside's and own's (empty) hashes. Sets rather than counts of each name's mentions: most
// repeats (self, x) are then dropped before the sort.
func (ix *segmentIndex) decideMentions(ids []mentionInFunction, outside, own *hashList) (local, other []uint64) {
	// The ids come function by function, in the walk's order: each
	// function's scopes are looked up once for its run of ids.
	// A function's names repeat (self, x): a small table keeps the last
	// decision for a name in each of its slots.
	var chainOf *pyast.Node
	var chain []*localScope
	var decided [64]struct {
		fn   *pyast.Node
		name string
		own  bool
	}
	for _, id := range ids {
		if id.fn != chainOf {
			chainOf, chain = id.fn, ix.scopeChain(id.fn, chain[:0])
		}
		d := &decided[id.hash&63]
		if d.fn != id.fn || d.name != id.name {
			d.fn, d.name, d.own = id.fn, id.name, ownScopeIn(chain, id.name) != nil
		}
		if d.own {
			own.add(id.hash)
		} else {
			outside.add(id.hash)
		}
	}
	return own.sorted(), outside.sorted()
}

// mergeMentions returns a segment's mentions and those of them local only
// (see segmentIndex) from the names its parts' code mentions as a
// function's own (local) and otherwise (other): the names local in one
// part and mentioned otherwise in none are local only.
func mergeMentions(local, other []uint64) (mentions, localOnly []uint64) {
	mentions = make([]uint64, 0, len(local)+len(other))
	i, j := 0, 0
	for i < len(local) || j < len(other) {
		switch {
		case j == len(other) || i < len(local) && local[i] < other[j]:
			mentions = append(mentions, local[i])
			localOnly = append(localOnly, local[i])
			i++
		case i == len(local) || other[j] < local[i]:
			mentions = append(mentions, other[j])
			j++
		default: // both: mentioned as another's name too
			mentions = append(mentions, local[i])
			i, j = i+1, j+1
		}
	}
	return mentions, slices.Clip(localOnly)
}

// hashList collects hashes, dropping most repeats as they come through a
// small table of the last hash in each of its slots (a repeat it misses
// costs only a place in the sort).
type hashList struct {
	recent [256]uint64
	hashes []uint64
}

func (l *hashList) add(h uint64) {
	if slot := &l.recent[h&255]; *slot != h || h == 0 {
		*slot = h
		l.hashes = append(l.hashes, h)
	}
}

// sorted returns the hashes added, sorted, each once.
func (l *hashList) sorted() []uint64 {
	slices.Sort(l.hashes)
	return slices.Compact(l.hashes)
}

// ownScope returns the scope of fn (a function, lambda or broken
// statement of the segment) or of a function around it whose own name
// name is, assigned or a parameter, unless a function on the way declares
// it global; nil otherwise (see File.localScopeOf).
func (ix *segmentIndex) ownScope(fn *pyast.Node, name string) *localScope {
	if ix.scopes == nil {
		return nil
	}
	var chain [4]*localScope // most functions are nested in fewer
	return ownScopeIn(ix.scopeChain(fn, chain[:0]), name)
}

// scopeChain appends to chain the scopes of fn and of the functions around
// it, innermost first, as ownScope visits them.
func (ix *segmentIndex) scopeChain(fn *pyast.Node, chain []*localScope) []*localScope {
	for ; fn != nil && ix.scopes != nil; fn = EnclosingFunction(fn) {
		if s := ix.scopes[fn]; s != nil {
			chain = append(chain, s)
		}
	}
	return chain
}

// ownScopeIn is ownScope over the scopes of a scopeChain.
func ownScopeIn(chain []*localScope, name string) *localScope {
	for _, s := range chain {
		if own, decided := s.decides(name); decided {
			return own
		}
	}
	return nil
}

// decides says whether the scope settles whose name is: its own (it
// assigns it or takes it as a parameter: own is s) or the module's
// (declared global: own is nil); not decided when neither or declared
// nonlocal, for the functions around it to settle.
func (s *localScope) decides(name string) (own *localScope, decided bool) {
	switch {
	case s.nonlocal[name]:
		return nil, false
	case s.global[name]:
		return nil, true
	case slices.Contains(s.params, name) || s.names.named(name) != nil:
		return s, true
	}
	return nil, false
}

// enclosingClass is a class around the node the index's walk visits, and
// its name ("" when it has none yet).
type enclosingClass struct {
	class *pyast.Node
	name  string
}

// enclosingFunction is a function or lambda around the node the index's
// walk visits, with its parameters (nil for a lambda of none).
type enclosingFunction struct{ fn, params *pyast.Node }

// holdsInParameters reports whether n, a node within the function, is in
// its parameters (a byte range test: the walk is in the function's code).
func (e enclosingFunction) holdsInParameters(n *pyast.Node) bool {
	return e.params != nil && e.params.Start() <= n.Start() && n.End() <= e.params.End()
}

// packNodes moves the lists into one array, each capped at its length so
// that an append to one copies it rather than writing over the next: one
// object for the collector to mark where there were as many as lists.
func packNodes(lists ...*[]*pyast.Node) {
	size := 0
	for _, l := range lists {
		size += len(*l)
	}
	all := make([]*pyast.Node, 0, size)
	for _, l := range lists {
		from := len(all)
		all = append(all, *l...)
		if len(*l) > 0 {
			*l = all[from:len(all):len(all)]
		}
	}
}

// localScope is what a function assigns to plain names of its own: as in
// Python, a name assigned in a function (and not declared global or
// nonlocal there) is that function's, and its uses in the function (and in
// functions nested in it that do not assign it) see those values only.
// Names a function only reads, and its parameters when it never assigns
// them, see the module's. (Attribute chains on self are their class's:
// see attributeClass.)
//
// Answers about a local name are remembered under its scoped key, so that
// an edit in one function leaves what every other function's names are
// bound to, and the answers about them, alone (see carryOver).
type localScope struct {
	id    string      // unique across versions of the file
	names nodesByName // name -> values, in source order
	// assigned collects names while the index is built.
	assigned []namedNode
	// Names declared global or nonlocal here: not the function's own.
	global, nonlocal map[string]bool
	// params are its parameters' names: its own, bound by its callers.
	params []string
}

// key returns the scoped key of a local name: never a name's text, and
// never the same for two scopes (see isLocalKey).
func (s *localScope) key(name string) string { return name + "\x00" + s.id }

// localKeySerial returns the serial of the segment index whose scope a
// local key names.
func localKeySerial(key string) string {
	_, id, _ := strings.Cut(key, "\x00")
	serial, _, _ := strings.Cut(id, ".")
	return serial
}

// isLocalKey reports whether a key of the answers remembered, or of what
// they asked, is a function's own name, which only the function's segment
// can read.
func isLocalKey(key string) bool { return strings.IndexByte(key, 0) >= 0 }

// indexSerial numbers segment indexes, so that scope keys are never reused
// by a later version's segments.
var indexSerial atomic.Uint64

// scopeBindings moves the bindings of plain names assigned in functions to
// those functions' scopes, given each function's global and nonlocal
// statements and parameters; the scopes of the units taken over are
// theirs in the last version's index, moved (see takeOverScopes).
func (b *indexBuilder) scopeBindings() {
	ix, seg, tree := b.ix, b.seg, b.tree
	// Whether an item lies in a run of a unit taken over: those have their
	// scopes moved below.
	inKept := func(list int) func(int) bool {
		c := keptCursor{runs: b.keptRuns, list: list}
		return func(i int) bool { _, ok := c.at(i); return ok }
	}
	declarationKept, paramKept, bindingKept := inKept(declarationsList), inKept(paramsList), inKept(bindingsList)
	for i, st := range b.declarations {
		if declarationKept(i) {
			continue
		}
		s := ix.scopeOf(EnclosingFunction(st))
		if s.global == nil {
			s.global, s.nonlocal = map[string]bool{}, map[string]bool{}
		}
		into := s.global
		if st.Kind() == "nonlocal_statement" {
			into = s.nonlocal
		}
		for _, id := range st.NamedChildren() {
			if id.Is("identifier") {
				into[seg.Own(id.Text(tree.Src), tree.Src)] = true
			}
		}
	}
	// A parameter is the function's own name, whatever the module binds to
	// it: `def train(model, loader)` reads the caller's model, not the
	// script's `model = ...` below it. Its value is unknown here.
	for i, p := range b.params {
		if !paramKept(i) {
			ix.scopeOf(p.fn).params = p.names
		}
	}
	var attributes []namedNode // class attributes, see classAttributes
	for i := range ix.bindings {
		bd := &ix.bindings[i]
		if bd.class != "" {
			attributes = append(attributes, namedNode{classAttribute(bd.class, bd.name), bd.value})
		}
		if !bd.target.Is("identifier") || bindingKept(i) {
			continue
		}
		if owner := ix.owner(bd.target, bd.name); owner != nil {
			bd.scope = ix.scopeOf(owner)
			bd.scope.assigned = append(bd.scope.assigned, namedNode{bd.name, bd.value})
		}
	}
	for _, s := range ix.scopes {
		if s.assigned != nil {
			s.names, s.assigned = newNodesByName(s.assigned), nil
		}
	}
	for _, k := range b.keptRuns {
		b.takeOverScopes(k)
	}
	if len(attributes) > 0 {
		ix.classAttributes = newNodesByName(attributes)
	}
}

// scopeOf returns fn's scope, made when it has none yet: an id of its
// own, unique across versions (see localScope).
func (ix *segmentIndex) scopeOf(fn *pyast.Node) *localScope {
	s := ix.scopes[fn]
	if s == nil {
		if ix.scopes == nil {
			ix.scopes = map[*pyast.Node]*localScope{}
		}
		s = &localScope{id: strconv.FormatUint(ix.serial, 10) + "." + strconv.Itoa(len(ix.scopes))}
		ix.scopes[fn] = s
	}
	return s
}

// AssignedPairs returns the targets an assignment `left = right` binds,
// each with the value it is bound to: a plain target (a name, an
// attribute, a subscript) the whole right side; the targets of a tuple
// the values its right side lists, one for each by position (`a, b = x,
// y`, `(a, b) = [x, y]`). None for a tuple whose values cannot be paired
// so: a count that differs or a starred value (`a, b = *xs`), or one value
// nobody here knows the parts of (`a, b = f()`). A starred target with as
// many values takes exactly one of them, so the others still pair.
func AssignedPairs(left, right *pyast.Node) (targets, values []*pyast.Node) {
	if !left.Is("pattern_list", "tuple_pattern", "list_pattern") {
		return []*pyast.Node{left}, []*pyast.Node{right}
	}
	if !right.Is("expression_list", "tuple", "list") {
		return nil, nil
	}
	targets, values = left.NamedChildren(), right.NamedChildren()
	if len(targets) != len(values) {
		return nil, nil
	}
	for i := range targets {
		if targets[i].Is("comment") || values[i].Is("list_splat", "comment") {
			return nil, nil
		}
	}
	return targets, values
}

// classAttribute is the name classAttributes keeps a class's chain under.
func classAttribute(class, chain string) string { return class + "\x00" + chain }

// owner returns what a name assigned at target is local to: the function
// holding target, or the one a nonlocal declaration leads out to; nil
// where it is declared global. Outside any function, the syntax error
// holding target, if any (see brokenStatement).
func (ix *segmentIndex) owner(target *pyast.Node, name string) *pyast.Node {
	fn := EnclosingFunction(target)
	if fn == nil {
		return brokenStatement(target)
	}
	for ; fn != nil; fn = EnclosingFunction(fn) {
		s := ix.scopes[fn]
		switch {
		case s == nil || !s.global[name] && !s.nonlocal[name]:
			return fn
		case s.global[name]:
			return nil
		}
	}
	return nil
}

// isMention reports whether n, an identifier or attribute chain, is a
// mention of its name for the segment index (see segmentIndex.mentions).
// A function's own name is no use of it: a method edited in one class is
// not used by every class defining one so named. Nor is a method called
// on super(), which never resolves to a method of the file (see
// resolveCall): every class's super().__init__() would use every
// __init__ edited.
func isMention(n *pyast.Node, src []byte) bool {
	return !(n.Field() == "name" && n.Parent().Is("function_definition")) && !calledOnSuper(n, src)
}

// calledOnSuper reports whether n is the method name of super().name.
func calledOnSuper(n *pyast.Node, src []byte) bool {
	if n.Field() != "attribute" || !n.Parent().Is("attribute") {
		return false
	}
	obj := n.Parent().Child("object")
	return obj.Is("call") && obj.Child("function").Is("identifier") && obj.Child("function").Text(src) == "super"
}

// attributeClass returns the name of the class whose attribute the chain
// n is: a chain on self or cls (self.device, self.encoder.weight) in a
// class's methods. "" otherwise. As in Python, such an attribute is the
// instance's, and an instance of one class does not have another's
// attributes: only the classes it derives from, or that derive from it,
// share them (see File.classFamily).
func attributeClass(n *pyast.Node, src []byte) string {
	if n.Kind() != "attribute" {
		return ""
	}
	return chainClass(n.Text(src), n, src)
}

// chainClass returns the name of the class whose attribute chain is, seen
// at node at: a chain on self or cls in one of its methods, or "".
func chainClass(chain string, at *pyast.Node, src []byte) string {
	if !isSelfChain(chain) {
		return ""
	}
	if cd := at.Ancestor("class_definition"); cd != nil {
		return selfChainClass(chain, className(cd, src))
	}
	return ""
}

// className returns the name of a class definition, or "" for none.
func className(cd *pyast.Node, src []byte) string {
	if name := cd.Child("name"); name != nil {
		return name.Text(src)
	}
	return ""
}

// isSelfChain reports whether an attribute chain is on self or cls.
func isSelfChain(chain string) bool {
	return strings.HasPrefix(chain, "self.") || strings.HasPrefix(chain, "cls.")
}

// selfChainClass is chainClass given the name of the innermost class
// around the chain ("" for none or a class without a name).
func selfChainClass(chain, class string) string {
	if !isSelfChain(chain) {
		return ""
	}
	return class
}

// attributeKey is the key of answers about an attribute chain of a class's
// (see attributeClass): the chain and the class, or for a mention the chain
// and the class it is in. Never a name's text, never a local key.
func attributeKey(chain, class string) string {
	if class == "" {
		return chain
	}
	return chain + "\x01" + class
}

// brokenStatement returns the outermost syntax error holding n, or nil.
// What is assigned in module-level code that does not parse is that
// code's own: typing a function, the parser often reads its body as
// module-level statements until its header is whole again, and such names
// would otherwise be the module's, changing the answers about every
// function that reads a name so named on those keystrokes.
func brokenStatement(n *pyast.Node) *pyast.Node {
	var outer *pyast.Node
	for p := n.Parent(); p != nil; p = p.Parent() {
		if p.Kind() == "ERROR" {
			outer = p
		}
	}
	return outer
}

// newClass builds a class's description; its strings are copies (see
// binding).
func newClass(n *pyast.Node, text func(*pyast.Node) string) *Class {
	c := &Class{Name: text(n.Child("name")), Node: n, Methods: map[string]*pyast.Node{}}
	if supers := n.Child("superclasses"); supers != nil {
		for _, b := range supers.NamedChildren() {
			if b.Kind() != "keyword_argument" {
				c.Bases = append(c.Bases, b)
			}
		}
	}
	if body := n.Child("body"); body != nil {
		for s := range body.Children() {
			if s.Kind() == "decorated_definition" {
				s = s.Child("definition")
			}
			if s.Is("function_definition") {
				name := text(s.Child("name"))
				c.Methods[name] = s
			}
		}
	}
	return c
}

// importFacts returns what the segment holds that only the imports tell:
// its DataLoader constructions and set_grad_enabled statements.
func (ix *segmentIndex) importFacts(f *File) *importFacts {
	imports, _, _ := strings.Cut(f.structure, "\x00")
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.facts != nil && ix.facts.imports == imports {
		return ix.facts
	}
	facts := &importFacts{imports: imports}
	// The units taken over have the facts they had, for the same imports:
	// those calls need no look.
	var taken keptCursor
	var had *importFacts // the last version's, for the same imports
	if t := ix.takenFrom; t != nil && t.prev.facts != nil && t.prev.facts.imports == imports {
		taken, had = keptCursor{runs: t.runs, list: callsList}, t.prev.facts
	}
	for i, c := range ix.calls {
		if k, ok := taken.at(i); ok {
			if int(k.runs[callsList].from) == i { // the run's first call: its facts, once
				facts.dataLoaders = append(facts.dataLoaders, k.movedIn(had.dataLoaders)...)
				facts.gradSwitches = append(facts.gradSwitches, k.movedIn(had.gradSwitches)...)
			}
			continue
		}
		if !f.mayCall(c, "DataLoader", "set_grad_enabled") {
			continue
		}
		switch f.Callee(c) {
		case "torch.utils.data.DataLoader":
			facts.dataLoaders = append(facts.dataLoaders, c)
		case "torch.set_grad_enabled", "torch.autograd.set_grad_enabled":
			if c.Parent().Is("expression_statement") {
				facts.gradSwitches = append(facts.gradSwitches, c)
			}
		}
	}
	ix.facts = facts
	return facts
}

// callIndex fills the segment's calls by name and calls in loops once.
func (ix *segmentIndex) callIndex(f *File) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.byName != nil {
		return
	}
	named := make([]namedNode, 0, len(ix.calls))
	var namedAt []int32 // with units: named's places in calls
	// The calls of the units taken over keep their loops, moved: an
	// ancestor walk a call otherwise; and their names.
	var taken keptCursor
	var prev *segmentIndex                                      // the last version's, whose loops they were
	if t := ix.takenFrom; t != nil && t.prev.callLoops != nil { // nil: the last version never asked
		taken, prev = keptCursor{runs: t.runs, list: callsList}, t.prev
	}
	ix.takenFrom = nil
	if ix.units != nil {
		ix.callLoops = make([]*pyast.Node, 0, len(ix.calls))
		namedAt = make([]int32, 0, len(ix.calls))
	}
	for i, c := range ix.calls {
		k, isTaken := taken.at(i)
		if !isTaken || prev.callsByNameAt == nil {
			if name := f.LastName(c.Child("function")); name != "" {
				named = append(named, namedNode{name, c})
				if namedAt != nil {
					namedAt = append(namedAt, int32(i))
				}
			}
		}
		var loop *pyast.Node
		if isTaken {
			was := prev.callLoops[int(prev.units.parts[k.old].runs[callsList].from)+i-int(k.runs[callsList].from)]
			// A loop of the class's own body around the method is not
			// the method's: found again.
			if loop = k.mover.Move(was); loop == nil && was != nil {
				loop = innermostLoop(c)
			}
		} else {
			loop = innermostLoop(c)
		}
		if loop != nil {
			ix.loopCalls = append(ix.loopCalls, LoopCall{Call: c, Loop: loop})
		}
		if ix.units != nil {
			ix.callLoops = append(ix.callLoops, loop)
		}
	}
	if ix.units == nil {
		byName := newNodesByName(named)
		ix.byName = &byName
		return
	}
	byName, at := groupByName(named, namedAt)
	if prev != nil && prev.callsByNameAt != nil {
		byName, at = ix.takeOverCallsByName(prev, taken.runs, byName, at)
	}
	ix.byName, ix.callsByNameAt = &byName, at
}

// takeOverCallsByName returns the index's calls by name (and their places
// in its calls), those of the units taken over from prev, whose names are
// as they were, merged with fresh, the others' (at: their places). In a
// class of thousands of lines, the last name of every call, and grouping
// them by it, was a twentieth of a keystroke.
func (ix *segmentIndex) takeOverCallsByName(prev *segmentIndex, runs []keptRun, fresh nodesByName, freshAt []int32) (nodesByName, []int32) {
	// Where each of prev's calls is now; -1: not taken over.
	now := make([]int32, len(prev.calls))
	for i := range now {
		now[i] = -1
	}
	for _, k := range runs {
		was := prev.units.parts[k.old].runs[callsList].from
		for i := k.runs[callsList].from; i < k.runs[callsList].to; i++ {
			now[was+i-k.runs[callsList].from] = i
		}
	}
	old := prev.byName
	by := nodesByName{nodes: make([]*pyast.Node, 0, len(prev.callsByNameAt)+len(fresh.nodes))}
	at := make([]int32, 0, cap(by.nodes))
	var names strings.Builder
	// Both lists of groups are by name, each group's calls in order.
	for g, h := 0, 0; g < len(old.groups) || h < len(fresh.groups); {
		var name string
		var was, added []int32
		switch c := compareGroups(old, g, &fresh, h); {
		case c < 0:
			name, was = old.names[old.groups[g].nameFrom:old.groups[g].nameTo], prev.callsByNameAt[old.groups[g].from:old.groups[g].to]
			g++
		case c > 0:
			name, added = fresh.names[fresh.groups[h].nameFrom:fresh.groups[h].nameTo], freshAt[fresh.groups[h].from:fresh.groups[h].to]
			h++
		default:
			name, was, added = old.names[old.groups[g].nameFrom:old.groups[g].nameTo], prev.callsByNameAt[old.groups[g].from:old.groups[g].to], freshAt[fresh.groups[h].from:fresh.groups[h].to]
			g, h = g+1, h+1
		}
		from := int32(len(by.nodes))
		for len(was) > 0 || len(added) > 0 {
			var i int32
			switch {
			case len(was) > 0 && now[was[0]] < 0:
				was = was[1:]
				continue
			case len(added) == 0 || len(was) > 0 && now[was[0]] < added[0]:
				i, was = now[was[0]], was[1:]
			default:
				i, added = added[0], added[1:]
			}
			by.nodes, at = append(by.nodes, ix.calls[i]), append(at, i)
		}
		if to := int32(len(by.nodes)); to > from {
			nameFrom := int32(names.Len())
			names.WriteString(name)
			by.groups = append(by.groups, nameGroup{nameFrom: nameFrom, nameTo: int32(names.Len()), from: from, to: to})
		}
	}
	by.names = names.String()
	return by, at
}

// compareGroups compares the names of a's group g and b's group h; a
// missing group comes after every other.
func compareGroups(a *nodesByName, g int, b *nodesByName, h int) int {
	switch {
	case g >= len(a.groups):
		return 1
	case h >= len(b.groups):
		return -1
	}
	return strings.Compare(a.names[a.groups[g].nameFrom:a.groups[g].nameTo], b.names[b.groups[h].nameFrom:b.groups[h].nameTo])
}

// nodesByName is nodes grouped by a name (calls by the last name of what
// they call, a scope's values by the name they are assigned to), in a few
// flat slices rather than a map of a slice and a string a name: a
// 50,000-line file has about 5,000 segments and 80,000 names called, and
// every object a segment keeps is one more for each collection to mark
// (the calls' were 40% of the objects of a buffer, and a collection's mark
// took a core for 15-40 ms while typing). The zero value holds nothing.
type nodesByName struct {
	names  string      // the names, one after another: a copy (see binding)
	groups []nameGroup // one a name, by name
	nodes  []*pyast.Node
}

// nameGroup is one name's nodes: names[nameFrom:nameTo] and
// nodes[from:to], in source order.
type nameGroup struct {
	nameFrom, nameTo, from, to int32
}

// newNodesByName groups named (in source order) by name; named may be
// reordered. A large segment (a class of thousands of lines: one call
// every few words) groups its names through a map and orders the groups,
// not the nodes: a stable sort of every call by name was a sixth of an
// edit's CPU in such a class.
func newNodesByName(named []namedNode) nodesByName {
	by, _ := groupByName(named, nil)
	return by
}

// groupByName is newNodesByName that also returns payload (a number for
// each of named) in the order of the grouped nodes.
func groupByName(named []namedNode, payload []int32) (nodesByName, []int32) {
	if len(named) <= smallNameSort && payload == nil {
		return groupSortedNames(named), nil
	}
	type group struct {
		name  string
		count int32
	}
	groupOf := make(map[string]int32, len(named)/4)
	var groups []group
	ofNode := make([]int32, len(named))
	for i, c := range named {
		g, seen := groupOf[c.name]
		if !seen {
			g = int32(len(groups))
			groupOf[c.name] = g
			groups = append(groups, group{name: c.name})
		}
		groups[g].count++
		ofNode[i] = g
	}
	order := make([]int32, len(groups))
	for g := range order {
		order[g] = int32(g)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(groups[a].name, groups[b].name) })
	by := nodesByName{nodes: make([]*pyast.Node, len(named)), groups: make([]nameGroup, 0, len(groups))}
	next := make([]int32, len(groups)) // where each group's next node goes
	var names strings.Builder
	at := int32(0)
	for _, g := range order {
		from := int32(names.Len())
		names.WriteString(groups[g].name)
		by.groups = append(by.groups, nameGroup{nameFrom: from, nameTo: int32(names.Len()), from: at, to: at + groups[g].count})
		next[g] = at
		at += groups[g].count
	}
	var out []int32
	if payload != nil {
		out = make([]int32, len(named))
	}
	for i, c := range named {
		by.nodes[next[ofNode[i]]] = c.node
		if payload != nil {
			out[next[ofNode[i]]] = payload[i]
		}
		next[ofNode[i]]++
	}
	by.names = names.String()
	return by, out
}

// smallNameSort is the most names newNodesByName sorts in place: an
// insertion sort of a few beats a map.
const smallNameSort = 24

// groupSortedNames is newNodesByName by a stable sort of named.
func groupSortedNames(named []namedNode) nodesByName {
	slices.SortStableFunc(named, func(a, b namedNode) int { return strings.Compare(a.name, b.name) })
	groups := 0
	for i := range named {
		if i == 0 || named[i].name != named[i-1].name {
			groups++
		}
	}
	by := nodesByName{nodes: make([]*pyast.Node, len(named)), groups: make([]nameGroup, 0, groups)}
	var names strings.Builder
	for i, c := range named {
		by.nodes[i] = c.node
		if i == 0 || c.name != named[i-1].name {
			at := int32(names.Len())
			names.WriteString(c.name)
			by.groups = append(by.groups, nameGroup{nameFrom: at, nameTo: int32(names.Len()), from: int32(i)})
		}
		by.groups[len(by.groups)-1].to = int32(i + 1)
	}
	by.names = names.String()
	return by
}

// named returns the nodes of name, in source order; the slice must not be
// changed.
func (by *nodesByName) named(name string) []*pyast.Node {
	if len(by.groups) <= 8 {
		// A function's few names: comparing each for equality (lengths
		// first) beats a binary search's three-way comparisons.
		for _, g := range by.groups {
			if by.names[g.nameFrom:g.nameTo] == name {
				return by.nodes[g.from:g.to:g.to]
			}
		}
		return nil
	}
	i, found := slices.BinarySearchFunc(by.groups, name, func(g nameGroup, name string) int {
		return strings.Compare(by.names[g.nameFrom:g.nameTo], name)
	})
	if !found {
		return nil
	}
	g := by.groups[i]
	return by.nodes[g.from:g.to:g.to]
}

// all yields each name and its nodes, by name; the slices must not be
// changed.
func (by *nodesByName) all() iter.Seq2[string, []*pyast.Node] {
	return func(yield func(string, []*pyast.Node) bool) {
		for _, g := range by.groups {
			if !yield(by.names[g.nameFrom:g.nameTo], by.nodes[g.from:g.to:g.to]) {
				return
			}
		}
	}
}

// bloomHasAny reports whether the segment's bloom has any of the bits of
// bits (a bloom of several hashes).
func (ix *segmentIndex) bloomHasAny(bits *[8]uint64) bool {
	b := &ix.bloom
	return b[0]&bits[0]|b[1]&bits[1]|b[2]&bits[2]|b[3]&bits[3]|b[4]&bits[4]|b[5]&bits[5]|b[6]&bits[6]|b[7]&bits[7] != 0
}

// mentionsHash reports whether the segment mentions a name of hash h.
func (ix *segmentIndex) mentionsHash(h uint64) bool {
	if ix.bloom[h>>6&7]&(1<<(h&63)) == 0 {
		return false
	}
	_, found := slices.BinarySearch(ix.mentions, h)
	return found
}

// onlyLocal reports whether every mention of the name of hash h in the
// segment is a function's own name (see localOnly).
func (ix *segmentIndex) onlyLocal(h uint64) bool {
	_, found := slices.BinarySearch(ix.localOnly, h)
	return found
}

// appendOwned appends v to m[key], keyed by a copy of key: key is often a
// view of a version's text, and answers kept across versions must not keep
// that text alive. The copy is made on every call, not only for a new key:
// assigning to a string key already in a Go map stores the assignment's
// key in place of the one the map held, so copying only the first time
// still left the map holding the last view (each such view kept a whole
// laid-out text, 4.5 MB at 50,000 lines, alive as long as its segment).
func appendOwned[V any](m map[string][]V, key string, v V) {
	m[strings.Clone(key)] = append(m[key], v)
}

// CallsNamed returns, in source order, the calls whose callee's last name
// (`append` in history.append) is one of names, or that call a name
// imported under another one (`from torch.cuda import empty_cache as
// free`): much fewer than Calls.
func (f *File) CallsNamed(names ...string) []*pyast.Node { return f.CallsNamedIn(nil, names...) }

// CallsNamedIn is CallsNamed within the segments of focus.
func (f *File) CallsNamedIn(focus Focus, names ...string) []*pyast.Node {
	for local, q := range f.Imports {
		if slices.Contains(names, q[strings.LastIndexByte(q, '.')+1:]) && !slices.Contains(names, local) {
			names = append(names[:len(names):len(names)], local)
		}
	}
	var out []*pyast.Node
	for i, ix := range f.indexes {
		if !focus.Has(f.Tree.Segments[i]) {
			continue
		}
		ix.callIndex(f)
		n := len(out)
		for _, name := range names {
			out = append(out, ix.byName.named(name)...)
		}
		if len(names) > 1 {
			part := out[n:]
			sort.Slice(part, func(i, j int) bool { return part[i].Start() < part[j].Start() })
		}
	}
	return out
}

// innermostLoop returns the innermost for or while statement or
// comprehension of n's own function whose body holds n, or nil.
func innermostLoop(n *pyast.Node) *pyast.Node {
	for p := n.Parent(); p != nil && !p.Is("function_definition", "lambda", "class_definition"); p = p.Parent() {
		switch p.Kind() {
		case "for_statement", "while_statement", "list_comprehension", "generator_expression", "set_comprehension", "dictionary_comprehension":
			if p.Child("body").Contains(n) {
				return p
			}
		}
	}
	return nil
}

// LoopCall is a call in the body of a loop or a comprehension of its own
// function, and the innermost such loop.
type LoopCall struct {
	Call, Loop *pyast.Node
}

// EachLoopCall calls do for every call in a loop, in source order, with
// its innermost loop; the pairs are indexed per segment once.
func (f *File) EachLoopCall(do func(LoopCall)) { f.EachLoopCallIn(nil, do) }

// EachLoopCallIn is EachLoopCall within the segments of focus.
func (f *File) EachLoopCallIn(focus Focus, do func(LoopCall)) {
	for i, ix := range f.indexes {
		if !focus.Has(f.Tree.Segments[i]) {
			continue
		}
		ix.callIndex(f)
		for _, lc := range ix.loopCalls {
			do(lc)
		}
	}
}

// AssignmentsOf returns, in source order, the assignments within the
// segments of focus (all of them for a nil focus).
func (f *File) AssignmentsOf(focus Focus) []*pyast.Node {
	if focus == nil {
		return f.Assignments()
	}
	var out []*pyast.Node
	for i, ix := range f.indexes {
		if focus.Has(f.Tree.Segments[i]) {
			out = append(out, ix.assignments...)
		}
	}
	return out
}

// callsByName returns the calls whose callee's last name is name, from an
// index of the whole file built on first use. It is asked about the file's
// own functions only, a few hundred names of thousands: the next version
// carries only the names asked (see carryOver), and a name no version
// asked before is looked up in every segment's index.
func (f *File) callsByName(name string) []*pyast.Node {
	f.memos.Lock()
	defer f.memos.Unlock()
	if calls, ok := f.memos.callsOf[name]; ok {
		return calls
	}
	var calls []*pyast.Node
	if f.memos.callsOf == nil || f.memos.allCalls != nil {
		// Nothing carried: the whole index, once.
		if f.memos.allCalls == nil {
			f.memos.allCalls = map[string][]*pyast.Node{}
			for _, ix := range f.indexes {
				ix.callIndex(f)
				for n, calls := range ix.byName.all() {
					f.memos.allCalls[n] = append(f.memos.allCalls[n], calls...)
				}
			}
			f.memos.callsOf = map[string][]*pyast.Node{}
		}
		calls = f.memos.allCalls[name]
	} else {
		for _, ix := range f.indexes {
			ix.callIndex(f)
			calls = append(calls, ix.byName.named(name)...)
		}
	}
	f.memos.callsOf[strings.Clone(name)] = calls // kept: name may view this version's text
	return calls
}

// BindingsOf returns the right-hand sides assigned to the identifier or
// attribute chain e as seen where e is: a function's own name's values
// in that function (see localScope), otherwise the module's.
func (f *File) BindingsOf(e *pyast.Node) []*pyast.Node {
	if s := f.localScopeOf(e); s != nil {
		return s.names.named(f.Text(e))
	}
	return f.AttributeBindings(f.Text(e), e)
}

// AttributeBindings returns the values assigned to the name or attribute
// chain as seen at node at: for a chain on self or cls in a class's
// methods, what the methods of the classes of its family assign to it (see
// classFamily); otherwise the module's (see Bindings).
func (f *File) AttributeBindings(chain string, at *pyast.Node) []*pyast.Node {
	class := chainClass(chain, at, f.Tree.Src)
	if class == "" {
		return f.Bindings(chain)
	}
	members := f.classFamily(class)
	if len(members) == 1 {
		return f.classAttributes(members[0], chain)
	}
	var out []*pyast.Node
	for _, c := range members {
		out = append(out, f.classAttributes(c, chain)...)
	}
	return out
}

// classAttributes returns what the methods of the class named c assign to
// the chain.
func (f *File) classAttributes(c, chain string) []*pyast.Node {
	class := f.Classes[c]
	if class == nil {
		return nil
	}
	if ix := f.indexOf(class.Node); ix != nil {
		return ix.classAttributes.named(classAttribute(c, chain))
	}
	return nil
}

// bindingKey is the key of the answers that a binding's value may change.
func (f *File) bindingKey(b binding) string {
	if b.class == "" {
		return b.name
	}
	return f.familyKey(b.name, b.class)
}

// familyKey is the key of the answers about a chain of class's attributes:
// the same for every class of its family (see classFamily).
func (f *File) familyKey(chain, class string) string {
	return attributeKey(chain, f.classFamily(class)[0])
}

// NameKey is what answers about the identifier or attribute chain e are
// remembered by: its text, scoped for a function's own name.
func (f *File) NameKey(e *pyast.Node) string {
	if s := f.localScopeOf(e); s != nil {
		return s.key(f.Text(e))
	}
	if c := attributeClass(e, f.Tree.Src); c != "" {
		return f.familyKey(f.Text(e), c)
	}
	return f.Text(e)
}

// classFamily returns the classes of the file that share the attributes of
// the class named c: c and, through the bases the file's classes name, the
// classes it derives from and those deriving from it, transitively; in
// source order, so that the first names the family. A class the file does
// not define is a family of its own.
func (f *File) classFamily(c string) []string {
	f.families.Do(func() {
		defer f.families.built.Store(&f.families.m)
		if carried := f.carried.families; carried != nil {
			f.families.m, f.carried.families = *carried, nil
			return
		}
		parent := map[string]string{}
		var find func(string) string
		find = func(c string) string {
			for parent[c] != "" && parent[c] != c {
				c = parent[c]
			}
			return c
		}
		for name, class := range f.Classes {
			for _, b := range class.Bases {
				if b.Is("identifier") && f.Classes[f.Text(b)] != nil {
					if x, y := find(name), find(f.Text(b)); x != y {
						parent[x] = y
					}
				}
			}
		}
		order := slices.SortedFunc(maps.Keys(f.Classes), func(a, b string) int { return f.Classes[a].Node.Start() - f.Classes[b].Node.Start() })
		f.families.m = map[string][]string{}
		for _, name := range order {
			root := find(name)
			f.families.m[root] = append(f.families.m[root], name)
		}
		for _, name := range order {
			f.families.m[name] = f.families.m[find(name)]
		}
	})
	if members := f.families.m[c]; members != nil {
		return members
	}
	return []string{c}
}

// localScopeOf returns the scope of the function whose own name the
// identifier e is: the innermost function holding e that assigns the
// name, unless a function on the way declares it global; outside any
// function, the syntax error holding e if it assigns the name (see
// brokenStatement). Nil for the module's names and for attribute chains.
func (f *File) localScopeOf(e *pyast.Node) *localScope {
	if !e.Is("identifier") {
		return nil
	}
	fn := EnclosingFunction(e)
	if fn == nil {
		fn = brokenStatement(e)
	}
	if fn == nil {
		return nil
	}
	ix := f.indexOf(fn)
	if ix == nil {
		return nil
	}
	return ix.ownScope(fn, f.Text(e))
}

// LocalName reports whether the identifier e names a function's own
// variable, a parameter or a name it assigns (or one of a function around
// it): no binding of the module's reaches it.
func (f *File) LocalName(e *pyast.Node) bool { return f.localScopeOf(e) != nil }

// assignedLocally reports whether the identifier e is assigned in the
// function whose own name it is (not only a parameter of it).
func (f *File) assignedLocally(e *pyast.Node) bool {
	s := f.localScopeOf(e)
	return s != nil && s.names.named(f.Text(e)) != nil
}

// Bindings returns the right-hand sides assigned to name (an identifier or
// a dotted attribute such as self.device) in the module's scope: at
// module level, in class bodies, and in functions that declare it global.
// (Names of functions' own: see BindingsOf.)
func (f *File) Bindings(name string) []*pyast.Node {
	f.bindings.Do(func() {
		f.bindings.m = f.bindingsMap()
		f.bindings.built.Store(&f.bindings.m)
	})
	return f.bindings.m[name]
}

// bindingsMap maps every name to the values bound to it, in source order,
// from the previous version's map when it made one (see byName).
func (f *File) bindingsMap() map[string][]*pyast.Node {
	var had map[string][]*pyast.Node
	if f.carried.bindings != nil {
		had = *f.carried.bindings
	}
	m := f.byName(had, f.carried.fresh, f.carried.removed, func(ix *segmentIndex, add func(string, *pyast.Node)) {
		for _, b := range ix.bindings {
			if b.scope == nil && b.class == "" {
				add(b.name, b.value)
			}
		}
	})
	f.carried.bindings, f.carried.removed = nil, nil // hold no older version (gone is kept for unchangedFor)
	return m
}

// segmentOf returns the segment holding n, or nil.
func (f *File) segmentOf(n *pyast.Node) *pyast.Segment { return f.SegmentAt(n.Start()) }

// SegmentAt returns the segment holding offset off of Src, or nil.
func (f *File) SegmentAt(off int) *pyast.Segment {
	i := f.Tree.SegmentNumber(off)
	if i < 0 {
		return nil
	}
	return f.Tree.Segments[i]
}

// carryOver takes the answers prev remembered that still hold: with the
// same imports and class headers, those about names whose bindings did not
// change, and the taint of functions in shared segments that only asked
// about such names.
//
// It runs on every version, over every answer prev remembered (at 50,000
// lines, thousands), so each answer is judged without a map lookup where
// it can be: its segment against the few segments removed, what it asked
// against what changed by their signatures first (see askedSignature).
func (f *File) carryOver(prev *File, fresh, removed []*segmentIndex, removedSegments []*pyast.Segment) {
	// A bracket left open in a large class takes in every method after
	// it: judging them all in both versions (their summaries) cost more
	// than analysing the file afresh, 30-50 ms more a key in tensordict's
	// 10,000-line class.
	if prev == nil || prev.structure != f.structure || len(f.carried.methodsCameOrWent) > fewMethodsCameOrWent {
		return
	}
	// The indexes of the segments only one version has: a keystroke's
	// few, where the versions have thousands.
	only := [2][]*segmentIndex{removed, fresh}
	f.carried.ok = true
	f.carried.families = prev.families.built.Load()
	// The module's names whose bindings may differ: those bound to other
	// values in the segments only one of the versions has. (The answers
	// about a name do not depend on the order of its bindings.) Functions'
	// own names are left out: only answers in their own segment read them
	// (a summary passes on what it read of the module alone), and those
	// answers are not carried, the segment being new; the answers
	// remembered by their keys go with their segments (gone, keep).
	type pair struct{ name, value string }
	balance := map[pair]int{}
	for _, ix := range only[1] {
		for _, b := range ix.bindings {
			if b.scope == nil {
				balance[pair{f.bindingKey(b), f.Text(b.value)}]++
			}
		}
	}
	// The serials of the segment indexes gone with prev, as local keys
	// write them: their answers are dropped (see staleSerials), so none
	// pile up.
	var gone map[string]bool
	for _, ix := range only[0] {
		for _, b := range ix.bindings {
			if b.scope == nil {
				balance[pair{prev.bindingKey(b), prev.Text(b.value)}]--
			}
		}
		if ix.scopes != nil {
			if gone == nil {
				gone = map[string]bool{}
			}
			gone[strconv.FormatUint(ix.serial, 10)] = true
		}
	}
	changed := map[string]bool{}
	for b, n := range balance {
		if n != 0 {
			changed[b.name] = true
		}
	}
	f.carried.changed = changed // filled in below
	// The index of calls by name first: judging the changed calls below
	// asks it. Only the names asked of it are carried: the whole index of
	// a 50,000-line file holds thousands of names, and a keystroke in a
	// function with `.to(...)` calls copied the thousands of calls to
	// `to` twice (copied under the lock: prev adds names as it is asked).
	prev.memos.Lock()
	callsOf := maps.Clone(prev.memos.callsOf)
	prev.memos.Unlock()
	if callsOf != nil {
		f.memos.callsOf = carryCallIndex(callsOf, prev, f, only)
	}
	// Functions defined in the segments only one version has: the answers
	// that used their summaries are stale unless the summary is the same.
	// Whether a function runs under no_grad depends on its calls: when the
	// calls to it, under no_grad or not, feeding training or not, right
	// after an eval() or not (see FeedsTraining, CalledAfterEvalWithGrad),
	// differ, answers that asked are stale.
	j := &callJudgement{prev: prev, f: f, defs: map[string][2][]*pyast.Node{}, calls: map[string]int{}}
	// An edit inside one method of a class leaves its other methods
	// alone (see pairUnchangedUnits): those are judged only if the edited
	// one shows a change they may read. A forward come or gone (a bracket
	// left open before it takes it in) makes them a model's own code or
	// not (see inModuleCode), which no mention tells: all are judged.
	var units *unchangedUnits
	if pairUnits && len(removedSegments) == 1 && len(f.carried.fresh) == 1 && sameTexts(f, f.gradSwitches, prev, prev.gradSwitches) &&
		!f.carried.methodsCameOrWent["forward"] {
		switch pairs := f.carried.pairs; {
		case pairs != nil:
			// Split below: the index's pairs stay whole.
			units = &unchangedUnits{old: slices.Clone(pairs.old), cur: slices.Clone(pairs.cur), f: f, sought: map[string]bool{}, segment: pairs.segment}
		case !f.carried.paired:
			units = pairUnchangedUnits(prev, removedSegments[0], f, f.Tree.Segments[f.carried.fresh[0]])
		}
		units = units.withoutClassReaders().withoutEnclosingReaders(only[0][0], only[1][0])
		// An edit that changed what a name or an attribute is bound to
		// (`param.data = ...` typed over) leaves the other methods
		// paired; judging every method took 16-21 ms of such a keystroke
		// in a class of thousands of lines. Those that mention it are
		// judged with the edited one, a guard no case has shown needed:
		// calls are judged by the names of the file's functions, which no
		// binding changes, and answers that asked about the name are
		// dropped anyway.
		if len(changed) > 0 && units != nil {
			units.split(lastNamesOf(changed), nil)
		}
	}
	gather := func(in *unchangedUnits, inside bool) {
		for side := range only {
			for _, ix := range only[side] {
				j.judge(side, ix, func(n *pyast.Node) bool { return in.skips(side, n) == inside })
			}
		}
	}
	gather(units, false)
	// A function left alone does as it did unless it mentions one that
	// does otherwise now or came or went, or is one whose calls changed:
	// those are judged, then those reached through what they change, and
	// so on; a module-level mode call come or gone judges them all.
	for units != nil {
		mentioned, called, other := j.changedDefinitions()
		if other {
			gather(units, true)
			break
		}
		reached := units.split(mentioned, called)
		if reached == nil {
			break
		}
		gather(reached, true)
	}
	f.carried.judged = j.judged
	if units != nil {
		for _, n := range units.cur {
			if EnclosingFunction(n) != nil {
				f.carried.strays++
			}
		}
	}
	for name := range j.callersChanged() {
		changed["calls:"+name] = true
	}
	if j.moduleModeCall && !f.sameModeAfterEdit(prev, removedSegments) {
		changed["calls:"] = true // every module-level call after it may differ
	}
	var cameOrWent map[string]bool
	for name, ds := range j.defs {
		if len(ds[0]) != len(ds[1]) {
			// A function of that name came or went: a call of the name is
			// a call of the function, or of what the name is bound to.
			changed[name] = true
			if cameOrWent == nil {
				cameOrWent = map[string]bool{}
			}
			cameOrWent[name] = true
		}
		if j.assumedChanged(name) || j.differ(name) {
			changed["def:"+name] = true
		}
	}
	prev.memos.Lock()
	defer prev.memos.Unlock()
	// A name bound to a call of a function that came, went, was bound
	// anew or returns another kind of thing now (a builder, see
	// namesModule) may name a model where it did not, or the reverse: it
	// changed as its bindings would have. Most keystrokes change no
	// function.
	var changedFunctions map[string]bool
	for key := range changed {
		name, isDef := strings.CutPrefix(key, "def:")
		if isDef || len(f.Functions[name]) > 0 || len(prev.Functions[name]) > 0 {
			if changedFunctions == nil {
				changedFunctions = map[string]bool{}
			}
			changedFunctions[name] = true
		}
	}
	if changedFunctions != nil {
		for key, callees := range prev.memos.moduleCallees {
			if slices.ContainsFunc(callees, func(c string) bool { return changedFunctions[c] }) {
				changed[key] = true
			}
		}
	}
	// The answers remembered by the local keys of segments gone are never
	// asked for again (no later segment has their serial), so they are
	// dropped only once maxStaleSerials segments have gone: finding them
	// means testing every key, 0.15 ms a keystroke at 50,000 lines.
	staleSerials := prev.memos.staleSerials // never written once set
	if len(gone) > 0 {
		staleSerials = maps.Clone(staleSerials)
		if staleSerials == nil {
			staleSerials = make(map[string]bool, len(gone))
		}
		maps.Copy(staleSerials, gone)
	}
	purge := len(staleSerials) >= maxStaleSerials
	if !purge {
		f.memos.staleSerials = staleSerials
	}
	f.memos.module = keepAnswers(prev.memos.module, changed, purge, staleSerials, cameOrWent)
	f.memos.loss = keepAnswers(prev.memos.loss, changed, purge, staleSerials, cameOrWent)
	f.memos.moduleCallees = keepAnswers(prev.memos.moduleCallees, changed, purge, staleSerials, cameOrWent)
	changedSignature := askedSignatureOf(changed)
	stale := func(asked asked, signature askedSignature) bool {
		if len(changed) == 0 || !signature.mayShare(changedSignature) {
			return false
		}
		// Iterate the smaller set: a keystroke changes few names.
		small, large := changed, asked
		if len(asked) < len(changed) {
			small, large = asked, changed
		}
		for name := range small {
			if large[name] {
				return true
			}
		}
		return false
	}
	// Every answer's segment is f's or one of the removed: a keystroke
	// removes one or two, a paste may remove thousands.
	segmentKept := func(seg *pyast.Segment) bool {
		return seg != nil && !slices.Contains(removedSegments, seg)
	}
	if len(removedSegments) > fewRemoved {
		segmentKept = func(seg *pyast.Segment) bool { return seg != nil && f.segmentNumber(seg) >= 0 }
	}
	// The answers about the methods still paired go to their new selves
	// (see unchangedUnits.counterpart); the others of a segment gone go.
	f.memos.stepLoops = maps.Clone(prev.memos.stepLoops)
	var movedLoops []*pyast.Node // prev's, to take over
	for loop, v := range f.memos.stepLoops {
		kept := segmentKept(v.segment)
		if kept && !stale(v.asked, v.signature) {
			continue
		}
		delete(f.memos.stepLoops, loop)
		if !kept && !stale(v.asked, v.signature) {
			movedLoops = append(movedLoops, loop)
		}
	}
	for _, loop := range movedLoops {
		if cur := units.counterpart(loop); cur != nil {
			v := prev.memos.stepLoops[loop]
			f.memos.stepLoops[cur] = &stepFact{kind: v.kind, asked: v.asked, signature: v.signature, segment: units.segment}
			f.carried.translated++
		}
	}
	// Into the maps as they are: comparing summaries above may have
	// computed some of this version's already.
	f.memos.Lock()
	defer f.memos.Unlock()
	carryTaints := func(to *map[*pyast.Node]*taintFacts, from map[*pyast.Node]*taintFacts) {
		if *to == nil {
			// A copy less what does not hold: most of it does.
			*to = maps.Clone(from)
			for scope, t := range *to {
				if !segmentKept(t.segment) || stale(t.asked, t.signature) {
					delete(*to, scope)
				}
			}
			return
		}
		for scope, t := range from {
			if _, have := (*to)[scope]; !have && segmentKept(t.segment) && !stale(t.asked, t.signature) {
				(*to)[scope] = t
			}
		}
	}
	carryTaints(&f.memos.taintFacts, prev.memos.taintFacts)
	f.carried.moduleTaint = prev.memos.taintFacts[prev.Tree.Root]
	carryTaints(&f.memos.plainTaintFacts, prev.memos.plainTaintFacts)
	if f.memos.summaries == nil {
		f.memos.summaries = make(map[*pyast.Node]*Summary, len(prev.memos.summaries))
	}
	for def, s := range prev.memos.summaries {
		if _, have := f.memos.summaries[def]; have {
			continue
		}
		if stale(s.asked, s.signature) {
			continue
		}
		if segmentKept(prev.segmentOf(def)) {
			f.memos.summaries[def] = s
		} else if cur := units.counterpart(def); cur != nil {
			if _, have := f.memos.summaries[cur]; !have {
				moved := *s
				moved.Def = cur
				f.memos.summaries[cur] = &moved
				f.carried.translated++
			}
		}
	}
}

// callJudgement is what carryOver finds in the segments only one version
// has: their function definitions by name (defs[name][0] prev's, [1]
// f's), the balance of the calls of the file's functions by name and kind
// (calls, see judge), whether a module-level eval() or train() is among
// them, and how many calls and definitions it judged (for tests).
type callJudgement struct {
	prev, f        *File
	defs           map[string][2][]*pyast.Node
	calls          map[string]int
	moduleModeCall bool
	judged         int
	// verdicts and assumed remember differ's and assumedChanged's answers
	// for a name (see remembered).
	verdicts, assumed map[string]defsVerdict
	// underNoGrad remembers calledUnderNoGrad's answers.
	underNoGrad map[string]bool
}

type defsVerdict struct {
	count  int
	differ bool
}

// judge adds the function definitions of ix, a segment index of prev
// (side 0) or f (side 1), to j.defs, and counts each call of a function
// of the file by its kind (under no-grad, feeding training, after an
// eval(), or none; a method's call of its override's name only when it
// feeds training or runs after an eval()): -1 on prev's side, +1 on f's.
// Only the nodes take says are judged.
func (j *callJudgement) judge(side int, ix *segmentIndex, take func(*pyast.Node) bool) {
	v, sign := j.prev, -1
	if side == 1 {
		v, sign = j.f, 1
	}
	for _, d := range ix.definitions {
		if d.Kind() == "function_definition" && take(d) {
			j.judged++
			name := v.Text(d.Child("name"))
			ds := j.defs[name]
			ds[side] = append(ds[side], d)
			j.defs[name] = ds
		}
	}
	for _, c := range ix.calls {
		if !take(c) {
			continue
		}
		j.judged++
		name := v.LastName(c.Child("function"))
		if m := v.MethodName(c); (m == "eval" || m == "train") && Scope(c).Parent() == nil {
			// A module-level mode call decides for the module-level
			// calls after it, in other statements (see
			// CalledAfterEvalWithGrad). One in a broken statement's
			// scope (an ERROR: a function typed up to an open
			// bracket) decides for that statement alone.
			j.moduleModeCall = true
		}
		if name == "" || len(v.Functions[name]) == 0 {
			continue // not a function of this file: no summary, no callers to judge
		}
		key := name + "-"
		switch {
		case readNotForNoGrad(v, c, name):
			// `super().__init__()`: no verdict on whether a function runs
			// under no-grad reads such a call (see callsUnderNoGrad and
			// calledOnlyUnderNoGrad); whether it feeds training or runs
			// after an eval() does (FeedsTraining,
			// CalledAfterEvalWithGrad).
			switch {
			case v.resultTrains(c):
				key = name + "T"
			case v.evalModeBefore(c) && !v.InNoGrad(c):
				key = name + "e"
			default:
				continue
			}
		case v.InNoGrad(c):
			key = name + "+"
		case v.resultTrains(c):
			key = name + "t"
		case v.evalModeBefore(c):
			key = name + "e"
		}
		j.calls[key] += sign
	}
}

// callersChanged returns the names of the functions of the file whose
// calls of a kind that a verdict on them reads came or went (see judge):
// every kind but a plain call's ("-"), which only the verdict that all of
// a function's callers run under no-grad reads, and which cannot change it
// while no call of the name that verdict reads runs under no-grad in
// either version. (A method typed above an __init__ with a bracket left
// open takes the __init__'s `super().__init__()` in as a plain call of
// its own.)
func (j *callJudgement) callersChanged() map[string]bool {
	var out map[string]bool
	for key, n := range j.calls {
		if n == 0 {
			continue
		}
		name := key[:len(key)-1]
		// With as many calls under no-grad in both versions (the balance
		// of "+"), none in f means none in prev.
		if key[len(key)-1] == '-' && j.calls[name+"+"] == 0 && !j.calledUnderNoGrad(name) {
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[name] = true
	}
	return out
}

// calledUnderNoGrad reports whether a call of name in f that
// callsUnderNoGrad reads (see readNotForNoGrad) runs under no-grad;
// remembered by name.
func (j *callJudgement) calledUnderNoGrad(name string) bool {
	if v, ok := j.underNoGrad[name]; ok {
		return v
	}
	found := false
	for _, c := range j.f.callsByName(name) {
		if readNotForNoGrad(j.f, c, name) {
			continue
		}
		if j.f.InNoGrad(c) {
			found = true
			break
		}
	}
	if j.underNoGrad == nil {
		j.underNoGrad = map[string]bool{}
	}
	j.underNoGrad[name] = found
	return found
}

// readNotForNoGrad reports whether the verdict that all of a function's
// callers run under no-grad leaves out c, a call of name: a method's call
// of its override's name (see delegates), and any call of a function
// Python also runs without its name, which that verdict never judges (see
// calledOnlyUnderNoGrad). A call through an attribute is read by methods'
// verdicts alone, a bare call by other functions' (see callsOutside): a
// method typed with a bracket left open takes the `def __init__(...)`
// below in as a bare call of __init__.
func readNotForNoGrad(f *File, c *pyast.Node, name string) bool {
	method := c.Child("function").Is("attribute")
	return reachedWithoutItsName(name, method) || method && delegates(f, c, name)
}

// differ reports whether the definitions of name judged so far do
// otherwise in f than in prev: their summaries, or how they turn autograd
// off as context managers. A summary prev never computed reads as
// differing (see changedDefinitions).
func (j *callJudgement) differ(name string) bool {
	return j.remembered(&j.verdicts, name, func(ds [2][]*pyast.Node) bool {
		return !sameSummaries(j.prev, ds[0], j.f, ds[1]) || !sameGradOff(j.prev, ds[0], j.f, ds[1])
	})
}

// remembered returns the verdict on the definitions of name judged so
// far that *m remembers, or the one find gives them, remembered: split
// brings more in, and a verdict holds for as many as it was found for.
func (j *callJudgement) remembered(m *map[string]defsVerdict, name string, find func(ds [2][]*pyast.Node) bool) bool {
	ds := j.defs[name]
	if v, ok := (*m)[name]; ok && v.count == len(ds[1]) {
		return v.differ
	}
	verdict := find(ds)
	if *m == nil {
		*m = map[string]defsVerdict{}
	}
	(*m)[name] = defsVerdict{len(ds[1]), verdict}
	return verdict
}

// assumedChanged reports whether the definitions of name judged so far,
// as many in both versions, are taken to do otherwise in f without
// comparing their summaries: when the text of one changed and no
// statement of f mentions the name (a function's own name where it is
// defined, and a method called on super(), are no mentions: see
// segmentIndex.mentions). An answer reads a function of the file through
// a call or a mention of its name, so the answers that may have read
// these are those about the edited code, which are not kept anyway:
// taking them as changed drops no answer that would have held and judges
// no method more (see mentionsOrDefines), and summarising the edited
// method on every keystroke took half a millisecond in a class of 9,000
// lines. The answer follows from the definitions that changed, which
// every judgement judges, not from which others are judged: judging every
// method concludes the same. Names called without being mentioned are
// compared: forward, which a model's call runs, and the dunders, which
// syntax runs.
func (j *callJudgement) assumedChanged(name string) bool {
	return j.remembered(&j.assumed, name, func(ds [2][]*pyast.Node) bool { return j.mentionedNowhere(name, ds) })
}

// mentionedNowhere is assumedChanged's answer for name's definitions ds,
// found.
func (j *callJudgement) mentionedNowhere(name string, ds [2][]*pyast.Node) bool {
	if reachedWithoutItsName(name, true) || len(ds[1]) == 0 || len(ds[0]) != len(ds[1]) {
		return false
	}
	same := true
	for k := range ds[0] {
		same = same && j.prev.Text(ds[0][k]) == j.f.Text(ds[1][k])
	}
	if same {
		return false // what they read elsewhere may have changed: compared
	}
	h := nameHash(name)
	for _, ix := range j.f.indexes {
		if ix.mentionsHash(h) {
			return false
		}
	}
	return true
}

// changedDefinitions tells what judge found so far: the names of
// functions that do otherwise now or that came or went (mentioned), those
// whose calls of a kind a verdict reads came or went (called, see
// callersChanged), and other, whether a
// module-level mode call, which decides for every call after it, came or
// went. While other is false, the methods an edit left alone (see
// pairUnchangedUnits) that mention none of mentioned and define none of
// called do as they did: what they ask of the file is the same. A call's
// kind follows from its method's code and context and from that method's
// callers (under no-grad when they all are): a change in the calls of a
// function reaches the calls in its definitions, judged in turn, not those
// in its callers. A function that came or went changes what the calls of
// its name are, in the methods that make them, and one whose summary
// differs what its callers' summaries read.
func (j *callJudgement) changedDefinitions() (mentioned, called map[string]bool, other bool) {
	if j.moduleModeCall {
		return nil, nil, true
	}
	mentioned, called = map[string]bool{}, j.callersChanged()
	if called == nil {
		called = map[string]bool{}
	}
	for name, ds := range j.defs {
		if len(ds[0]) != len(ds[1]) {
			mentioned[name] = true
			continue
		}
		if j.assumedChanged(name) {
			continue // no method left alone mentions it: none to judge
		}
		// Summarised in both versions here, though no answer of prev may
		// have asked (the rules ask for few summaries): a summary missing
		// reads as changed, and judges every method that mentions it. What
		// prev says of a function now is what it would have said then;
		// what older versions' answers read of it was compared when it
		// last changed.
		for _, d := range ds[0] {
			j.prev.summary(d)
		}
		for _, d := range ds[1] {
			j.f.summary(d)
		}
		if j.differ(name) {
			mentioned[name] = true
		}
	}
	return mentioned, called, false
}

// askedSignature has a bit for each key of an asked set (by the key's
// hash), so that carryOver can tell most answers unchanged without looking
// up what changed in what they asked. It is taken once the answer is
// computed, when its asked set no longer grows; the zero value, taken
// from no set, tells nothing.
type askedSignature struct {
	bits  [2]uint64
	taken bool
}

// askedSeed seeds the hashes of askedSignature.
var askedSeed = maphash.MakeSeed()

// askedSignatureOf is the signature of the keys of a.
func askedSignatureOf(a map[string]bool) askedSignature {
	s := askedSignature{taken: true}
	for key := range a {
		s.add(askedHash(key))
	}
	return s
}

// askedHash is the hash of an asked key that signatures take.
func askedHash(key string) uint64 { return maphash.String(askedSeed, key) }

// add sets the bit of a key's hash.
func (s *askedSignature) add(h uint64) { s.bits[h>>6&1] |= 1 << (h & 63) }

// mayShare reports whether the sets of s and o may have a key in common:
// false only when they have none.
func (s askedSignature) mayShare(o askedSignature) bool {
	return !s.taken || !o.taken || s.bits[0]&o.bits[0] != 0 || s.bits[1]&o.bits[1] != 0
}

// asked is what a remembered answer read, so that carryOver knows when it
// goes stale: names whose bindings it looked at, "def:" functions whose
// existence or summary it used, "calls:" functions whose callers decide
// whether they run under no-grad.
type asked map[string]bool

// name records the text of an identifier or attribute chain.
func (a asked) name(f *File, n *pyast.Node) {
	if !n.Is("identifier", "attribute") {
		return
	}
	if key := f.NameKey(n); !a[key] {
		a[strings.Clone(key)] = true // a copy: see binding
	}
}

// call records what judging call reads: the callee's and the receiver's
// bindings, and the function of the file it may resolve to.
func (a asked) call(f *File, call *pyast.Node) {
	a.name(f, call.Child("function"))
	a.name(f, Receiver(call))
	if name := f.LastName(call.Child("function")); name != "" && !a["def:"+name] {
		a["def:"+strings.Clone(name)] = true
	}
}

// summary records that the answer used s, and what s read of the module.
// (What s read of its function's own names can change only with its
// segment, and then "def:" says whether s changed; see sameSummaries.)
func (a asked) summary(s *Summary) {
	a["def:"+s.name] = true
	for name := range s.asked {
		if !isLocalKey(name) {
			a[name] = true
		}
	}
}

// sameQuestions reports whether two versions of a function's summary asked
// the same: the same keys, its own names' keys compared by name (each
// version of a segment scopes them anew).
func sameQuestions(a, b asked) bool {
	return len(a) == len(b) && maps.Equal(byNameAlone(a), byNameAlone(b))
}

// byNameAlone returns a's keys with the scope cut off local ones.
func byNameAlone(a asked) map[string]bool {
	out := make(map[string]bool, len(a))
	for key := range a {
		name, _, _ := strings.Cut(key, "\x00")
		out[name] = true
	}
	return out
}

// carryCallIndex updates idx, a copy of prev's answers of callsByName,
// for f: the calls of the segments only prev has (only[0]) go, those
// of the segments only f has (only[1]) come, for the names idx holds.
// Slices are never changed in place (prev still reads them).
func carryCallIndex(idx map[string][]*pyast.Node, prev, f *File, only [2][]*segmentIndex) map[string][]*pyast.Node {
	for _, ix := range only[0] {
		ix.callIndex(prev)
		for name, calls := range ix.byName.all() {
			if _, carried := idx[name]; !carried {
				continue
			}
			gone := make(map[*pyast.Node]bool, len(calls))
			for _, c := range calls {
				gone[c] = true
			}
			kept := make([]*pyast.Node, 0, len(idx[name]))
			for _, c := range idx[name] {
				if !gone[c] {
					kept = append(kept, c)
				}
			}
			idx[name] = kept
		}
	}
	for _, ix := range only[1] {
		ix.callIndex(f)
		for name, calls := range ix.byName.all() {
			if had, carried := idx[name]; carried {
				idx[name] = append(slices.Clip(had), calls...)
			}
		}
	}
	return idx
}

// lastNamesOf returns the last names of the chains that keys (binding
// keys, see bindingKey) are about: what a function mentions when it reads
// one of them.
func lastNamesOf(keys map[string]bool) map[string]bool {
	names := make(map[string]bool, len(keys))
	for key := range keys {
		chain, _, _ := strings.Cut(key, "\x01")
		names[chain[strings.LastIndexByte(chain, '.')+1:]] = true
	}
	return names
}

// keepAnswers returns a copy of from, one of the answers remembered by
// name, less the answers about the names that changed, those remembered by
// the local keys of the names of functions that came or went (a
// function's parameter or variable of that name is judged by the module's
// functions too: a parameter `model` names no model where the module
// defines a function `model`), and, when purge is set, those remembered
// by the local keys of segments gone (see carryOver). A copy less what
// changed: cheaper than a copy of what did not. Nil for none (remember
// makes the map on the first answer).
func keepAnswers[V any](from map[string]V, changed map[string]bool, purge bool, staleSerials, functionsCameOrWent map[string]bool) map[string]V {
	to := maps.Clone(from)
	for key := range changed {
		delete(to, key)
	}
	if purge || len(functionsCameOrWent) > 0 {
		for key := range to {
			if !isLocalKey(key) {
				continue
			}
			name, _, _ := strings.Cut(key, "\x00")
			if purge && staleSerials[localKeySerial(key)] || functionsCameOrWent[name] {
				delete(to, key)
			}
		}
	}
	return to
}

// sameSummaries reports whether the definitions a (in prev) and b (in f)
// summarise alike, asked names included. A definition prev did not
// summarise cannot be compared (an answer carried into prev may have used
// an older version's summary of it): it counts as changed.
func sameSummaries(prev *File, a []*pyast.Node, f *File, b []*pyast.Node) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		prev.memos.Lock()
		old := prev.memos.summaries[a[i]]
		prev.memos.Unlock()
		if old == nil {
			return false
		}
		s := f.summary(b[i])
		if s.Behaviour != old.Behaviour || !sameQuestions(s.asked, old.asked) {
			return false
		}
	}
	return true
}

// sameGradOff reports whether two versions of a function's definitions
// (a's prev's, b's f's) turn autograd off alike as context managers (see
// turnsGradOff), which their summaries do not say: a with statement
// calling one runs its body under no_grad or not.
func sameGradOff(prev *File, a []*pyast.Node, f *File, b []*pyast.Node) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if prev.Text(a[i]) == f.Text(b[i]) {
			// The same text under the same imports (carryOver compares
			// versions of one structure): of the methods of an edited
			// class, only the edited one is walked.
			continue
		}
		for _, passesFalse := range []bool{false, true} {
			if prev.bodyTurnsGradOff(a[i], passesFalse) != f.bodyTurnsGradOff(b[i], passesFalse) {
				return false
			}
		}
	}
	return true
}

// InParallel calls do for every i in [0, n) on as many cores as there are
// (and as n asks for), and returns when all calls have. A panic in one is
// raised again in the caller's goroutine (see pyast.Parallel).
func InParallel(n int, do func(i int)) {
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	pyast.Parallel(min(n, runtime.GOMAXPROCS(0)), func(int) {
		for i := range next {
			do(i)
		}
	})
}
