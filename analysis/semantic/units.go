package semantic

import (
	"bytes"
	"slices"
	"sort"

	"github.com/vramlint/vramlint/analysis/pyast"
)

// A keystroke in a method of a class of thousands of lines replaces the
// class's whole top-level statement, and carryOver judged every call and
// every function in both versions of it (whether each call runs under
// no-grad, feeds training, follows an eval(); whether each function's
// summary is the same): half a second a key in a class of 32,000 lines.
// But the class's other methods are the same code in the same place in
// both versions, and what carryOver asks of them follows from their own
// code and from what the file answers about names, summaries and calls,
// which the edited method changes only through what carryOver finds in
// that method itself. So the methods an edit left alone are paired with
// their old selves and skipped; the edited one is judged, then the
// methods that mention a function that does otherwise now or came or
// went, or a name bound anew, and those that define a function whose calls
// changed, and so on; a module-level mode call come or gone judges them
// all.

// pairUnits is false only in tests, for what carryOver finds without the
// pairing to compare with.
var pairUnits = true

// unchangedUnits are the methods of an edited class that the edit left
// alone: old[i], of the removed version of the statement, is cur[i], of
// the fresh one; both in offset order.
type unchangedUnits struct {
	old, cur []*pyast.Node
	f        *File // cur's
	// sought are the names split looked for already.
	sought map[string]bool
	// segment is cur's segment (the fresh statement's).
	segment *pyast.Segment
	// The two versions' texts of the statement are the same in their
	// first prefix bytes and their last suffix bytes.
	prefix, suffix int
}

// counterpart returns, for n, a node of one of the old units, the node at
// its place in the unit's new self; nil when n is in none. Asked once the
// judgement is done, of the units still paired then: an answer about n
// read n's unit's code, which is the same, its own names, which only that
// code binds (a method shares no names with the class's other methods),
// and what the answer asked of the rest of the file, which carryOver
// weighs as it does for the answers of the segments both versions share:
// such an answer, not stale, holds for the counterpart. Answers holding
// nodes of their own (taints) are not carried so.
func (u *unchangedUnits) counterpart(n *pyast.Node) *pyast.Node {
	if u == nil {
		return nil
	}
	if i := unitAt(u.old, n.Start()); i >= 0 {
		return pyast.Counterpart(u.old[i], u.cur[i], n)
	}
	return nil
}

// unitAt returns the index of the unit (of units, in offset order) that
// holds offset at, or -1.
func unitAt(units []*pyast.Node, at int) int {
	i := sort.Search(len(units), func(i int) bool { return units[i].End() > at })
	if i < len(units) && units[i].Start() <= at {
		return i
	}
	return -1
}

// split takes out of u the functions that mention one of mentioned (a
// function that does otherwise now, or came or went, see
// changedDefinitions) or define one of defined (a function whose calls
// changed), not sought before, and returns them as units of their own
// (nil for none): they are judged, u's are not.
func (u *unchangedUnits) split(mentioned, defined map[string]bool) *unchangedUnits {
	mentioned, defined = u.unsought(mentioned, ""), u.unsought(defined, "def ")
	if len(mentioned) == 0 && len(defined) == 0 {
		return nil
	}
	var sought [][]byte
	for name := range mentioned {
		sought = append(sought, []byte(name))
	}
	for name := range defined {
		sought = append(sought, []byte(name))
	}
	out := &unchangedUnits{f: u.f}
	kept := 0
	for i, n := range u.cur {
		// Most functions' text holds none of the names: no walk for them.
		text := u.f.Tree.Src[n.Start():n.End()]
		if slices.ContainsFunc(sought, func(name []byte) bool { return bytes.Contains(text, name) }) && mentionsOrDefines(u.f, n, mentioned, defined) ||
			len(defined) > 0 && definesAround(u.f, n, defined) {
			out.old, out.cur = append(out.old, u.old[i]), append(out.cur, n)
			continue
		}
		u.old[kept], u.cur[kept] = u.old[i], n
		kept++
	}
	u.old, u.cur = u.old[:kept], u.cur[:kept]
	if len(out.cur) == 0 {
		return nil
	}
	return out
}

// unsought returns the names not sought before (as kind: "" for those
// mentioned, "def " for those defined), and marks them sought.
func (u *unchangedUnits) unsought(names map[string]bool, kind string) map[string]bool {
	var fresh map[string]bool
	for name := range names {
		if !u.sought[kind+name] {
			if fresh == nil {
				fresh = map[string]bool{}
			}
			fresh[name] = true
			u.sought[kind+name] = true
		}
	}
	return fresh
}

