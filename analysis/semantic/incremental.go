package semantic

import (
	"cmp"
	"hash/maphash"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/vramlint/vramlint/analysis/pyast"
)

// Which findings an edit can change. A version of a buffer shares the
// segments the edit did not touch with the version before (see
// pyast.Tree), and most of a rule's findings in such a segment depend on
// nothing else than the segment and what the model answers about the rest
// of the file: the imports, the classes' headers, the values bound to
// each name, function summaries, which functions run under no-grad,
// set_grad_enabled switches, and the project. carryOver already works out
// which of those changed (the names it marks stale). A DataLoader is read
// through the name it is bound to (a loop over `loader`), and the one rule
// that follows every loader, GPU001, is not a local one: a loader call
// that changed is a statement that changed, and a binding if it is bound.
// When none did, such a rule only has to look at the segments the edit
// touched again; analysis.Rule.Local says which rules are of that kind.

// Focus is a set of segments a rule looks for findings in; nil is the
// whole file.
type Focus map[*pyast.Segment]bool

// Has reports whether seg is in the focus.
func (fc Focus) Has(seg *pyast.Segment) bool { return fc == nil || fc[seg] }

// Reanalysed returns the segments of f in which a local rule's findings
// may differ from those in the version f was built from (NewModelFrom);
// ok is false for a model built from none. See reanalyse.
func (f *File) Reanalysed() (focus Focus, ok bool) { return f.carried.focus, f.carried.reusable }

// ModuleCodeKept reports whether f's module code reads as the module code
// of the version f was built from does: Reanalysed's focus holds none of
// it, and none of it is gone, but for statements moved unchanged (see
// pyast.Segment.Code), which the focus holds only because their nodes are
// new. A local rule's verdict on a module-level statement reads the
// module's other statements as well as its own (module code is one scope
// across segments: a name bound, a model put in eval mode, a loss
// backpropagated in another statement), in ways the model does not track;
// it holds while this is true (see analysis.Pass.CandidateCalls), and
// while the code the edit changed does not reach what it stores into (see
// ChangedCodeReaches). A keystroke in a function of a script keeps the
// verdicts on the script's loops whose names it does not reach.
//
// Module code is the statements outside definitions and outside syntax
// errors at the top level: what such an error holds is its own scope (see
// Scope, brokenStatement), which the readers of the module's code leave
// out, as they do a function's body (they ask Scope or InScope, or the
// module's sets of names, which the stored names guard). A definition
// being written (`def train(model, l`) is such an error on most keys:
// typing one after a 10,000-line script judged every verdict on its 434
// loops again on 100 of 940 keys, 20-30 ms each.
func (f *File) ModuleCodeKept() bool { return f.carried.moduleCodeKept }

// holdsModuleCode reports whether a segment of focus, or one of those gone
// since the version f was built from, holds module code.
func (f *File) holdsModuleCode(focus Focus, gone []*segmentIndex) bool {
	for seg := range focus {
		if i := f.segmentNumber(seg); i < 0 || f.indexes[i].moduleCode {
			return true
		}
	}
	return slices.ContainsFunc(gone, func(ix *segmentIndex) bool { return ix.moduleCode })
}

// StoreKeys returns keys for what statement n stores into, for
// ChangedCodeReaches: the identifiers of an assignment's targets, or of
// the receiver of a call that adds to a container (`losses.append(loss)`,
// `meter.update(loss)`); none for other statements, whose verdicts must
// not ask the module's sets of names.
func StoreKeys(f *File, n *pyast.Node) []uint64 {
	var target *pyast.Node
	switch {
	case n.Is("assignment", "augmented_assignment"):
		target = n.Child("left")
	case n.Is("call") && storingMethods[f.MethodName(n)]:
		target = Receiver(n)
	}
	var keys []uint64
	if target != nil {
		eachIdentifier(f, target, func(h uint64) { keys = append(keys, h) })
	}
	return keys
}

