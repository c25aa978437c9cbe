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
	find := func(stmts []*pyast.Node) []uint64 {
		var found []uint64
		for _, stmt := range stmts {
			collect(stmt, func(name string) { found = append(found, nameHash(name)) })
		}
		slices.Sort(found)
		return slices.Compact(found)
	}
	return moduleAnswer(f, question, find, func(names Names) (take func([]uint64) bool, add func([]uint64)) {
		take = func(share []uint64) bool {
			for _, name := range share {
				if !names.uncount(name) {
					return false
				}
			}
			return true
		}
		add = func(share []uint64) {
			for _, name := range share {
				names[name]++
			}
		}
		return take, add
	})
}

// moduleAnswer returns this version's answer to question about the whole
// module, made of its segments' shares (what find makes of each one's
// statements, kept with its index): the last version's answer, copied,
// less the shares of the segments only that version had and plus those of
// the segments only this one has, when that answer was found in the same
// context (see nameContext) and nothing it counted is missing; otherwise
// every segment's share. counter gives, for the answer being made, how to
// take a share away (false: it was not counted) and how to add one.
func moduleAnswer[M ~map[uint64]V, V any](f *File, question string, find func([]*pyast.Node) []uint64, counter func(M) (take func([]uint64) bool, add func([]uint64))) M {
	type answer struct {
		context uint64
		value   M
	}
	return rememberShared(f, &f.memos.moduleSets, question, func() any {
		context, q := f.nameContext(), questionNumber(question)
		if had, _ := f.carried.moduleSets[question].(*answer); had != nil && had.context == context {
			value := maps.Clone(had.value)
			if take, add := counter(value); f.patchShares(q, context, find, take, add) {
				return &answer{context, value}
			}
		}
		value := M{}
		_, add := counter(value)
		for i := range f.indexes {
			add(f.segmentShare(i, q, context, find))
		}
		return &answer{context, value}
	}).(*answer).value
}

// patchShares takes away the shares of the segments only the last version
// had and adds those of the segments only this one has; false when a
// segment gone has no share of that context (another version asked in
// another one since) or take refuses one.
func (f *File) patchShares(q int, context uint64, find func([]*pyast.Node) []uint64, take func([]uint64) bool, add func([]uint64)) bool {
	for _, ix := range f.carried.gone {
		if share, ok := ix.share(q, context); !ok || !take(share) {
			return false
		}
	}
	for _, i := range f.carried.fresh {
		add(f.segmentShare(i, q, context, find))
	}
	return true
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

// moduleFlows returns what flows into each name anywhere in the module, as
// backwardSinks follows it (see flowsOf): a name's hash -> the names
// flowing into it, patched like NamesIn's sets. A patch copies a name's set
// before changing it: the last version's stay its own.
func (f *File) moduleFlows() map[uint64]Names {
	find := func(stmts []*pyast.Node) []uint64 { return flowsOf(f, stmts) }
	return moduleAnswer(f, "flows into names", find, func(into map[uint64]Names) (take func([]uint64) bool, add func([]uint64)) {
		copied := map[uint64]bool{}
		own := func(name uint64) Names {
			if !copied[name] {
				into[name], copied[name] = maps.Clone(into[name]), true
			}
			if into[name] == nil {
				into[name] = Names{}
			}
			return into[name]
		}
		take = func(share []uint64) bool {
			for k := 0; k+1 < len(share); k += 2 {
				names := own(share[k])
				if !names.uncount(share[k+1]) {
					return false
				}
				if len(names) == 0 {
					delete(into, share[k])
				}
			}
			return true
		}
		add = func(share []uint64) {
			for k := 0; k+1 < len(share); k += 2 {
				own(share[k])[share[k+1]]++
			}
		}
		return take, add
	})
}

// flowsOf returns what flows into what in stmts, as backwardSinks follows
// it: an assignment's value (or a for loop's iterable) into its targets, a
// container's new elements into the container; each a pair of hashes,
// the name flowed into and a name the value mentions (see mentionedNames),
// sorted and distinct.
func flowsOf(f *File, stmts []*pyast.Node) []uint64 {
	type flow struct{ into, from uint64 }
	var flows []flow
	for _, stmt := range stmts {
		eachFlow(f, append(f.AssignmentsIn(stmt), f.LoopsIn(stmt)...), f.CallsIn(stmt), func(into string, from *pyast.Node) {
			h := nameHash(into)
			mentionedNames(f, from, func(name string) { flows = append(flows, flow{h, nameHash(name)}) })
		})
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
