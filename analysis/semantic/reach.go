package semantic

import (
	"cmp"
	"slices"
	"strings"

	"github.com/vramlint/vramlint/analysis/pyast"
)

// definitionsReached are the definitions of the segments File.mentioning
// reached whose names it added (what they do may differ, so may what
// their callers do), kept across its rounds.
//
// A segment that mentions a changed name has every definition added,
// except a class statement mentioning it only in its methods (the class
// statement is otherwise as it was). There a method does as it did unless
// one of its statements reads a changed name, or a name or attribute
// that such a statement binds or stores into (`y = helper` then
// `self.other = y`; `items.append(helper)` then `self.items = items`),
// or runs in a with statement or under decorators that do (no_grad or
// not): only the methods so reached are added, with the classes around
// them (what a class's methods do is what calls to its instances do, a
// model's forward: see ForwardSummaryOfCall) and the names and
// attributes their reached statements bind. An if's condition changes no
// binding (bindings are read whatever the path to them), and a plain
// assignment's target is no read. In optimum-intel's model_patcher.py
// (560 segments), one patcher class mentioning an edited function
// reached 138 segments when every definition of a segment reached was
// added: its `__exit__` and `__init__`, which other patchers name, and
// from those every chain their methods bind.
type definitionsReached struct {
	edited Focus                   // the segments the edit made: their changes are carryOver's
	whole  map[*pyast.Segment]bool // every definition added
	// The methods of the class statements reached, each with what a
	// changed name reaches in it so far.
	methods map[*pyast.Segment][]*methodReach
}

// methodReach is what changed names reach in one method of a class
// statement: which of its token groups read a changed name or a name one
// of those binds, and those names.
type methodReach struct {
	*methodReads
	hit     []bool
	under   []bool          // hit as under a governing group hit (see tokenGroup)
	tainted map[uint64]bool // what hit groups bind, as mentions hash it
	added   bool            // its definitions' names added
}

// classReads are what a class statement's methods read and bind, by
// token group, and what the statement reads outside them: found once for
// a segment index (see segmentIndex.classReads), which the versions of a
// buffer share while the statement is unchanged.
type classReads struct {
	methods []*methodReads
	outside []uint64 // reads outside the methods: bases, decorators, class attributes
}

// methodReads are a method's token groups (see classReads).
type methodReads struct {
	node   *pyast.Node
	groups []tokenGroup
	reads  []uint64 // every group's, sorted, each once
	// bindings are the module's names and attribute chains the method
	// binds: each an index into the segment index's bindings and the
	// group of its assignment.
	bindings []methodBinding
	// bindsAt is each assignment's group, while the groups are found.
	bindsAt map[*pyast.Node]int
}

// methodBinding is a binding of a method's (see methodReads.bindings);
// group -1 when its assignment was not found, taken as reached.
type methodBinding struct{ at, group int }

// tokenGroup is the tokens of one statement or clause (an if's condition,
// a for's targets and iterable, a def's header) without those of the
// statements and clauses under it.
type tokenGroup struct {
	parent int  // the group around it, -1 for the method's own
	scope  bool // a function or class definition: a hit under it changes it
	// governs: a with statement or a decorated definition, whose own
	// tokens change what the statements under it are (under no_grad or
	// not); an if's condition does not change what a statement binds.
	governs bool
	// reads are the hashes of what it mentions (as the segment's index
	// hashes them) but plain assignments' targets, writes of what it
	// binds or may change: assignment and loop targets, a method call's
	// receiver, a definition's name.
	reads, writes []uint64
}

// add adds to names (through add) what may do otherwise in seg (indexed
// by ix), a segment that mentions the names hashed as mentioned, those of
// a round of mentioning: a method's statements were weighed against the
// rounds before when the segment mentioned their names.
func (r *definitionsReached) add(f *File, seg *pyast.Segment, ix *segmentIndex, mentioned []uint64, add func(string)) {
	if r.edited[seg] || r.whole[seg] {
		return
	}
	var outside []uint64
	methods, ok := r.methods[seg]
	if cr := ix.classReads(f, seg); cr != nil {
		outside = cr.outside
		if !ok {
			for _, m := range cr.methods {
				methods = append(methods, &methodReach{methodReads: m, hit: make([]bool, len(m.groups)), under: make([]bool, len(m.groups)), tainted: map[uint64]bool{}})
			}
			if r.methods == nil {
				r.methods = map[*pyast.Segment][]*methodReach{}
			}
			r.methods[seg] = methods
		}
	}
	if len(methods) == 0 || slices.ContainsFunc(outside, func(h uint64) bool { return slices.Contains(mentioned, h) }) {
		if r.whole == nil {
			r.whole = map[*pyast.Segment]bool{}
		}
		r.whole[seg] = true
		for _, d := range ix.functions {
			add(d.name)
		}
		for _, c := range ix.classes {
			add(c.Name)
		}
		return
	}
	for _, m := range methods {
		newly := m.reach(mentioned)
		if newly == nil {
			continue
		}
		u := m.node
		within := func(n *pyast.Node) bool { return u.Start() <= n.Start() && n.End() <= u.End() }
		if !m.added {
			m.added = true
			for _, d := range ix.functions {
				if within(d.node) {
					add(d.name)
				}
			}
			for _, c := range ix.classes {
				if within(c.Node) || c.Node.Start() <= u.Start() && u.End() <= c.Node.End() {
					add(c.Name)
				}
			}
		}
		// A binding whose statement no changed name reaches binds what
		// it did.
		for _, b := range m.bindings {
			if b.group < 0 || newly[b.group] {
				add(f.bindingKey(ix.bindings[b.at]))
			}
		}
	}
}