// storingMethods are the methods whose calls store their arguments into
// their receiver, as storesOf and StoreKeys count them: those eachFlow
// follows and those GPU002's and GPU003's candidates call.
var storingMethods = map[string]bool{"append": true, "extend": true, "insert": true, "add": true, "appendleft": true, "update": true}

// eachIdentifier calls do with the hash of each identifier in n.
func eachIdentifier(f *File, n *pyast.Node, do func(uint64)) {
	pyast.Walk(n, func(m *pyast.Node) bool {
		if m.Is("identifier") {
			do(nameHash(f.Text(m)))
		}
		return true
	})
}

// ChangedCodeReaches reports whether the code an edit changed (f's
// segments the last version lacks, and the last version's that f lacks)
// may change what the module's sets of names say about the names keys
// stand for (see StoreKeys).
//
// Those sets (see NamesIn) and what flows into what (moduleFlows) are
// made of every statement, functions included, and keyed by name alone
// (a total read in a function escapes; a list stacked there is used as
// tensors; a name whose backward() a function calls is a backward sink,
// and what flows into it reaches one). A module-level candidate's verdict
// asks them about the name its statement stores into, and follows what
// that flows into. So changed code changes such a verdict only through a
// name it mentions that the candidate's name is, or flows into through
// the file's stores: the keys are checked against the names the changed
// code mentions, in either version, and every name that flows into one
// of them, at the granularity of identifiers (`self.t = total` flows
// `total` into `self` and `t`), which only adds names. Before, a
// keystroke in a function kept every verdict on module code: typing
// `total.backward()` in a function after a script's loop kept GPU003's
// `.detach()` fix on `total += loss` safe, where a fresh analysis finds
// no finding (the graph is wanted); so did `b.backward()`, where another
// function stores `total` into `b`.
func (f *File) ChangedCodeReaches(keys []uint64) bool {
	if len(keys) == 0 {
		return false
	}
	f.carried.reachOnce.Do(func() { f.carried.reach = f.changedCodeReach() })
	return slices.ContainsFunc(keys, func(k uint64) bool { return f.carried.reach[k] })
}

// changedCodeReach returns the names the code an edit changed mentions,
// in either version, and every name that flows into one of them through
// the stores of f's segments (see storesOf).
func (f *File) changedCodeReach() map[uint64]bool {
	reach := map[uint64]bool{}
	var frontier []uint64
	mention := func(ix *segmentIndex) {
		for _, h := range ix.mentions {
			if !reach[h] {
				reach[h] = true
				frontier = append(frontier, h)
			}
		}
	}
	for _, i := range f.carried.edited {
		mention(f.indexes[i])
	}
	for _, ix := range f.carried.editedGone {
		mention(ix)
	}
	if len(frontier) == 0 {
		return reach
	}
	f.readStores(func(into map[uint64][]uint64) {
		for len(frontier) > 0 {
			h := frontier[len(frontier)-1]
			frontier = frontier[:len(frontier)-1]
			for _, from := range into[h] {
				if !reach[from] {
					reach[from] = true
					frontier = append(frontier, from)
				}
			}
		}
	})
	return reach
}

// storesGraph holds what flows into what in the segments of a version
// (see storesOf): for each name's hash, the hashes of the names stored
// into it, one entry a store. A version builds it when first asked, and
// the next version built from it takes it over and patches it with the
// stores of the segments only one of them has, rather than going over
// every segment: at 10,000 lines, building it was a fifth of a keystroke
// in a function after a script. It is handed on once: the version that
// gave it up, or a second version built from the same one, builds its own
// if it asks.
type storesGraph struct {
	mu   sync.Mutex
	into map[uint64][]uint64 // nil until built, and once handed on
	// last is the graph of the version this one was built from, to take
	// over when this one is first asked; nil once asked.
	last *storesGraph
}

// readStores calls read with f's stores graph (see storesGraph), under
// its lock: read must not keep it.
func (f *File) readStores(read func(into map[uint64][]uint64)) {
	g := f.stores
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.into == nil {
		g.into = f.patchedStores(g.takeLast())
	}
	read(g.into)
}

