package semantic

import (
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
// one of its statements reads a changed name, or a name or attribute that
// such a statement binds or changes (`y = helper` then `self.other = y`),
// or runs under one (its condition): only the methods so reached are
// added, with the classes around them (what a class's methods do is what
// calls to its instances do, a model's forward: see ForwardSummaryOfCall)
// and the names and attributes their reached statements bind. In
// optimum-intel's model_patcher.py (560 segments), one patcher class
// mentioning an edited function reached 138 segments when every
// definition of a segment reached was added: its `__exit__` and
// `__init__`, which other patchers name, and from those every chain their
// methods bind. 6 ms an edit, 1.5 since.
type definitionsReached struct {
	edited Focus                   // the segments the edit made: their changes are carryOver's
	whole  map[*pyast.Segment]bool // every definition added
	// The methods of the class statements reached, each with what a
	// changed name reaches in it so far.
	methods map[*pyast.Segment][]*methodReach
	// sought are the hashes of every name added so far (see
	// File.mentioning).
	sought map[uint64]bool
}

// methodReach is what changed names reach in one method of a class
// statement: its statements and clauses (token groups), which of them
// read a changed name or a name one of those binds, and those names.
type methodReach struct {
	node    *pyast.Node
	groups  []tokenGroup
	bindsAt map[*pyast.Node]int // an assignment's group
	tainted map[uint64]bool     // what hit groups bind, as mentions hash it
	added   bool                // its definitions' names added
}

// tokenGroup is the tokens of one statement or clause (an if's condition,
// a for's targets and iterable, a def's header) without those of the
// statements and clauses under it.
type tokenGroup struct {
	parent int  // the group around it, -1 for the method's own
	scope  bool // a function or class definition: a hit under it changes it
	// reads are the hashes of what it mentions (as the segment's index
	// hashes them), writes of what it binds or may change: assignment and
	// loop targets, a method call's receiver, a definition's name.
	reads, writes []uint64
	hit           bool
}

// add adds to names (through add) what may do otherwise in seg (indexed
// by ix), a segment that mentions one of the names sought.
func (r *definitionsReached) add(f *File, seg *pyast.Segment, ix *segmentIndex, add func(string)) {
	if r.edited[seg] || r.whole[seg] {
		return
	}
	methods, ok := r.methods[seg]
	if !ok {
		if len(seg.Nodes) == 1 && isClassStatement(seg.Nodes[0]) {
			for _, u := range outermostFunctions(seg.Nodes[0]) {
				methods = append(methods, &methodReach{node: u})
			}
		}
		if r.methods == nil {
			r.methods = map[*pyast.Segment][]*methodReach{}
		}
		r.methods[seg] = methods
	}
	if len(methods) == 0 || r.mentionedOutside(f, seg.Nodes[0], methods) {
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
		if m.groups == nil {
			m.group(f)
		}
		newly := m.reach(r.sought)
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
		for _, b := range ix.bindings {
			if b.scope != nil || !within(b.target) {
				continue
			}
			// A binding whose statement no changed name reaches binds
			// what it did.
			if g, ok := m.bindsAt[assignmentOf(b.target)]; !ok || newly[g] {
				add(f.bindingKey(b))
			}
		}
	}
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

// mentionedOutside reports whether stmt, a class statement, mentions one
// of the names sought outside its methods: its bases, decorators, class
// attributes, which every method may read. Its own name is no mention.
func (r *definitionsReached) mentionedOutside(f *File, stmt *pyast.Node, methods []*methodReach) bool {
	next := 0 // methods come in the walk's order
	found := false
	pyast.Walk(stmt, func(n *pyast.Node) bool {
		if found {
			return false
		}
		if next < len(methods) && n == methods[next].node {
			next++
			return false
		}
		if n.Field() == "name" && n.Parent().Is("class_definition") {
			return true
		}
		if h, ok := mentionHash(f, n); ok && r.sought[h] {
			found = true
		}
		return true
	})
	return found
}

// mentionHash returns the hash of n as the segment's index hashes its
// mentions (see buildSegmentIndex); false when n is no mention.
func mentionHash(f *File, n *pyast.Node) (uint64, bool) {
	if !n.Is("identifier", "attribute") || n.Field() == "name" && n.Parent().Is("function_definition") || calledOnSuper(n, f.Tree.Src) {
		return 0, false
	}
	text := f.Text(n)
	class := ""
	if n.Kind() == "attribute" {
		class = chainClass(text, n, f.Tree.Src)
	}
	return attributeKeyHash(text, class), true
}

// group splits the method into its token groups.
func (m *methodReach) group(f *File) {
	m.bindsAt = map[*pyast.Node]int{}
	m.tainted = map[uint64]bool{}
	var visit func(n *pyast.Node, g int)
	visit = func(n *pyast.Node, g int) {
		m.noteWrites(f, n, g)
		if h, ok := mentionHash(f, n); ok && !boundOnly(n) {
			m.groups[g].reads = append(m.groups[g].reads, h)
		}
		for c := range n.Children() {
			if isTokenGroup(c) {
				m.groups = append(m.groups, tokenGroup{parent: g, scope: c.Is("function_definition", "class_definition")})
				visit(c, len(m.groups)-1)
			} else {
				visit(c, g)
			}
		}
	}
	m.groups = append(m.groups, tokenGroup{parent: -1, scope: true})
	visit(m.node, 0)
}

// boundOnly reports whether n is a plain assignment's target, or one of
// its targets: bound there, not read (`self.fn = None` does the same
// whatever else binds self.fn).
func boundOnly(n *pyast.Node) bool {
	p := n.Parent()
	if p.Is("pattern_list", "tuple_pattern", "list_pattern") {
		n, p = p, p.Parent()
	}
	return n.Field() == "left" && p.Is("assignment")
}

// isTokenGroup reports whether n is a statement or a clause of one (not
// of a comprehension): its own tokens are a token group.
func isTokenGroup(n *pyast.Node) bool {
	kind := n.Kind()
	return strings.HasSuffix(kind, "_statement") || strings.HasSuffix(kind, "_clause") && kind != "for_in_clause" && kind != "if_clause" ||
		n.Is("function_definition", "class_definition", "decorated_definition")
}

// noteWrites adds to group g what node n, one of its tokens, binds or
// may change.
func (m *methodReach) noteWrites(f *File, n *pyast.Node, g int) {
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
		// A method may change its receiver (`xs.append(loss)`).
		if fn := n.Child("function"); fn.Is("attribute") {
			m.writeTarget(f, fn.Child("object"), g)
		}
	case "function_definition", "class_definition":
		m.writeTarget(f, n.Child("name"), g)
	case "import_statement", "import_from_statement":
		m.writeTarget(f, n, g)
	}
}

// writeTarget adds to group g's writes what binding or changing target
// changes: each name and attribute chain in it, but self and cls (an
// attribute of theirs is written as the chain).
func (m *methodReach) writeTarget(f *File, target *pyast.Node, g int) {
	if target == nil {
		return
	}
	pyast.Walk(target, func(n *pyast.Node) bool {
		if n.Is("identifier") && n.Field() != "attribute" {
			if text := f.Text(n); text != "self" && text != "cls" {
				m.groups[g].writes = append(m.groups[g].writes, nameHash(text))
			}
		} else if n.Is("attribute") {
			h, _ := mentionHash(f, n)
			m.groups[g].writes = append(m.groups[g].writes, h)
		}
		return true
	})
}

// reach marks the groups that read one of sought, or a name a marked
// group writes, or lie under a marked group (what runs under a changed
// condition), with the definitions around those, to a fixed point.
// It returns the groups newly marked, nil for none.
func (m *methodReach) reach(sought map[uint64]bool) map[int]bool {
	var newly map[int]bool
	for changed := true; changed; {
		changed = false
		for i := range m.groups {
			g := &m.groups[i]
			if g.hit || !(g.parent >= 0 && m.groups[g.parent].hit || m.readsAny(g.reads, sought)) {
				continue
			}
			g.hit, changed = true, true
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

func (m *methodReach) readsAny(reads []uint64, sought map[uint64]bool) bool {
	for _, h := range reads {
		if sought[h] || m.tainted[h] {
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