// withoutClassReaders takes out of u the methods whose summaries read
// their class's other methods: what a method keeps of its arguments in a
// container on self, or sums into an attribute, holds unless a method of
// the class pops the container, hands it to NumPy or backpropagates it
// (see storedParameters, sumsFirstArgument). Such a method is the same
// code, but its summary may differ after an edit of another method: it is
// judged, as the edited one is. Those are a class's few recorders.
func (u *unchangedUnits) withoutClassReaders() *unchangedUnits {
	if u == nil {
		return nil
	}
	// The index's units remember the answer (see unitPart.keepsOnSelf):
	// asked of every method paired, on every keystroke.
	var units *indexUnits
	if i := u.f.segmentNumber(u.segment); i >= 0 {
		units = u.f.indexes[i].units
	}
	return u.without(func(_ int, n *pyast.Node) bool { return units.keepsOnSelf(u.f, n) })
}

// without takes out of u the pairs (old[i], n) that judged says are to be
// judged; nil when none is left.
func (u *unchangedUnits) without(judged func(i int, n *pyast.Node) bool) *unchangedUnits {
	kept := 0
	for i, n := range u.cur {
		if judged(i, n) {
			continue
		}
		u.old[kept], u.cur[kept] = u.old[i], n
		kept++
	}
	u.old, u.cur = u.old[:kept], u.cur[:kept]
	if kept == 0 {
		return nil
	}
	return u
}

// keepsOnSelf reports whether the summary of fn, a method, reads its
// class's other methods: it appends or adds a parameter to a container on
// self or assigns one to a subscript of it (storedParameters), or adds its
// first argument into an attribute in place (sumsFirstArgument). The
// conditions under which those two look at the class, looser where they
// are cheaper to test.
func keepsOnSelf(f *File, fn *pyast.Node) bool {
	if fn.Is("decorated_definition") {
		fn = fn.Child("definition")
	}
	if !fn.Is("function_definition") || !isMethod(fn) {
		return false
	}
	params := plainParameters(f, fn)
	if len(params) < 2 {
		return false
	}
	self, isParam := params[0], map[string]bool{}
	for _, p := range params[1:] {
		isParam[p] = true
	}
	onSelf := func(e *pyast.Node) bool {
		if e.Is("subscript") {
			e = e.Child("value")
		}
		return e.Is("attribute") && f.Text(e.Child("object")) == self
	}
	for _, c := range f.CallsIn(fn) {
		switch f.MethodName(c) {
		case "append", "add", "appendleft":
			if arg := f.Arg(c, "", 0); arg.Is("identifier") && isParam[f.Text(arg)] && onSelf(Receiver(c)) {
				return true
			}
		}
	}
	for _, a := range f.AssignmentsIn(fn) {
		left, right := a.Child("left"), a.Child("right")
		switch {
		case a.Kind() == "assignment" && left.Is("subscript") && right.Is("identifier") && isParam[f.Text(right)] && onSelf(left):
			return true
		case a.Kind() == "augmented_assignment" && left.Is("attribute") && f.Text(left.Child("object")) == self && addsAsItIs(f, right, params[1]):
			return true
		}
	}
	return false
}

// mentionsOrDefines reports whether an identifier in n (a name, or the
// last part of an attribute chain) is one of mentioned, or a function
// defined in n (n itself included) is named one of defined: one walk for
// both. A method called on super() is no mention of the file's method of
// that name (it never resolves to it, see resolveCall), as the segment
// index has it.
func mentionsOrDefines(f *File, n *pyast.Node, mentioned, defined map[string]bool) bool {
	found := false
	pyast.Walk(n, func(m *pyast.Node) bool {
		found = found || m.Is("identifier") && mentioned[f.Text(m)] && !calledOnSuper(m, f.Src) ||
			len(defined) > 0 && m.Is("function_definition") && defined[f.Text(m.Child("name"))]
		return !found
	})
	return found
}

// definesAround reports whether a function around n (the one a stray
// method lies in, see strayMethods) is named one of defined: whether
// n's calls run under no-grad reads that function's callers (see
// inNoGrad), as it reads n's own. None is around a class's method.
func definesAround(f *File, n *pyast.Node, defined map[string]bool) bool {
	for fn := EnclosingFunction(n); fn != nil; fn = EnclosingFunction(fn) {
		if fn.Is("function_definition") && defined[f.Text(fn.Child("name"))] {
			return true
		}
	}
	return false
}