// newStoresGraph returns the graph holder of a version built from prev's
// (nil for none): to take prev's graph over when asked, if prev built one
// and still holds it. A version that never asks keeps no older graph past
// the next version, and no chain of holders forms.
func newStoresGraph(prev *File) *storesGraph {
	g := &storesGraph{}
	if prev != nil {
		prev.stores.mu.Lock()
		if prev.stores.into != nil {
			g.last = prev.stores
		}
		prev.stores.mu.Unlock()
	}
	return g
}

// takeLast takes over the last version's graph; nil when that version
// built none, or handed it on already. The lock order is always a
// version's before the one it was built from.
func (g *storesGraph) takeLast() map[uint64][]uint64 {
	last := g.last
	g.last = nil
	if last == nil {
		return nil
	}
	last.mu.Lock()
	defer last.mu.Unlock()
	into := last.into
	last.into = nil
	return into
}

// patchedStores returns f's stores graph: into, the last version's,
// less the stores of the segments gone with it and with those of the
// segments it lacked; or, when there is none, or a gone segment's stores
// are unknown, built from every segment. Every index of a version with a
// graph has its stores found (storesOf), so that a later version can take
// them out.
func (f *File) patchedStores(into map[uint64][]uint64) map[uint64][]uint64 {
	add := func(pairs []uint64) {
		for k := 0; k+1 < len(pairs); k += 2 {
			into[pairs[k]] = append(into[pairs[k]], pairs[k+1])
		}
	}
	if into != nil {
		for _, ix := range f.carried.gone {
			pairs, ok := ix.foundStores()
			if !ok {
				into = nil
				break
			}
			for k := 0; k+1 < len(pairs); k += 2 {
				held := into[pairs[k]]
				if i := slices.Index(held, pairs[k+1]); i >= 0 {
					held[i] = held[len(held)-1]
					into[pairs[k]] = held[:len(held)-1]
				}
			}
		}
	}
	if into != nil {
		for _, i := range f.carried.fresh {
			add(f.storesOf(f.indexes[i]))
		}
		return into
	}
	into = map[uint64][]uint64{}
	for _, ix := range f.indexes {
		add(f.storesOf(ix))
	}
	return into
}

// foundStores returns ix's stores, if storesOf found them.
func (ix *segmentIndex) foundStores() ([]uint64, bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.stores, ix.storesDone
}

// storesOf returns what flows into what in ix's segment (ix one of f's
// segments' indexes, or shared with them), wherever it is, as eachFlow
// finds it but by identifier: pairs of hashes, an identifier of what is
// stored into and one of what is stored (an assignment's targets and its
// value, a for loop's targets and its iterable, a method call's receiver
// that adds to a container and its arguments). Found once.
func (f *File) storesOf(ix *segmentIndex) []uint64 {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.storesDone {
		return ix.stores
	}
	var pairs []uint64
	store := func(into, from *pyast.Node) {
		if into == nil || from == nil {
			return
		}
		var froms []uint64
		eachIdentifier(f, from, func(h uint64) { froms = append(froms, h) })
		eachIdentifier(f, into, func(h uint64) {
			for _, fr := range froms {
				pairs = append(pairs, h, fr)
			}
		})
	}
	for _, list := range [][]*pyast.Node{ix.assignments, ix.loops} {
		for _, a := range list {
			store(a.Child("left"), a.Child("right"))
		}
	}
	for _, c := range ix.calls {
		if storingMethods[f.MethodName(c)] {
			store(Receiver(c), c.Child("arguments"))
		}
	}
	ix.stores, ix.storesDone = slices.Clip(pairs), true
	return ix.stores
}

