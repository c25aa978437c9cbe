package semantic

import (
	"slices"
	"strings"
	"unsafe"

	"github.com/vramlint/vramlint/analysis/pyast"
)

// A keystroke in a method of a class of thousands of lines replaces the
// class's whole top-level statement, and its segment's index (the class's
// calls, loops, bindings, scopes and mentions) was built again from every
// node of the class: a third of such a keystroke. But a method's share of
// the index follows from its own code and the names of the classes around
// it, and the methods the edit left alone (see pairUnchangedUnits) are
// the same code there: their shares are taken over from the last
// version's index, their nodes moved to the new statement's (see
// pyast.Mover), and only the edited method and the class's own lines are
// walked. The lists of the index keep the walk's order, so a method's
// share of each is one run of it; a method's scopes (its functions'
// names) are its own too, and are moved under new ids, so that no answer
// remembered under a scope of the last version is taken for this one's.

// indexByUnits is false only in tests, for an index built in one walk to
// compare with.
var indexByUnits = true

// unitsFrom is the length of the smallest class statement indexed by its
// methods: a class of a few hundred lines is indexed again in a fraction
// of a millisecond, and its units would cost every open of a file of many
// small classes (a model file) memory and time for nothing. A variable
// for tests.
var unitsFrom = 16 << 10

// indexUnits are the outermost functions of a class statement (see
// outermostFunctions) and where each one's share of the segment's index
// lies, for the next version to take over.
type indexUnits struct {
	roots []*pyast.Node // in offset order
	parts []unitPart    // parts[i] is roots[i]'s
	// The segment's global and nonlocal statements in functions and its
	// functions' parameters, in the walk's order (what scopes are built
	// from, with the bindings).
	declarations []*pyast.Node
	params       []functionParams
	// takenOver counts the units whose shares came from the last
	// version's index (for tests).
	takenOver int
	// localCounts and otherCounts are, for each name the parts mention as
	// a function's own and otherwise, how many parts do: the next version
	// patches them with the parts that changed rather than merging every
	// part's set again (see mentions).
	localCounts, otherCounts []hashCount
}

// hashCount is a name's hash and how many sets hold it.
type hashCount struct {
	hash uint64
	n    int32
}

// functionParams are the names of a function's (or lambda's) parameters.
type functionParams struct {
	fn    *pyast.Node
	names []string
}

// unitPart is a unit's share of its segment's index: a run of each of its
// lists, and the names it mentions, sorted, as a function's own there
// (local) and otherwise (other), see decideMentions.
type unitPart struct {
	runs         [listCount]run
	local, other []uint64
	indent       int // as segmentIndex.indent, of its blocks alone
	// scopes are the functions of the unit that have a scope (see
	// segmentIndex.scopes), in offset order.
	scopes []*pyast.Node
	// keepsOnSelf is the unit's keepsOnSelf, once asked: 0 not yet, 1 no,
	// 2 yes. Asked while its version is built (see
	// unchangedUnits.withoutClassReaders), taken over with the share.
	keepsOnSelf int8
}

// keepsOnSelf is keepsOnSelf(f, n) for n, a unit of u (nil: none known),
// remembered by the unit's part.
func (u *indexUnits) keepsOnSelf(f *File, n *pyast.Node) bool {
	if u == nil {
		return keepsOnSelf(f, n)
	}
	i := unitAt(u.roots, n.Start())
	if i < 0 || u.roots[i] != n {
		return keepsOnSelf(f, n)
	}
	if u.parts[i].keepsOnSelf == 0 {
		u.parts[i].keepsOnSelf = 1
		if keepsOnSelf(f, n) {
			u.parts[i].keepsOnSelf = 2
		}
	}
	return u.parts[i].keepsOnSelf == 2
}

// keptRun is a unit taken over: where its share lies in the index built
// (runs), which unit of the last version's index it is (old), and the
// mover of its nodes.
type keptRun struct {
	runs  [listCount]run
	old   int
	mover pyast.Mover
}

