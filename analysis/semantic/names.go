package semantic

import (
	"cmp"
	"maps"
	"slices"
	"sync"

	"github.com/vramlint/vramlint/analysis/pyast"
)

// Names is a set of names found in a scope (see NamesIn), each with the
// number of the module's segments that name it (1 in a function's). It
// keeps the names' hashes (nameHash): eight bytes where a name would take
// sixteen and keep its text alive (a script's shares, one list a segment
// and question, name most of its identifiers); two names of a file share
// a hash by a chance of one in 2^64.
type Names map[uint64]int32

// Has reports whether the set holds name.
func (s Names) Has(name string) bool { return s[nameHash(name)] > 0 }

// uncount counts the name of hash h once less; false if the set does not
// hold it (what was counted differs from what is taken away).
func (s Names) uncount(h uint64) bool {
	switch s[h] {
	case 0:
		return false
	case 1:
		delete(s, h)
	default:
		s[h]--
	}
	return true
}

// NamesIn returns the names collect adds for scope, once per version: for
// a function, what collect adds given the function; for the module,
// what it adds given each top-level statement, together.
//
// The module's set is the question a script asks of every candidate on
// every version (whether a list's elements are used as tensors, whether
// a total escapes), and finding it meant a walk of the whole file per
// version. It is patched instead from the last version's set, by the
// names of the segments the edit removed and of those it added, each
// segment's share kept with its index; so collect, given a top-level
// statement, must read nothing but that statement, the file's imports and
// whether the module binds `torch` (what QualifiedName reads): its share
// is then the same in every version with those. A set whose imports or
// binding of torch differ from the last version's is found afresh.
func NamesIn(f *File, question string, scope *pyast.Node, collect func(n *pyast.Node, add func(name string))) Names {
	if scope != f.Tree.Root {
		return OfVersion(f, question, scope, func() Names {
			names := Names{}
			collect(scope, func(name string) { names[nameHash(name)] = 1 })
			return names
		})
	}
	return rememberShared(f, &f.memos.moduleSets, question, func() any {
		return f.moduleNames(question, collect)
	}).(*moduleNames).names
}

// moduleNames is NamesIn's answer for the module, and the context it was
// found in (see nameContext).
type moduleNames struct {
	context uint64
	names   Names
}

// nameShares are what a segment adds to the module's sets of names, by
// question number (see questionNumber), found in one context.
type nameShares struct {
	sync.Mutex
	context uint64
	found   uint64     // a bit per question whose share is in names
	names   [][]uint64 // by question: hashes of names, sorted, distinct (see also moduleFlows)
}

// questionNumbers number the questions NamesIn is asked (a handful, the
// rules' constants), so that a segment's shares are a short slice.
var questionNumbers struct {
	sync.Mutex
	m map[string]int
}

// questionNumber returns question's number, or -1 past the 64 a segment
// can keep (its share is then found on every version).
func questionNumber(question string) int {
	questionNumbers.Lock()
	defer questionNumbers.Unlock()
	if n, ok := questionNumbers.m[question]; ok {
		return n
	}
	n := len(questionNumbers.m)
	if n == 64 {
		return -1
	}
	if questionNumbers.m == nil {
		questionNumbers.m = map[string]int{}
	}
	questionNumbers.m[question] = n
	return n
}

// questionsNumbered returns how many questions have a number.
func questionsNumbered() int {
	questionNumbers.Lock()
	defer questionNumbers.Unlock()
	return len(questionNumbers.m)
}

// nameContext numbers what NamesIn's collectors may read besides a
// statement: the imports (the file's structure, see structureEpoch) and
// whether the module binds torch.
func (f *File) nameContext() uint64 {
	context := f.structureEpoch << 1
	if len(f.Bindings("torch")) > 0 {
		context |= 1
	}
	return context
}

