package semantic

import (
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/vramlint/vramlint/analysis/pyast"
)

// The module's taint, segment by segment. A script's code is one scope
// across thousands of top-level statements, and its taint (which names
// hold history after each assignment) is a flow through all of them in
// order: computed afresh, 12 ms of every keystroke at 10,000 lines. But an
// assignment's events follow from its own statement, from the events of
// the names it looks up (Taint.last), from what it asked of the rest of
// the file (the asked keys carryOver judges) and from the module's grad
// switches (compared whole). So each segment's share is kept with what it
// looked up outside itself and what the answers were, and the next
// version recomputes a kept segment only when one of those answers
// differs, or what it asked changed: a keystroke recomputes its own
// statement and, in order, those that read a name whose events it
// changed.

// moduleTaintPart is one segment's share of the module's taint: the
// names its module-level assignments bind (their events lie in the
// segment), the look-ups outside the segment that computing them made,
// and what they asked. Immutable once built; versions share it while the
// segment's answers hold.
type moduleTaintPart struct {
	seg   *pyast.Segment
	names []string
	reads []taintRead
	// The asked keys, by their hashes (askedHash): a key that only
	// shares its hash with one changed recomputes the part for nothing.
	asked    []uint64
	askedSig askedSignature
}

// taintRead is a look-up of name at offset at and what it found: the last
// event before at, if any. A part holds while each look-up finds the same
// event, compared whole: an event of an edited statement has the new
// statement's nodes for its value, which provablyDetached follows, so
// whatever reads it is recomputed (and, if its own events come out the
// same, nothing after it).
type taintRead struct {
	name  string
	at    int
	found bool
	event taintEvent
}

// read records in the part being built a look-up it made, unless it found
// one of the part's own events (those are recomputed with it).
func (t *Taint) read(name string, at int, ev taintEvent, found bool) {
	p := t.part
	if found && ev.at > p.seg.Base {
		return
	}
	if n := len(p.reads); n > 0 && p.reads[n-1].at == at && p.reads[n-1].name == name {
		return // Tainted looks a name up twice
	}
	p.reads = append(p.reads, taintRead{name: t.intern(name), at: at, found: found, event: ev})
}

// assigned records that the part being built binds name (buildPart drops
// the repeats), returning the copy of name the taint keeps.
func (t *Taint) assigned(name string) string {
	name = t.intern(name)
	t.part.names = append(t.part.names, name)
	return name
}

// intern returns a copy of name, one per name while the taint is built:
// names outlive the text they were read from.
func (t *Taint) intern(name string) string {
	if kept, ok := t.interned[name]; ok {
		return kept
	}
	kept := strings.Clone(name)
	t.interned[kept] = kept
	return kept
}

// holds reports whether the part's events may be reused as they are in a
// version where the asked keys hashed in changed are stale (see
// carryOver) and t holds the events recomputed so far, of which those of
// the names in touched may differ from the last version's.
func (p *moduleTaintPart) holds(t *Taint, changed map[uint64]bool, changedSig askedSignature, touched map[string]bool) bool {
	if len(changed) > 0 && p.askedSig.mayShare(changedSig) && slices.ContainsFunc(p.asked, func(h uint64) bool { return changed[h] }) {
		return false
	}
	if len(touched) == 0 {
		return true
	}
	for _, r := range p.reads {
		if !touched[r.name] {
			continue
		}
		if ev, found := t.last(r.name, r.at); found != r.found || ev != r.event {
			return false
		}
	}
	return true
}

// KeepModuleTaint computes the module's taint, from the last version's,
// when nothing asked for it on this version: a keystroke in a function of
// a script keeps the verdicts on its module code (see ModuleCodeKept) and
// asks nothing of the module, and the next keystroke in module code would
// then compute the taint for the whole file instead of patching it.
func (f *File) KeepModuleTaint() {
	f.memos.Lock()
	pending := f.carried.moduleTaint != nil
	f.memos.Unlock()
	if pending {
		f.TaintOf(f.Tree.Root)
	}
}