// keptCursor finds, for items of one list asked in order, the run of a
// unit taken over that holds each (see keptRun).
type keptCursor struct {
	runs []keptRun
	list int
	next int // the first run not before the last item asked
}

// at returns the run taken over that holds item i of the list, if any;
// i must not be less than the last one asked.
func (c *keptCursor) at(i int) (keptRun, bool) {
	for c.next < len(c.runs) && int(c.runs[c.next].runs[c.list].to) <= i {
		c.next++
	}
	if c.next < len(c.runs) && int(c.runs[c.next].runs[c.list].from) <= i {
		return c.runs[c.next], true
	}
	return keptRun{}, false
}

// takenUnits are the units an index took over from the last version's
// index, prev (see segmentIndex.callIndex).
type takenUnits struct {
	prev *segmentIndex
	runs []keptRun
}

// movedIn returns the nodes of nodes (of the last version's index, in
// offset order) that lie in the unit taken over, moved.
func (k keptRun) movedIn(nodes []*pyast.Node) []*pyast.Node {
	var moved []*pyast.Node
	for _, n := range nodes {
		if m := k.mover.Move(n); m != nil {
			moved = append(moved, m)
		}
	}
	return moved
}

// noteScopes gives each unit the functions of scopes (an index's) that lie
// in it.
func (u *indexUnits) noteScopes(scopes map[*pyast.Node]*localScope) {
	for fn := range scopes {
		if i := unitAt(u.roots, fn.Start()); i >= 0 && fn.End() <= u.roots[i].End() {
			u.parts[i].scopes = append(u.parts[i].scopes, fn)
		}
	}
	for i := range u.parts {
		slices.SortFunc(u.parts[i].scopes, func(a, b *pyast.Node) int { return a.Start() - b.Start() })
	}
}

// takeOverScopes gives the index the scopes of a unit taken over: the
// last version's, under new ids (an answer remembered by a local key of
// the last version is never taken for this one's), their values moved,
// their names as views of the fresh segment's text; and the unit's
// bindings their scopes.
func (b *indexBuilder) takeOverScopes(k keptRun) {
	ix, prev := b.ix, b.kept.prev
	moveView := b.kept.moveView
	movedNames := func(set map[string]bool) map[string]bool {
		if set == nil {
			return nil
		}
		moved := make(map[string]bool, len(set))
		for name := range set {
			moved[moveView(name)] = true
		}
		return moved
	}
	fresh := map[*localScope]*localScope{}
	for _, oldFn := range prev.units.parts[k.old].scopes {
		was := prev.scopes[oldFn]
		s := ix.scopeOf(k.mover.Move(oldFn))
		fresh[was] = s
		s.global, s.nonlocal = movedNames(was.global), movedNames(was.nonlocal)
		if was.params != nil {
			s.params = make([]string, len(was.params))
			for i, name := range was.params {
				s.params[i] = moveView(name)
			}
		}
		// The names are a copy of their own (see nodesByName), the groups
		// the same: only the values move.
		s.names = nodesByName{names: was.names.names, groups: was.names.groups, nodes: make([]*pyast.Node, len(was.names.nodes))}
		for i, v := range was.names.nodes {
			s.names.nodes[i] = k.mover.Move(v)
		}
	}
	oldRun := prev.units.parts[k.old].runs[bindingsList]
	for i := range k.runs[bindingsList].to - k.runs[bindingsList].from {
		if was := prev.bindings[oldRun.from+i].scope; was != nil {
			ix.bindings[k.runs[bindingsList].from+i].scope = fresh[was]
		}
	}
}

// run is the part of a list from one index to another.
type run struct{ from, to int32 }

// The index's lists a unit has a run of.
const (
	callsList = iota
	loopsList
	assignmentsList
	commentsList
	noqaList
	definitionsList
	importsList
	deviceList
	functionsList
	classesList
	bindingsList
	declarationsList
	paramsList
	listCount
)