// withoutEnclosingReaders takes out of u the stray methods (see
// strayMethods) that read a name the function they lie in decides in
// either version (its parameters, the names it assigns, those it declares
// global or nonlocal; see localScope.decides): the edit may have changed
// what such a name is bound to, and what the method's answers read with
// it. curIx and prevIx are the statement's indexes in the two versions. A
// method reads the names the function around it decides where its own
// scopes (its own, those of functions in it) decide none of them, its
// decorators always; its own name is bound there, not read.
func (u *unchangedUnits) withoutEnclosingReaders(prevIx, curIx *segmentIndex) *unchangedUnits {
	if u == nil {
		return nil
	}
	return u.without(func(i int, n *pyast.Node) bool {
		around := EnclosingFunction(n)
		return around != nil && readsAround(u.f, curIx, n, around, prevIx.scopes[EnclosingFunction(u.old[i])], curIx.scopes[around])
	})
}

// readsAround reports whether an identifier in n (of ix's statement) that
// no scope of n's decides is decided by one of scopes (around's, the
// function n lies in, in either version; nil for none).
func readsAround(f *File, ix *segmentIndex, n, around *pyast.Node, scopes ...*localScope) bool {
	decidedAround := func(name string) bool {
		for _, s := range scopes {
			if s != nil {
				if _, decided := s.decides(name); decided {
					return true
				}
			}
		}
		return false
	}
	reads := false
	pyast.Walk(n, func(m *pyast.Node) bool {
		if reads {
			return false
		}
		if !m.Is("identifier") {
			return true
		}
		switch p := m.Parent(); {
		case p.Is("attribute") && p.Child("attribute") == m, p.Is("keyword_argument") && p.Child("name") == m:
			return false // no name read
		case p.Is("function_definition", "class_definition") && p.Child("name") == m:
			return false // bound, in the scope around it
		}
		name := f.Text(m)
		if !decidedAround(name) {
			return false
		}
		reads = true
		for fn := EnclosingFunction(m); fn != nil && fn != around; fn = EnclosingFunction(fn) {
			if s := ix.scopes[fn]; s != nil {
				if _, decided := s.decides(name); decided {
					reads = false
					break
				}
			}
		}
		return false
	})
	return reads
}

// skips reports whether n, a node of the removed (side 0) or fresh (side
// 1) statement, lies in one of its functions the edit left alone.
func (u *unchangedUnits) skips(side int, n *pyast.Node) bool {
	if u == nil {
		return false
	}
	units := u.old
	if side == 1 {
		units = u.cur
	}
	return unitAt(units, n.Start()) >= 0
}