// reanalyse returns the segments of f in which a local rule's findings may
// differ from those in prev, the version f is built from; loaderCalls
// are f's DataLoader calls.
// Those are the segments prev lacks; and when names changed what they are
// bound to, or functions what they do (see carryOver), the segments that
// mention them and, since what a name is bound to or what a function does
// may follow from those, the names bound and the functions and classes
// defined in such a segment, to a fixed point. Verdicts on module-level
// code, which is one scope across segments, hold only while no module
// code is in the focus (see ModuleCodeKept). ok is false when any finding may differ:
// the imports, class headers, set_grad_enabled switches, the file's
// indentation or line endings (which fixes follow) differ, or which calls
// of a function run under no-grad.
func (f *File) reanalyse(prev *File, fresh []int) (focus Focus, ok bool) {
	if prev == nil || !f.carried.ok || f.indent != prev.indent || f.lineEnding() != prev.lineEnding() ||
		!sameTexts(f, f.gradSwitches, prev, prev.gradSwitches) {
		return nil, false
	}
	focus = Focus{}
	for _, i := range fresh {
		focus[f.Tree.Segments[i]] = true
	}
	names := map[string]bool{}
	for key := range f.carried.changed {
		name, isDef := strings.CutPrefix(key, "def:")
		if !isDef && strings.HasPrefix(key, "calls:") {
			return nil, false // under no-grad or not: that follows calls down the file
		}
		names[name] = true
	}
	// A name of a function or class, in either version, is read wherever
	// it is mentioned (a call of it resolves to the definition even where
	// a parameter shadows it, see resolveCall); a name only bound is read
	// where no function's own name of that text shadows it.
	defined := func(name string) bool {
		return len(f.Functions[name]) > 0 || len(prev.Functions[name]) > 0 || f.Classes[name] != nil || prev.Classes[name] != nil
	}
	// A model's forward is what a call of its instances runs (see
	// ForwardSummaryOfCall), read where the class is mentioned, not the
	// method: an edited class whose forward came, went or does otherwise
	// is a changed name. (mentioning adds the classes of the segments it
	// reaches; the edited ones are in the focus already.)
	if names["forward"] {
		for _, classes := range [2][]*Class{classesOf(f.carried.editedGone), classesOf(f.indexesAt(fresh))} {
			for _, c := range classes {
				if c.Methods["forward"] != nil {
					names[c.Name] = true
				}
			}
		}
	}
	if !f.mentioning(names, focus, defined) {
		return nil, false
	}
	return focus, true
}

// maxRounds bounds how far mentioning follows names through bindings and
// definitions before it gives up (everything may have changed).
const maxRounds = 32