// moduleNames finds NamesIn's answer for the module: the last version's,
// less the shares of the segments only it had, plus those of the
// segments only this one has, when it found one in the same context;
// otherwise every segment's share, each found once for the segment.
func (f *File) moduleNames(question string, collect func(*pyast.Node, func(string))) *moduleNames {
	context, q := f.nameContext(), questionNumber(question)
	if had, _ := f.carried.moduleSets[question].(*moduleNames); had != nil && had.context == context {
		if names, ok := f.patchNames(had.names, q, context, collect); ok {
			return &moduleNames{context, names}
		}
	}
	names := Names{}
	for i := range f.indexes {
		for _, name := range f.nameShare(i, q, context, collect) {
			names[name]++
		}
	}
	return &moduleNames{context, names}
}

// patchNames patches the last version's set had; false if a segment it
// counted has no share of that context (another version asked in
// another one since), or a count would go below zero.
func (f *File) patchNames(had Names, q int, context uint64, collect func(*pyast.Node, func(string))) (Names, bool) {
	names := maps.Clone(had)
	for _, ix := range f.carried.gone {
		share, ok := ix.share(q, context)
		if !ok {
			return nil, false
		}
		for _, name := range share {
			if !names.uncount(name) {
				return nil, false
			}
		}
	}
	for _, i := range f.carried.fresh {
		for _, name := range f.nameShare(i, q, context, collect) {
			names[name]++
		}
	}
	return names, true
}

// share returns the index's share of question number q found in context.
func (ix *segmentIndex) share(q int, context uint64) ([]uint64, bool) {
	ix.shares.Lock()
	defer ix.shares.Unlock()
	if q < 0 || ix.shares.context != context || ix.shares.found&(1<<q) == 0 {
		return nil, false
	}
	return ix.shares.names[q], true
}

// keepShare keeps names as the index's share of question number q found
// in context, in place of the shares of any other context.
func (ix *segmentIndex) keepShare(q int, context uint64, names []uint64) {
	if q < 0 {
		return
	}
	ix.shares.Lock()
	defer ix.shares.Unlock()
	if ix.shares.context != context {
		ix.shares.context, ix.shares.found = context, 0
		clear(ix.shares.names)
	}
	if len(ix.shares.names) <= q {
		// Room for every question asked so far at once: most segments
		// are asked them all, one after the other.
		grown := make([][]uint64, max(q+1, questionsNumbered()))
		copy(grown, ix.shares.names)
		ix.shares.names = grown
	}
	ix.shares.names[q] = names
	ix.shares.found |= 1 << q
}

// nameShare returns the names collect adds given the statements of f's
// i-th segment, found once for the segment's index in a context.
func (f *File) nameShare(i, q int, context uint64, collect func(*pyast.Node, func(string))) []uint64 {
	return f.segmentShare(i, q, context, func(stmts []*pyast.Node) []uint64 {
		var found []uint64
		for _, stmt := range stmts {
			collect(stmt, func(name string) { found = append(found, nameHash(name)) })
		}
		slices.Sort(found)
		return slices.Compact(found)
	})
}

// segmentShare returns what find makes of the statements of f's i-th
// segment, found once for the segment's index in a context.
func (f *File) segmentShare(i, q int, context uint64, find func([]*pyast.Node) []uint64) []uint64 {
	ix := f.indexes[i]
	if share, ok := ix.share(q, context); ok {
		return share
	}
	var share []uint64 // kept as long as the segment: no room to spare
	if found := find(f.Tree.Segments[i].Nodes); len(found) > 0 {
		share = append(make([]uint64, 0, len(found)), found...)
	}
	ix.keepShare(q, context, share)
	return share
}

// moduleSetsSoFar returns the module's sets this version has found, for
// the next version to patch (see NamesIn, moduleFlows).
func (f *File) moduleSetsSoFar() map[string]any {
	f.memos.Lock()
	defer f.memos.Unlock()
	return maps.Clone(f.memos.moduleSets)
}

// flowSet is moduleFlows' answer, and the context it was found in.
type flowSet struct {
	context uint64
	into    map[uint64]Names // a name's hash -> the names flowing into it
}

// flowsQuestion names moduleFlows' shares and answer.
const flowsQuestion = "flows into names"