// weighsMethods reports whether add may add some methods of seg and not
// others, from the names it mentions: a class statement reached.
func (r *definitionsReached) weighsMethods(seg *pyast.Segment) bool {
	return !r.edited[seg] && !r.whole[seg] && len(seg.Nodes) == 1 && isClassStatement(seg.Nodes[0])
}

// assignmentOf returns the assignment whose target holds n, or nil.
func assignmentOf(n *pyast.Node) *pyast.Node {
	for ; n != nil; n = n.Parent() {
		if n.Is("assignment", "augmented_assignment") {
			return n
		}
	}
	return nil
}

// classReads returns what the segment's class statement reads and binds
// (nil for a segment that is no class statement, or one without
// methods), found on first use.
func (ix *segmentIndex) classReads(f *File, seg *pyast.Segment) *classReads {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if !ix.classReadsDone {
		ix.classReadsDone = true
		if len(seg.Nodes) == 1 && isClassStatement(seg.Nodes[0]) {
			if methods := outermostFunctions(seg.Nodes[0]); len(methods) > 0 {
				ix.classReadsFound = readClass(f, seg.Nodes[0], methods, ix.bindings)
			}
		}
	}
	return ix.classReadsFound
}

// readClass splits a class statement's methods (outermostFunctions, in
// order) into token groups, in one walk, and gives each the bindings of
// the statement's (its index's) that are its own.
func readClass(f *File, stmt *pyast.Node, methods []*pyast.Node, bindings []binding) *classReads {
	c := &classReads{}
	next := 0 // methods come in the walk's order
	pyast.Walk(stmt, func(n *pyast.Node) bool {
		if next < len(methods) && n == methods[next] {
			m := &methodReads{node: n, bindsAt: map[*pyast.Node]int{}}
			m.groups = append(m.groups, tokenGroup{parent: -1, scope: true, governs: n.Is("decorated_definition")})
			m.visit(f, n, 0)
			for _, g := range m.groups {
				m.reads = append(m.reads, g.reads...)
			}
			slices.Sort(m.reads)
			m.reads = slices.Compact(m.reads)
			c.methods = append(c.methods, m)
			next++
			return false
		}
		// A class's own name is no read of it.
		if h, ok := mentionHash(f, n); ok && !(n.Field() == "name" && n.Parent().Is("class_definition")) {
			c.outside = append(c.outside, h)
		}
		return true
	})
	for i, b := range bindings {
		if b.scope != nil {
			continue // a function's own name: no other statement reads it
		}
		k, _ := slices.BinarySearchFunc(c.methods, b.target.Start(), func(m *methodReads, at int) int { return cmp.Compare(m.node.End(), at+1) })
		if k == len(c.methods) || c.methods[k].node.Start() > b.target.Start() {
			continue // the class's own code, not a method's
		}
		m := c.methods[k]
		g, ok := m.bindsAt[assignmentOf(b.target)]
		if !ok {
			g = -1 // not found: taken as reached
		}
		m.bindings = append(m.bindings, methodBinding{i, g})
	}
	for _, m := range c.methods {
		m.bindsAt = nil
	}
	return c
}

// mentionHash returns the hash of n as the segment's index hashes its
// mentions (see buildSegmentIndex); false when n is no mention.
func mentionHash(f *File, n *pyast.Node) (uint64, bool) {
	if !n.Is("identifier", "attribute") || !isMention(n, f.Tree.Src) {
		return 0, false
	}
	text := f.Text(n)
	class := ""
	if n.Kind() == "attribute" {
		class = chainClass(text, n, f.Tree.Src)
	}
	return attributeKeyHash(text, class), true
}

// visit adds n, a node of group g, and what is under it to the method's
// groups.
func (m *methodReads) visit(f *File, n *pyast.Node, g int) {
	if boundOnly(n) && isDottedName(n) {
		return // nothing in it read
	}
	m.noteWrites(f, n, g)
	if h, ok := mentionHash(f, n); ok {
		m.groups[g].reads = append(m.groups[g].reads, h)
	}
	for c := range n.Children() {
		if isTokenGroup(c) {
			m.groups = append(m.groups, tokenGroup{parent: g, scope: c.Is("function_definition", "class_definition"), governs: c.Is("with_statement", "decorated_definition")})
			m.visit(f, c, len(m.groups)-1)
		} else {
			m.visit(f, c, g)
		}
	}
}