// pairUnchangedUnits returns the functions left alone by an edit that
// replaced one statement, old (a segment of prev) with cur (of f), when
// the edit lies inside one of the statement's outermost functions, or
// among the class's own statements outside them (see amongOwnStatements):
// the others, found at the same place (counted from the statement's start
// before the edit, from its end after it) with the same shape, are the
// same code in the same context; so are the methods a bracket left open
// in the edited function put inside it, in both versions (see
// strayMethods). nil when there is nothing to pair.
func pairUnchangedUnits(prev *File, old *pyast.Segment, f *File, cur *pyast.Segment) *unchangedUnits {
	if len(old.Nodes) != 1 || len(cur.Nodes) != 1 {
		return nil
	}
	// Most keystrokes are in a function, which holds no methods: nothing
	// to compare then.
	oldUnits, curUnits := outermostFunctions(old.Nodes[0]), outermostFunctions(cur.Nodes[0])
	if len(oldUnits) < 2 || len(curUnits) < 2 {
		return nil
	}
	oldText, curText := old.Text(), cur.Text()
	prefix, suffix := pyast.CommonEnds(oldText, curText)
	// Offsets from the segments' starts are offsets in their texts.
	oldBase, curBase := old.Base, cur.Base
	delta := len(curText) - len(oldText)
	// The edit must lie inside one method in both versions: then the
	// statement's own lines (a class's header, a with around it) are as
	// they were, and every other method's context with them.
	inside := func(units []*pyast.Node, base, changedEnd int) *pyast.Node {
		for _, u := range units {
			if u.Start()-base <= prefix && u.End()-base >= changedEnd {
				return u
			}
		}
		return nil
	}
	editedOld := inside(oldUnits, oldBase, len(oldText)-suffix)
	editedCur := inside(curUnits, curBase, len(curText)-suffix)
	// An edit right after a method's last token that the method takes in
	// (the first letter of a statement typed after its last line) or
	// leaves out (that letter deleted) is inside it in one version only:
	// the method with the same start in the other, ending before the edit
	// with only blanks between, and no more than blanks changed there, is
	// its other self. Taken for a method come or gone, such a key judged
	// every method of the class: 10-15 ms in one of 9,000 lines.
	switch {
	case editedOld == nil && editedCur != nil && blank(oldText[prefix:len(oldText)-suffix]):
		editedOld = endingBefore(oldUnits, oldBase, editedCur.Start()-curBase, oldText, prefix)
	case editedCur == nil && editedOld != nil && blank(curText[prefix:len(curText)-suffix]):
		editedCur = endingBefore(curUnits, curBase, editedOld.Start()-oldBase, curText, prefix)
	}
	switch {
	case editedOld != nil && editedCur != nil:
		if editedOld.Start()-oldBase != editedCur.Start()-curBase {
			return nil
		}
		// The methods a bracket left open in the edited one took in are
		// units too, in both versions (see strayMethods).
		oldUnits = withStrays(oldUnits, editedOld, oldText, oldBase)
		curUnits = withStrays(curUnits, editedCur, curText, curBase)
	case editedOld != nil || editedCur != nil:
		return nil // a method came or went
	case !amongOwnStatements(old.Nodes[0], oldUnits, oldBase, prefix, len(oldText)-suffix) || !amongOwnStatements(cur.Nodes[0], curUnits, curBase, prefix, len(curText)-suffix):
		return nil
	}
	byStart := make(map[int]*pyast.Node, len(oldUnits))
	for _, u := range oldUnits {
		byStart[u.Start()-oldBase] = u
	}
	pairs := &unchangedUnits{f: f, sought: map[string]bool{}, segment: cur, prefix: prefix, suffix: suffix}
	for _, u := range curUnits {
		from, to := u.Start()-curBase, u.End()-curBase
		var was *pyast.Node
		switch {
		case u == editedCur:
			continue
		case to <= prefix:
			was = byStart[from]
		case from >= len(curText)-suffix:
			was = byStart[from-delta]
		}
		// A method the mirror copied from the last version's is the same
		// shape: comparing every node of every method was a twentieth of
		// a keystroke in a class of thousands of lines.
		// The line a method starts on starts as it did too: the step of
		// its body's indentation is measured from it (see File.indent),
		// and a fix that writes a line above the method copies it. An
		// edit that took the blank line above `    def evaluate(...)` and
		// indented it to seven spaces left the method's text as it was,
		// and its step of four, where a fresh analysis finds one.
		if was == nil || was == editedOld || !cur.CopiedFrom(old, was, u) && !pyast.SameShape(was, u) || !sameContext(was, old.Nodes[0], u, cur.Nodes[0]) ||
			!bytes.Equal(lineBefore(oldText, was.Start()-oldBase), lineBefore(curText, from)) {
			continue
		}
		pairs.old, pairs.cur = append(pairs.old, was), append(pairs.cur, u)
	}
	if len(pairs.cur) == 0 {
		return nil
	}
	// Both lists follow the statement's order, which the edit kept.
	return pairs
}

// lineBefore returns the text of the line holding offset at of text, up
// to at.
func lineBefore(text []byte, at int) []byte {
	return text[bytes.LastIndexByte(text[:at], '\n')+1 : at]
}

// endingBefore returns the unit of units (a statement's, at base in text)
// that starts at start (from base) and ends at or before at with only
// blanks between; nil when there is none.
func endingBefore(units []*pyast.Node, base, start int, text []byte, at int) *pyast.Node {
	i := unitAt(units, base+start)
	if i < 0 || units[i].Start()-base != start || units[i].End()-base > at || !blank(text[units[i].End()-base:at]) {
		return nil
	}
	return units[i]
}

// blank reports whether text holds only spaces, tabs and line breaks.
func blank(text []byte) bool {
	return len(bytes.Trim(text, " \t\f\r\n")) == 0
}

// withStrays returns units (in offset order) with edited, one of them,
// followed by its stray methods (see strayMethods): they lie inside it,
// and all of them before the unit after it. text is the statement's, at
// base.
func withStrays(units []*pyast.Node, edited *pyast.Node, text []byte, base int) []*pyast.Node {
	strays := strayMethods(edited, text, base)
	if len(strays) == 0 {
		return units
	}
	i := slices.Index(units, edited)
	return slices.Concat(units[:i+1], strays, units[i+1:])
}