// mentioning adds to focus the segments that mention one of names, and
// adds to names what is bound and defined in them (of a class's methods,
// those a name reaches: see definitionsReached), until no name is
// added; false when that takes more than maxRounds rounds, or when focus
// holds more than half the segments (then as well analyse all of them).
// A name that defined says is no function's or class's is mentioned only
// where it is not a function's own (see segmentIndex.localOnly): a
// script's `model = build()` is not read by `def train(model, loader)`.
func (f *File) mentioning(names map[string]bool, focus Focus, defined func(string) bool) bool {
	most := len(f.Tree.Segments) / 2
	fresh := slices.Collect(maps.Keys(names))
	// The segments the edit made are in the focus already; what their
	// definitions do otherwise, carryOver judged (the names given).
	reached := definitionsReached{edited: maps.Clone(focus)}
	for round := 0; len(fresh) > 0; round++ {
		if round == maxRounds || len(focus) > most {
			return false
		}
		hashes := make([]uint64, 0, len(fresh))
		var boundOnly []bool // for each of hashes: a name only bound
		for _, name := range fresh {
			if chain, family, ok := strings.Cut(name, "\x01"); ok {
				// A class's attribute: mentioned as such in the classes of
				// its family (see attributeKey).
				for _, c := range f.classFamily(family) {
					hashes = append(hashes, nameHash(attributeKey(chain, c)))
					boundOnly = append(boundOnly, false)
				}
				continue
			}
			hashes = append(hashes, nameHash(name))
			boundOnly = append(boundOnly, !defined(name))
		}
		mentions := func(ix *segmentIndex) bool {
			for i, h := range hashes {
				if ix.mentionsHash(h) && (!boundOnly[i] || !ix.onlyLocal(h)) {
					return true
				}
			}
			return false
		}
		// Every hash a segment mentions, by a walk of its sorted mentions
		// beside the hashes sorted: a class statement's methods are
		// weighed against them (see definitionsReached).
		var sorted []int // of hashes, by hash
		var matched []uint64
		mentioned := func(ix *segmentIndex) []uint64 {
			if sorted == nil {
				sorted = make([]int, len(hashes))
				for i := range sorted {
					sorted[i] = i
				}
				slices.SortFunc(sorted, func(a, b int) int { return cmp.Compare(hashes[a], hashes[b]) })
			}
			matched = matched[:0]
			for j, k := 0, 0; j < len(ix.mentions) && k < len(sorted); {
				switch h, i := ix.mentions[j], sorted[k]; {
				case h < hashes[i]:
					j++
				case h > hashes[i]:
					k++
				default:
					if !boundOnly[i] || !ix.onlyLocal(h) {
						matched = append(matched, h)
					}
					k++
				}
			}
			return matched
		}
		// A segment whose bloom has none of the hashes' bits mentions none
		// of them: one test a segment for all of them, not one a hash.
		var bits [8]uint64
		for _, h := range hashes {
			bits[h>>6&7] |= 1 << (h & 63)
		}
		fresh = fresh[:0]
		add := func(name string) {
			if name != "" && !names[name] {
				names[name] = true
				fresh = append(fresh, name)
			}
		}
		for i, ix := range f.indexes {
			seg := f.Tree.Segments[i]
			if !ix.bloomHasAny(&bits) || !mentions(ix) {
				continue
			}
			var heard []uint64
			if reached.weighsMethods(seg) {
				heard = mentioned(ix)
			}
			// What a class's methods do is what calls to its instances
			// do (a model's forward, see ForwardSummaryOfCall): those
			// mention the class, which add adds with its methods.
			focus[seg] = true
			reached.add(f, seg, ix, heard, add)
			for _, b := range ix.bindings {
				if key := f.bindingKey(b); b.scope == nil && !names[key] && mentionsAny(f, b.value, names) {
					add(key)
				}
			}
		}
	}
	return len(focus) <= most
}

// mentionsAny reports whether an identifier or attribute chain in n has
// one of names for its key (see NameKey).
func mentionsAny(f *File, n *pyast.Node, names map[string]bool) bool {
	found := false
	pyast.Walk(n, func(m *pyast.Node) bool {
		found = found || m.Is("identifier", "attribute") && names[f.NameKey(m)]
		return !found
	})
	return found
}

// nameSeed hashes names for the segments' mentions (see segmentIndex)
// and for the sets of names of NamesIn.
var nameSeed = maphash.MakeSeed()

func nameHash(name string) uint64 { return maphash.String(nameSeed, name) }

// attributeKeyHash is nameHash(attributeKey(chain, class)), without
// making the key: a hash of bytes written in parts is the hash of them
// written at once.
func attributeKeyHash(chain, class string) uint64 {
	if class == "" {
		return nameHash(chain)
	}
	var h maphash.Hash
	h.SetSeed(nameSeed)
	h.WriteString(chain)
	h.WriteByte(1)
	h.WriteString(class)
	return h.Sum64()
}

// loaderCallsOf lists the calls of f's DataLoaders.
func loaderCallsOf(f *File) []*pyast.Node {
	calls := make([]*pyast.Node, len(f.DataLoaders))
	for i, d := range f.DataLoaders {
		calls[i] = d.Call
	}
	return calls
}

// sameTexts reports whether a (nodes of f) and b (of prev) have the same
// texts in the same order.
func sameTexts(f *File, a []*pyast.Node, prev *File, b []*pyast.Node) bool {
	// A node of a segment the versions share has the same text in both,
	// without reading it.
	return slices.EqualFunc(a, b, func(x, y *pyast.Node) bool { return x == y || f.Text(x) == prev.Text(y) })
}