// boundOnly reports whether n is a plain assignment's target, or one of
// its targets: bound there, not read (`self.fn = None` does the same
// whatever else binds self.fn or self).
func boundOnly(n *pyast.Node) bool {
	p := n.Parent()
	if p.Is("pattern_list", "tuple_pattern", "list_pattern") {
		n, p = p, p.Parent()
	}
	return n.Field() == "left" && p.Is("assignment")
}

// isDottedName reports whether n is a name or an attribute chain of
// names (`self.encoder.weight`), no call or subscript in it.
func isDottedName(n *pyast.Node) bool {
	for ; n.Is("attribute"); n = n.Child("object") {
	}
	return n.Is("identifier")
}

// isTokenGroup reports whether n is a statement or a clause of one (not
// of a comprehension): its own tokens are a token group.
func isTokenGroup(n *pyast.Node) bool {
	kind := n.Kind()
	return strings.HasSuffix(kind, "_statement") || strings.HasSuffix(kind, "_clause") && kind != "for_in_clause" && kind != "if_clause" && kind != "with_clause" ||
		n.Is("function_definition", "class_definition", "decorated_definition")
}

// noteWrites adds to group g what node n, one of its tokens, binds or
// may change.
func (m *methodReads) noteWrites(f *File, n *pyast.Node, g int) {
	switch n.Kind() {
	case "assignment", "augmented_assignment":
		m.bindsAt[n] = g
		m.writeTarget(f, n.Child("left"), g)
	case "for_statement":
		m.writeTarget(f, n.Child("left"), g)
	case "named_expression":
		m.writeTarget(f, n.Child("name"), g)
	case "as_pattern":
		m.writeTarget(f, n.Child("alias"), g)
	case "delete_statement":
		for c := range n.Children() {
			m.writeTarget(f, c, g)
		}
	case "call":
		// A method that stores into its receiver (`xs.append(loss)`, as
		// File.storesOf reads them) changes it.
		if fn := n.Child("function"); fn.Is("attribute") && storingMethods[f.Text(fn.Child("attribute"))] {
			m.writeTarget(f, fn.Child("object"), g)
		}
	case "function_definition", "class_definition":
		m.writeTarget(f, n.Child("name"), g)
	case "import_statement", "import_from_statement":
		m.writeTarget(f, n, g)
	}
}

// writeTarget adds to group g's writes what binding or changing target
// changes: a name (but self and cls, whose attributes are written as
// chains), an attribute chain, a subscript's container, each of a
// pattern's targets.
func (m *methodReads) writeTarget(f *File, target *pyast.Node, g int) {
	switch {
	case target == nil:
	case target.Is("identifier"):
		if text := f.Text(target); text != "self" && text != "cls" {
			m.groups[g].writes = append(m.groups[g].writes, nameHash(text))
		}
	case target.Is("attribute"):
		h, _ := mentionHash(f, target)
		m.groups[g].writes = append(m.groups[g].writes, h)
	case target.Is("subscript"):
		m.writeTarget(f, target.Child("value"), g)
	default:
		for _, c := range target.NamedChildren() {
			m.writeTarget(f, c, g)
		}
	}
}

// reach marks the groups that read one of sought, or a name a marked
// group writes, or lie under a marked group that governs them (a with
// statement's context, a definition's decorators: every group under it),
// with the definitions around those, to a fixed point.
// It returns the groups newly marked, nil for none.
func (m *methodReach) reach(sought []uint64) map[int]bool {
	// Most methods of a class reached read none of the names: one look
	// each. (No group left unmarked reads what marked ones taint: the
	// last call went to a fixed point.)
	if !slices.ContainsFunc(sought, func(h uint64) bool {
		_, found := slices.BinarySearch(m.reads, h)
		return found
	}) {
		return nil
	}
	var newly map[int]bool
	for changed := true; changed; {
		changed = false
		for i := range m.groups {
			g := &m.groups[i]
			if m.hit[i] {
				continue
			}
			m.under[i] = g.parent >= 0 && m.hit[g.parent] && (m.groups[g.parent].governs || m.under[g.parent])
			if !m.under[i] && !m.readsAny(g.reads, sought) {
				continue
			}
			m.hit[i], changed = true, true
			if newly == nil {
				newly = map[int]bool{}
			}
			newly[i] = true
			m.taint(g.writes)
			for a := g.parent; a >= 0; a = m.groups[a].parent {
				if m.groups[a].scope {
					m.taint(m.groups[a].writes)
				}
			}
		}
	}
	return newly
}

func (m *methodReach) readsAny(reads, sought []uint64) bool {
	for _, h := range reads {
		if m.tainted[h] || slices.Contains(sought, h) {
			return true
		}
	}
	return false
}

func (m *methodReach) taint(writes []uint64) {
	for _, h := range writes {
		m.tainted[h] = true
	}
}
