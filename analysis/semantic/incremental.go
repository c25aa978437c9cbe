package semantic

import (
	"hash/maphash"
	"maps"
	"slices"
	"strings"

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

// ModuleCodeKept reports whether f's module code (its statements outside
// definitions) reads as the module code of the version f was built from
// does: Reanalysed's focus holds none of it, and none of it is gone. A
// local rule's verdict on a module-level statement reads the module's
// other statements as well as its own (module code is one scope across
// segments: a name bound, a model put in eval mode, a loss backpropagated
// in another statement), in ways the model does not track; it holds
// while this is true (see analysis.Pass.CandidateCalls); and through the
// module's sets of names, it reads every function that mentions a name
// another statement stores into (see changedCodeReadsModuleNames). A
// keystroke in a function of a script that mentions none keeps every
// verdict on the script's loops.
func (f *File) ModuleCodeKept() bool {
	f.carried.moduleCodeAsked.Do(func() {
		if f.carried.moduleCodeKept && f.changedCodeReadsModuleNames() {
			f.carried.moduleCodeKept = false
		}
	})
	return f.carried.moduleCodeKept
}

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

// changedCodeReadsModuleNames reports whether code an edit changed (f's
// segments the last version lacks, and the last version's that f lacks)
// may change a verdict on module code: whether it mentions a name another
// segment stores into.
//
// The verdicts on module code read more than module code: the module's
// sets of names (see NamesIn) and what flows into what (moduleFlows) are
// made of every statement, functions included, and keyed by name alone
// (a total read in a function escapes; a list stacked there is used as
// tensors; a name whose backward() a function calls is a backward sink,
// and what flows into it reaches one). A module-level candidate's verdict
// asks about its own name, which its statement stores into (accumulates
// into, appends to, assigns), and follows what that flows into, each step
// a name some statement stores into. So a changed statement can change
// such a verdict only through a name it mentions that another segment
// stores into: one that it alone stores into is reached, if at all,
// through such a name it mentions. Before, a keystroke in a function kept
// every verdict on module code: typing `total.backward()` in a function
// after a script's loop kept GPU003's `.detach()` fix on `total += loss`
// safe, where a fresh analysis finds no finding (the graph is wanted);
// so did `b.backward()`, where another function stores `total` into `b`.
// The sets do not tell a function's own names from the module's, so a
// function that reuses the script's names (`loss`, `x`) judges them again
// on every key.
func (f *File) changedCodeReadsModuleNames() bool {
	changed := make([]*segmentIndex, 0, len(f.carried.fresh)+len(f.carried.gone))
	for _, i := range f.carried.fresh {
		changed = append(changed, f.indexes[i])
	}
	changed = append(changed, f.carried.gone...)
	if len(changed) == 0 {
		return false
	}
	storedElsewhere := map[uint64]bool{}
	for i, ix := range f.indexes {
		if !slices.Contains(f.carried.fresh, i) {
			for _, h := range f.flowTargetsOf(ix) {
				storedElsewhere[h] = true
			}
		}
	}
	return slices.ContainsFunc(changed, func(ix *segmentIndex) bool {
		return slices.ContainsFunc(ix.mentions, func(h uint64) bool { return storedElsewhere[h] })
	})
}

// flowTargetsOf returns ix's flowTargets (ix one of f's segments'
// indexes, or shared with them): the identifiers in the targets of its
// assignments and for loops, and in the receivers of its calls that add
// to a container, wherever they are (see eachFlow), found once.
func (f *File) flowTargetsOf(ix *segmentIndex) []uint64 {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.flowTargetsDone {
		return ix.flowTargets
	}
	var targets []uint64
	identifiers := func(n *pyast.Node) {
		pyast.Walk(n, func(m *pyast.Node) bool {
			if m.Is("identifier") {
				targets = append(targets, nameHash(f.Text(m)))
			}
			return true
		})
	}
	for _, list := range [][]*pyast.Node{ix.assignments, ix.loops} {
		for _, a := range list {
			if left := a.Child("left"); left != nil {
				identifiers(left)
			}
		}
	}
	for _, c := range ix.calls {
		switch f.MethodName(c) {
		case "append", "extend", "insert", "add":
			if r := Receiver(c); r != nil {
				identifiers(r)
			}
		}
	}
	slices.Sort(targets)
	ix.flowTargets, ix.flowTargetsDone = slices.Clip(slices.Compact(targets)), true
	return ix.flowTargets
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
	if !f.mentioning(names, focus, defined) {
		return nil, false
	}
	return focus, true
}

// maxRounds bounds how far mentioning follows names through bindings and
// definitions before it gives up (everything may have changed).
const maxRounds = 32

// mentioning adds to focus the segments that mention one of names, and
// adds to names what is bound and defined in them, until no segment is
// added; false when that takes more than maxRounds rounds, or when focus
// holds more than half the segments (then as well analyse all of them).
// A name that defined says is no function's or class's is mentioned only
// where it is not a function's own (see segmentIndex.localOnly): a
// script's `model = build()` is not read by `def train(model, loader)`.
func (f *File) mentioning(names map[string]bool, focus Focus, defined func(string) bool) bool {
	most := len(f.Tree.Segments) / 2
	fresh := slices.Collect(maps.Keys(names))
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
			if !focus[seg] {
				focus[seg] = true
				for _, d := range ix.functions {
					add(d.name)
				}
				// What a class's methods do is what calls to its
				// instances do (a model's forward, see
				// ForwardSummaryOfCall): those mention the class.
				for _, c := range ix.classes {
					add(c.Name)
				}
			}
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