// buildModuleTaint computes the module's taint into t, segment by segment,
// reusing the parts of the last version's that still hold.
func (f *File) buildModuleTaint(t *Taint) {
	t.gradSwitches = f.gradSwitches
	t.interned = map[string]string{}
	defer func() { t.interned = nil }()
	var last *taintFacts
	if !t.plain {
		f.memos.Lock()
		last, f.carried.moduleTaint = f.carried.moduleTaint, nil
		f.memos.Unlock()
	}
	// The module's no-grad switches decide for the statements after them
	// (gradDisabledBefore); anything else the parts read is in their
	// look-ups and asked keys. (carryOver passes no taint on to a version
	// of another structure: it judges no names then.)
	if last == nil || !slices.Equal(last.gradSwitches, f.gradSwitches) {
		for i := range f.Tree.Segments {
			t.buildPart(i)
		}
		return
	}
	// Pair the segments with the last version's parts (both in offset
	// order); the parts left unpaired are those of segments gone.
	lastPart := make([]*moduleTaintPart, len(f.Tree.Segments))
	inLast := segmentsByOffset{old: make([]*pyast.Segment, len(last.parts))}
	for j, p := range last.parts {
		inLast.old[j] = p.seg
	}
	paired := make([]bool, len(last.parts))
	for i, seg := range f.Tree.Segments {
		if j := inLast.find(seg); j >= 0 {
			lastPart[i], paired[j] = last.parts[j], true
		}
	}
	var gone []*moduleTaintPart
	for j, p := range last.parts {
		if !paired[j] {
			gone = append(gone, p)
		}
	}

	t.events = maps.Clone(last.events)
	t.owned = map[string]bool{}
	defer func() { t.owned = nil }()
	touched := map[string]bool{} // names whose events may differ from the last version's
	for _, p := range gone {
		for _, name := range p.names {
			t.drop(name, p.seg)
			touched[name] = true
		}
	}
	changed := make(map[uint64]bool, len(f.carried.changed))
	changedSig := askedSignature{taken: true}
	for key := range f.carried.changed {
		h := askedHash(key)
		changed[h] = true
		changedSig.add(h)
	}
	fresh := f.carried.fresh // in order
	for i, seg := range f.Tree.Segments {
		p, isFresh := lastPart[i], len(fresh) > 0 && fresh[0] == i
		if isFresh {
			fresh = fresh[1:]
		} else if p == nil {
			continue // kept, and binding nothing at module level
		}
		if p != nil && p.holds(t, changed, changedSig, touched) {
			t.parts = append(t.parts, p)
			continue
		}
		if p != nil {
			for _, name := range p.names {
				t.drop(name, seg)
			}
		}
		built := t.buildPart(i)
		// The names whose events came out otherwise: all of a new
		// segment's, those of a kept one that changed.
		for _, part := range []*moduleTaintPart{p, built} {
			if part == nil {
				continue
			}
			for _, name := range part.names {
				if p == nil || !slices.Equal(eventsIn(last.events[name], seg), eventsIn(t.events[name], seg)) {
					touched[name] = true
				}
			}
		}
	}
}

// buildPart computes the events of the module-level assignments of the
// i-th segment, after those of the segments before it, and adds its part
// to t's when it binds a name (nil otherwise).
func (t *Taint) buildPart(i int) *moduleTaintPart {
	f := t.f
	p := &moduleTaintPart{seg: f.Tree.Segments[i]}
	outer := t.asked
	t.part, t.asked = p, asked{}
	defer func() { t.part, t.asked = nil, outer }()
	for _, a := range f.indexes[i].assignments {
		if InScope(a, f.Tree.Root) {
			t.assign(a)
		}
	}
	if len(p.names) == 0 {
		return nil
	}
	slices.Sort(p.names)
	p.names = slices.Clip(slices.Compact(p.names))
	p.asked = make([]uint64, 0, len(t.asked))
	p.askedSig.taken = true
	for key := range t.asked {
		h := askedHash(key)
		p.asked = append(p.asked, h)
		p.askedSig.add(h)
	}
	t.parts = append(t.parts, p)
	return p
}

// eventsIn returns the events of events (in offset order) that lie in seg.
func eventsIn(events []taintEvent, seg *pyast.Segment) []taintEvent {
	lo, hi := eventRange(events, seg)
	return events[lo:hi]
}

// eventRange returns where seg's events lie in events: [lo, hi).
func eventRange(events []taintEvent, seg *pyast.Segment) (lo, hi int) {
	lo = sort.Search(len(events), func(i int) bool { return events[i].at > seg.Base })
	hi = sort.Search(len(events), func(i int) bool { return events[i].at > seg.Base+seg.Len() })
	return lo, hi
}

// drop removes name's events in seg, copying its list first if the last
// version's taint shares it.
func (t *Taint) drop(name string, seg *pyast.Segment) {
	events := t.events[name]
	lo, hi := eventRange(events, seg)
	switch {
	case lo == hi:
		return
	case hi-lo == len(events):
		// No key for a name no longer assigned: typing a name leaves one
		// for each of its prefixes.
		delete(t.events, name)
	default:
		kept := make([]taintEvent, 0, len(events)-(hi-lo)+1)
		t.events[name] = append(append(kept, events[:lo]...), events[hi:]...)
	}
	t.owned[name] = true
}

// insert adds e to name's events (a name the part owns a copy of) at its
// place in offset order, copying the list first if the last version's
// taint shares it.
func (t *Taint) insert(name string, e taintEvent) {
	events := t.events[name]
	if !t.owned[name] {
		events = slices.Grow(slices.Clone(events), 1)
		t.owned[name] = true
	}
	i := sort.Search(len(events), func(i int) bool { return events[i].at > e.at })
	t.events[name] = slices.Insert(events, i, e)
}