// moduleFlows returns what flows into each name anywhere in the module, as
// backwardSinks follows it (see flowsOf): patched from the last version's
// like NamesIn's sets, each segment's flows kept with its index.
func (f *File) moduleFlows() map[uint64]Names {
	return rememberShared(f, &f.memos.moduleSets, flowsQuestion, func() any {
		context, q := f.nameContext(), questionNumber(flowsQuestion)
		find := func(stmts []*pyast.Node) []uint64 { return flowsOf(f, stmts) }
		if had, _ := f.carried.moduleSets[flowsQuestion].(*flowSet); had != nil && had.context == context {
			if into, ok := f.patchFlows(had.into, q, context, find); ok {
				return &flowSet{context, into}
			}
		}
		into := map[uint64]Names{}
		for i := range f.indexes {
			countFlows(into, f.segmentShare(i, q, context, find), nil)
		}
		return &flowSet{context, into}
	}).(*flowSet).into
}

// patchFlows patches the last version's flows had as patchNames does a
// set, copying only the sets of the names whose flows change.
func (f *File) patchFlows(had map[uint64]Names, q int, context uint64, find func([]*pyast.Node) []uint64) (map[uint64]Names, bool) {
	into := maps.Clone(had)
	copied := map[uint64]bool{}
	for _, ix := range f.carried.gone {
		share, ok := ix.share(q, context)
		if !ok {
			return nil, false
		}
		for k := 0; k+1 < len(share); k += 2 {
			to, from := share[k], share[k+1]
			if !copied[to] {
				into[to], copied[to] = maps.Clone(into[to]), true
			}
			if !into[to].uncount(from) {
				return nil, false
			}
		}
	}
	for _, i := range f.carried.fresh {
		countFlows(into, f.segmentShare(i, q, context, find), copied)
	}
	for to := range copied {
		if len(into[to]) == 0 {
			delete(into, to)
		}
	}
	return into, true
}

// countFlows counts a segment's flows (pairs of hashes: into, from) once
// more in into, copying first the sets of had's names that copied does
// not list (nil: into is new, nothing to copy).
func countFlows(into map[uint64]Names, share []uint64, copied map[uint64]bool) {
	for k := 0; k+1 < len(share); k += 2 {
		to, from := share[k], share[k+1]
		if copied != nil && !copied[to] {
			into[to], copied[to] = maps.Clone(into[to]), true
		}
		if into[to] == nil {
			into[to] = Names{}
		}
		into[to][from]++
	}
}

// flowsOf returns what flows into what in stmts, as backwardSinks follows
// it: an assignment's value (or a for loop's iterable) into its targets, a
// container's new elements into the container; each a pair of hashes,
// the name flowed into and a name the value mentions (see mentionedNames),
// sorted and distinct.
func flowsOf(f *File, stmts []*pyast.Node) []uint64 {
	type flow struct{ into, from uint64 }
	var flows []flow
	add := func(into string, from *pyast.Node) {
		h := nameHash(into)
		mentionedNames(f, from, func(name string) { flows = append(flows, flow{h, nameHash(name)}) })
	}
	for _, stmt := range stmts {
		for _, a := range append(f.AssignmentsIn(stmt), f.LoopsIn(stmt)...) {
			if right := a.Child("right"); right != nil && a.Kind() != "while_statement" {
				for _, name := range targetNames(f, a.Child("left")) {
					add(name, right)
				}
			}
		}
		for _, c := range f.CallsIn(stmt) {
			switch f.MethodName(c) {
			case "append", "extend", "insert", "add":
				add(f.Text(Receiver(c)), c.Child("arguments"))
			}
		}
	}
	slices.SortFunc(flows, func(a, b flow) int {
		if c := cmp.Compare(a.into, b.into); c != 0 {
			return c
		}
		return cmp.Compare(a.from, b.from)
	})
	flows = slices.Compact(flows)
	out := make([]uint64, 0, 2*len(flows))
	for _, fl := range flows {
		out = append(out, fl.into, fl.from)
	}
	return out
}