// strayMethods returns the statements of fn's body (fn an outermost
// function of a statement, see outermostFunctions, with its decorators)
// that define a function and begin a line at fn's own column or left of
// it, in offset order: Python never reads such a def as fn's, but
// tree-sitter's recovery from a bracket left open in fn (`history = {`,
// a first entry and a comma typed, the brace not closed yet) makes the
// class's methods after it statements of fn's body, and a keystroke there
// judged every one of them with fn: 25-35 ms a key in a class of 9,000
// lines. They are the methods they were, paired as the others are, but
// for what they read of fn: the names fn binds (see
// withoutEnclosingReaders) and fn's callers (see split). text is the
// statement's, at base.
func strayMethods(fn *pyast.Node, text []byte, base int) []*pyast.Node {
	def := fn
	if def.Is("decorated_definition") {
		def = def.Child("definition")
	}
	body := def.Child("body")
	if body == nil {
		return nil
	}
	// column is n's column when only blanks come before it on its line,
	// -1 otherwise.
	column := func(n *pyast.Node) int {
		at := n.Start() - base
		from := bytes.LastIndexByte(text[:at], '\n') + 1
		if len(bytes.TrimLeft(text[from:at], " \t")) > 0 {
			return -1
		}
		return at - from
	}
	own := column(fn)
	if own < 0 {
		return nil
	}
	var strays []*pyast.Node
	for c := range body.Children() {
		isDef := c.Is("function_definition") || c.Is("decorated_definition") && c.Child("definition").Is("function_definition")
		if at := column(c); isDef && at >= 0 && at <= own {
			strays = append(strays, c)
		}
	}
	return strays
}

// outermostFunctions returns the functions in stmt that no other function
// in it holds (each with its decorators: the decorated definition), in
// offset order: a class's methods, those of a class nested in it. None
// for a function: the functions nested in it share its names (a closure
// reads what it binds, a nonlocal binds it from another), which carryOver
// does not weigh; the methods of a class do not share the class body's.
func outermostFunctions(stmt *pyast.Node) []*pyast.Node {
	if stmt.Is("function_definition") || stmt.Is("decorated_definition") && !stmt.Child("definition").Is("class_definition") {
		return nil
	}
	var units []*pyast.Node
	var visit func(n *pyast.Node)
	visit = func(n *pyast.Node) {
		for c := range n.Children() {
			switch {
			case c.Is("function_definition"):
				units = append(units, c)
			case c.Is("decorated_definition") && c.Child("definition").Is("function_definition"):
				units = append(units, c)
			default:
				visit(c)
			}
		}
	}
	visit(stmt)
	return units
}

// amongOwnStatements reports whether bytes [lo, hi) of the statement root
// (offsets from base) lie among the class's own statements, where an edit
// leaves every outermost function (units, in offset order, see
// outermostFunctions) and what is around it as it was: inside a statement
// of one of its blocks that is no function and holds none
// (`_reads_return_copies = False` among a class's methods, a docstring),
// or between the statements of a block. Not in a statement's own tokens
// (a class's header, an if's condition), which every function under it
// reads. A class attribute such a statement binds is a binding changed,
// as one bound in a method is (see carryOver).
func amongOwnStatements(root *pyast.Node, units []*pyast.Node, base, lo, hi int) bool {
	// The units are disjoint: one that meets a statement is it, or in it.
	holdsUnit := func(n *pyast.Node) bool {
		i := sort.Search(len(units), func(i int) bool { return units[i].End() > n.Start() })
		return i < len(units) && units[i].Start() < n.End()
	}
	for n := root; ; {
		var in *pyast.Node // n's child that holds the bytes
		for c := range n.Children() {
			if c.Start()-base <= lo && c.End()-base >= hi {
				in = c
				break
			}
		}
		switch {
		case in == nil && n.Is("block"):
			// Between its statements, or across several: none may be or
			// hold a function.
			for c := range n.Children() {
				if c.Start()-base < hi && c.End()-base > lo && holdsUnit(c) {
					return false
				}
			}
			return true
		case in == nil:
			return false
		case n.Is("block") && !holdsUnit(in):
			return true
		case n.Is("block"):
			if i := unitAt(units, in.Start()); i >= 0 && units[i] == in {
				return false // a function: inside would have found it
			}
		}
		n = in // a class or an if holding methods: its own tokens, or deeper
	}
}

// sameContext reports whether a (under rootA) and b (under rootB) have
// ancestors of the same kinds, in the same fields, starting at the same
// offsets from their roots.
func sameContext(a, rootA, b, rootB *pyast.Node) bool {
	for {
		a, b = a.Parent(), b.Parent()
		if a == nil || b == nil {
			return false
		}
		if a.Kind() != b.Kind() || a.Field() != b.Field() || a.Start()-rootA.Start() != b.Start()-rootB.Start() {
			return false
		}
		if a == rootA || b == rootB {
			return a == rootA && b == rootB
		}
	}
}