// lengths returns the lengths of the lists the builder has filled so far.
func (b *indexBuilder) lengths() (at [listCount]int32) {
	ix := b.ix
	for i, n := range [listCount]int{len(ix.calls), len(ix.loops), len(ix.assignments), len(ix.comments), len(ix.noqaComments),
		len(ix.definitions), len(ix.imports), len(ix.deviceCandidates), len(ix.functions), len(ix.classes), len(ix.bindings),
		len(b.declarations), len(b.params)} {
		at[i] = int32(n)
	}
	return at
}

// isClassStatement reports whether a top-level statement defines a class.
func isClassStatement(stmt *pyast.Node) bool {
	return stmt.Is("class_definition") || stmt.Is("decorated_definition") && stmt.Child("definition").Is("class_definition")
}

// keptUnits are the units of the last version's statement that an edit
// left alone, for its replacement's index.
type keptUnits struct {
	prev     *segmentIndex  // the last version's index of the statement
	old, cur *pyast.Segment // the statement's segments: the last version's, the fresh one
	tree     *pyast.Tree    // cur's
	// from maps a unit of cur to the one of prev.units it is.
	from map[*pyast.Node]int
	// Where the two texts are the same: their first prefix bytes and their
	// last suffix bytes; delta is how much longer cur's is.
	prefix, suffix, delta int
}

// newKeptUnits returns what the units paired (see pairUnchangedUnits) let
// the fresh statement's index take over from prev, the index of the one it
// replaces; nil for nothing.
func newKeptUnits(pairs *unchangedUnits, prev *segmentIndex, old *pyast.Segment, tree *pyast.Tree) *keptUnits {
	if pairs == nil || prev.units == nil {
		return nil
	}
	k := &keptUnits{prev: prev, old: old, cur: pairs.segment, tree: tree, from: make(map[*pyast.Node]int, len(pairs.cur)),
		prefix: pairs.prefix, suffix: pairs.suffix, delta: len(pairs.segment.Text()) - len(old.Text())}
	for i, was := range pairs.old {
		if j := unitAt(prev.units.roots, was.Start()); j >= 0 && prev.units.roots[j] == was {
			k.from[pairs.cur[i]] = j
		}
	}
	return k
}

// moveView returns s, a name kept by the last version's index (a view of
// the old segment's text, see Segment.Own, or a copy), as a view of the
// fresh segment's text at its place there.
func (k *keptUnits) moveView(s string) string {
	old := k.old.Text()
	if len(s) == 0 || len(old) == 0 {
		return s
	}
	at := uintptr(unsafe.Pointer(unsafe.StringData(s))) - uintptr(unsafe.Pointer(unsafe.SliceData(old)))
	if at >= uintptr(len(old)) {
		return s // a copy of its own
	}
	local := int(at)
	switch {
	case local+len(s) <= k.prefix:
	case local >= len(old)-k.suffix:
		local += k.delta
	default:
		return strings.Clone(s)
	}
	src := k.tree.Src
	return k.cur.Own(unsafe.String(&src[k.cur.Base+local], len(s)), src)
}

// unit indexes n, the next of the statement's units: takes its share over
// from the last version's index when the edit left it alone, walks it
// otherwise; and notes where its share lies.
func (b *indexBuilder) unit(n *pyast.Node) {
	ix := b.ix
	k := b.nextUnit
	b.nextUnit++
	before := b.lengths()
	part := &ix.units.parts[k]
	outer := ix.indent
	j, taken := b.kept.unitFor(n)
	var mover pyast.Mover
	if taken {
		was := b.kept.prev.units.parts[j]
		mover = pyast.NewMover(b.kept.prev.units.roots[j], n)
		b.takeOver(was, mover)
		part.local, part.other, part.indent, part.keepsOnSelf = was.local, was.other, was.indent, was.keepsOnSelf
		ix.units.takenOver++
	} else {
		ix.indent = 0
		ids, outside := len(*b.units.inFunctions), len(b.units.outside.hashes)
		clear(b.units.outside.recent[:]) // a unit's mentions are its own set
		b.walking = n
		pyast.Walk(n, b.visit)
		b.walking = nil
		part.indent = ix.indent
		b.unitRuns = append(b.unitRuns, unitRun{part: k, idsFrom: ids, idsTo: len(*b.units.inFunctions),
			outsideFrom: outside, outsideTo: len(b.units.outside.hashes)})
	}
	ix.indent = joinIndents(outer, part.indent)
	after := b.lengths()
	for i := range part.runs {
		part.runs[i] = run{before[i], after[i]}
	}
	if taken {
		b.keptRuns = append(b.keptRuns, keptRun{runs: part.runs, old: j, mover: mover})
	}
}

