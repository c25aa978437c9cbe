package semantic

import (
	"maps"
	"slices"
	"sync"

	"github.com/vramlint/vramlint/analysis/pyast"
)

// Names is a set of names found in a scope (see NamesIn), each with the
// number of the module's segments that name it (1 in a function's). It
// keeps the names' hashes (nameHash): eight bytes where a name would take
// sixteen and keep its text alive (a script's shares list most of its
// identifiers, once a question); two names of a file share one by a
// chance of one in 2^64.
type Names map[uint64]int32

// Has reports whether the set holds name.
func (s Names) Has(name string) bool { return s[nameHash(name)] > 0 }

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
	return rememberShared(f, &f.memos.moduleNames, question, func() *moduleNames {
		return f.moduleNames(question, collect)
	}).names
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
	names   [][]uint64 // hashes, sorted, distinct
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
	if had := f.carried.names[question]; had != nil && had.context == context {
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
			switch names[name] {
			case 0:
				return nil, false
			case 1:
				delete(names, name)
			default:
				names[name]--
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
		ix.shares.names = slices.Grow(ix.shares.names, q+1-len(ix.shares.names))[:q+1]
	}
	ix.shares.names[q] = names
	ix.shares.found |= 1 << q
}

// nameShare returns the names collect adds given the statements of f's
// i-th segment, found once for the segment's index in a context.
func (f *File) nameShare(i, q int, context uint64, collect func(*pyast.Node, func(string))) []uint64 {
	ix := f.indexes[i]
	if names, ok := ix.share(q, context); ok {
		return names
	}
	var found []uint64
	for _, stmt := range f.Tree.Segments[i].Nodes {
		collect(stmt, func(name string) { found = append(found, nameHash(name)) })
	}
	slices.Sort(found)
	var names []uint64 // kept as long as the segment: no room to spare
	if found = slices.Compact(found); len(found) > 0 {
		names = append(make([]uint64, 0, len(found)), found...)
	}
	ix.keepShare(q, context, names)
	return names
}

// namesSoFar returns the module's sets this version has found, for the
// next version to patch (see NamesIn).
func (f *File) namesSoFar() map[string]*moduleNames {
	f.memos.Lock()
	defer f.memos.Unlock()
	return maps.Clone(f.memos.moduleNames)
}