// unitFor returns the unit of the last version's index that n, a unit of
// the fresh statement, is (see newKeptUnits).
func (k *keptUnits) unitFor(n *pyast.Node) (int, bool) {
	if k == nil {
		return 0, false
	}
	j, ok := k.from[n]
	return j, ok
}

// takeOver appends to the index the share of a unit of the last
// version's index, its nodes moved by mv to their places in the fresh one.
func (b *indexBuilder) takeOver(part unitPart, mv pyast.Mover) {
	ix, prev, k := b.ix, b.kept.prev, b.kept
	nodes := func(into *[]*pyast.Node, from []*pyast.Node, r run) {
		for _, x := range from[r.from:r.to] {
			*into = append(*into, mv.Move(x))
		}
	}
	nodes(&ix.calls, prev.calls, part.runs[callsList])
	nodes(&ix.loops, prev.loops, part.runs[loopsList])
	nodes(&ix.assignments, prev.assignments, part.runs[assignmentsList])
	nodes(&ix.comments, prev.comments, part.runs[commentsList])
	nodes(&ix.noqaComments, prev.noqaComments, part.runs[noqaList])
	nodes(&ix.definitions, prev.definitions, part.runs[definitionsList])
	nodes(&ix.imports, prev.imports, part.runs[importsList])
	nodes(&ix.deviceCandidates, prev.deviceCandidates, part.runs[deviceList])
	r := part.runs[functionsList]
	for _, fn := range prev.functions[r.from:r.to] {
		ix.functions = append(ix.functions, namedNode{k.moveView(fn.name), mv.Move(fn.node)})
	}
	r = part.runs[classesList]
	for _, c := range prev.classes[r.from:r.to] {
		b.addClass(mv.Move(c.Node))
	}
	r = part.runs[bindingsList]
	for _, bd := range prev.bindings[r.from:r.to] {
		ix.bindings = append(ix.bindings, binding{name: k.moveView(bd.name), target: mv.Move(bd.target), value: mv.Move(bd.value), class: k.moveView(bd.class)})
	}
	r = part.runs[declarationsList]
	for _, st := range prev.units.declarations[r.from:r.to] {
		b.declarations = append(b.declarations, mv.Move(st))
	}
	r = part.runs[paramsList]
	for _, p := range prev.units.params[r.from:r.to] {
		names := make([]string, len(p.names))
		for i, name := range p.names {
			names[i] = k.moveView(name)
		}
		b.params = append(b.params, functionParams{mv.Move(p.fn), names})
	}
}

// joinIndents returns the indentation step (see segmentIndex.indent) of
// code made of two parts with these steps: tabs (-1) in either, otherwise
// the smaller step of those that indent.
func joinIndents(a, b int) int {
	switch {
	case a == -1 || b == -1:
		return -1
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// mentions returns the segment's mentions and those of them local only
// (see segmentIndex), deciding those of the units walked unit by unit
// (and keeping each unit's for the next version) and the rest's together.
func (b *indexBuilder) mentions() (mentions, localOnly []uint64) {
	ix := b.ix
	var own hashList
	local, other := ix.decideMentions(*b.inFunctions, &b.outside, &own)
	if ix.units == nil {
		return mergeMentions(local, other)
	}
	local, other = slices.Clone(local), slices.Clone(other)
	// Each unit's in turn, in two lists used again: a unit keeps copies.
	var outside hashList
	for _, u := range b.unitRuns {
		clear(outside.recent[:])
		clear(own.recent[:])
		outside.hashes = append(outside.hashes[:0], b.units.outside.hashes[u.outsideFrom:u.outsideTo]...)
		own.hashes = own.hashes[:0]
		part := &ix.units.parts[u.part]
		l, o := ix.decideMentions((*b.units.inFunctions)[u.idsFrom:u.idsTo], &outside, &own)
		part.local, part.other = slices.Clone(l), slices.Clone(o)
	}
	u := ix.units
	if k := b.kept; k != nil && k.prev.units.localCounts != nil && len(b.keptRuns) > 0 {
		// The last version's counts, less the parts it had that were not
		// taken over, plus the parts walked afresh: a merging of every
		// part's set took a twentieth of a keystroke in a class of
		// thousands of lines.
		taken := make([]bool, len(k.prev.units.parts))
		for _, r := range b.keptRuns {
			taken[r.old] = true
		}
		var goneLocal, goneOther, newLocal, newOther [][]uint64
		for j, part := range k.prev.units.parts {
			if !taken[j] {
				goneLocal, goneOther = append(goneLocal, part.local), append(goneOther, part.other)
			}
		}
		for _, r := range b.unitRuns {
			part := &u.parts[r.part]
			newLocal, newOther = append(newLocal, part.local), append(newOther, part.other)
		}
		u.localCounts = patchCounts(k.prev.units.localCounts, goneLocal, newLocal)
		u.otherCounts = patchCounts(k.prev.units.otherCounts, goneOther, newOther)
	} else {
		locals, others := make([][]uint64, len(u.parts)), make([][]uint64, len(u.parts))
		for i, part := range u.parts {
			locals[i], others[i] = part.local, part.other
		}
		u.localCounts, u.otherCounts = countsOf(locals, 1), countsOf(others, 1)
	}
	return mergeMentions(appendUnion(nil, local, hashesOf(u.localCounts)), appendUnion(nil, other, hashesOf(u.otherCounts)))
}

// countsOf returns how many of sets (each sorted, without repeats) hold
// each hash, times by, sorted by hash: merged two by two, level by level.
func countsOf(sets [][]uint64, by int32) []hashCount {
	counted := make([][]hashCount, len(sets))
	for i, set := range sets {
		counted[i] = make([]hashCount, len(set))
		for j, h := range set {
			counted[i][j] = hashCount{h, by}
		}
	}
	for len(counted) > 1 {
		merged := make([][]hashCount, 0, (len(counted)+1)/2)
		for i := 0; i < len(counted); i += 2 {
			if i+1 == len(counted) {
				merged = append(merged, counted[i])
			} else {
				merged = append(merged, addCounts(counted[i], counted[i+1]))
			}
		}
		counted = merged
	}
	if len(counted) == 0 {
		return nil
	}
	return counted[0]
}

// addCounts returns the sums of a's and b's counts (sorted by hash), less
// the hashes they come to zero.
func addCounts(a, b []hashCount) []hashCount {
	out := make([]hashCount, 0, max(len(a), len(b)))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && a[i].hash < b[j].hash:
			out = append(out, a[i])
			i++
		case i == len(a) || b[j].hash < a[i].hash:
			out = append(out, b[j])
			j++
		default:
			if n := a[i].n + b[j].n; n != 0 {
				out = append(out, hashCount{a[i].hash, n})
			}
			i, j = i+1, j+1
		}
	}
	return out
}

// patchCounts returns counts (see countsOf) less gone's sets, plus added's.
func patchCounts(counts []hashCount, gone, added [][]uint64) []hashCount {
	return addCounts(counts, addCounts(countsOf(added, 1), countsOf(gone, -1)))
}

// hashesOf returns the hashes of counts.
func hashesOf(counts []hashCount) []uint64 {
	out := make([]uint64, len(counts))
	for i, c := range counts {
		out[i] = c.hash
	}
	return out
}

// appendUnion appends to out the union of a and b, sorted lists without
// repeats.
func appendUnion(out, a, b []uint64) []uint64 {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			out = append(out, a[i])
			i++
		case b[j] < a[i]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i, j = i+1, j+1
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}
