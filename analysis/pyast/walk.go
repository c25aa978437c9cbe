package pyast

/*
#cgo CFLAGS: -I${SRCDIR}/../../internal/go-tree-sitter
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

// tree-sitter's C library is compiled into the binary by
// github.com/smacker/go-tree-sitter, whose copy is in
// internal/go-tree-sitter: its public API, and the private headers that
// say how a tree is laid out, which the walk below reads directly.
#include "api.h"
#include "subtree.h"
#include "language.h"
#include "tree.h"

typedef TSNode VLNode;

// VLFlat is one node of a walk. key is the subtree's identity in its
// tree: tree-sitter's Subtree value (TSNode.id points at it), a pointer
// to the subtree's data, shared by every version of the tree that reuses
// the subtree, or for a small leaf the leaf's data itself. reused is the
// index in the previous version's table (VLSeen) of the same subtree, whose
// nodes the walk did not visit again, or -1.
typedef struct {
	uint64_t key;
	uint32_t start, end;
	int32_t parent, reused;
	uint16_t symbol, field;
	uint8_t named, missing;
} VLFlat;

// VLSeen is one node of a statement's previous mirror: its key, its start
// and the number of nodes in its subtree (itself included), in preorder.
typedef struct {
	uint64_t key;
	uint32_t start, count;
} VLSeen;

// VLEdit says where a statement's text changed since the version seen
// describes: bytes [lo, hi) of the new text replaced bytes [lo, hi-delta)
// of the old one. hint is where in seen the last search ended.
typedef struct {
	const VLSeen *seen;
	uint32_t n, lo, hi, hint;
	int32_t delta;
} VLEdit;

// vl_find returns the index in e->seen (sorted by start, as a preorder is)
// of the node that starts at start and has key, or -1. The walk asks for
// starts in order, so the search gallops on from where the last one ended:
// a binary search of the whole table missed the cache at every step.
static int32_t vl_find(VLEdit *e, uint32_t start, uint64_t key) {
	const VLSeen *seen = e->seen;
	uint32_t n = e->n, lo = 0, hi = n;
	if (e->hint < n && seen[e->hint].start < start) {
		// Everything up to the hint starts before start: find a bound
		// past it in steps that double.
		lo = e->hint + 1;
		hi = lo;
		for (uint32_t step = 1; hi < n && seen[hi].start < start; step *= 2) {
			lo = hi + 1;
			hi = step < n - hi ? hi + step : n;
		}
	}
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (seen[mid].start < start) lo = mid + 1; else hi = mid;
	}
	e->hint = lo;
	for (; lo < n && seen[lo].start == start; lo++) {
		if (seen[lo].key == key) return (int32_t)lo;
	}
	return -1;
}

// vl_reused returns the index in e->seen of the node with key at
// [start, end), unchanged since then and not to be walked again, or -1. A
// subtree outside the edit whose key and position (shifted by the edit,
// after it) match is the same subtree: tree-sitter shares an unchanged
// subtree between versions, and never changes one that is shared.
static int32_t vl_reused(VLEdit *e, uint64_t key, uint32_t start, uint32_t end) {
	if (e == NULL || e->n == 0) return -1;
	uint32_t then;
	if (end < e->lo) then = start;
	else if (start > e->hi) then = start - (uint32_t)e->delta;
	else return -1;
	return vl_find(e, then, key);
}

static uint32_t vl_count(VLNode root) { return ts_node_descendant_count(root); }

// VLFrame is a node on the walk's path whose children are being visited:
// tree-sitter's own cursor keeps the same (TreeCursorEntry), and the walk
// does what ts_tree_cursor_goto_first_child, _goto_next_sibling,
// _current_node and _current_field_id do, in one pass. A hidden node (a
// rule's helper, a repetition) is not in the output: its children are
// its visible parent's, as the cursor shows them.
typedef struct {
	const Subtree *children;
	uint32_t count, next;   // how many children, the next one to visit
	uint32_t structural;    // the next one's index among the non-extra
	uint32_t position;      // where the next one starts (its padding skipped)
	const TSSymbol *aliases;
	const TSFieldMapEntry *fields, *fields_end;
	int32_t parent;         // index in the output of the nearest visible node
	// field: for a hidden node, the field its children without one of
	// their own are given. The cursor finds a node's field by walking up
	// through its hidden ancestors to the first that has one; carried
	// down, it costs nothing per node where the walk up cost the depth of
	// the repetition tree a long list is held in.
	uint16_t field;
	bool hidden;
} VLFrame;

// vl_field_of returns the field a production gives its child at the
// structural index, or 0.
static uint16_t vl_field_of(const VLFrame *f, uint32_t structural) {
	for (const TSFieldMapEntry *m = f->fields; m < f->fields_end; m++) {
		if (!m->inherited && m->child_index == structural) return m->field_id;
	}
	return 0;
}

// vl_enter fills frame with what visiting the children of sub, a node
// with children that starts at position, needs.
static void vl_enter(VLFrame *frame, const TSLanguage *lang, Subtree sub, uint32_t position, int32_t parent, bool hidden, uint16_t field) {
	uint32_t production = sub.ptr->production_id;
	frame->children = ts_subtree_children(sub);
	frame->count = sub.ptr->child_count;
	frame->next = 0;
	frame->structural = 0;
	frame->position = position;
	frame->aliases = ts_language_alias_sequence(lang, production);
	ts_language_field_map(lang, production, &frame->fields, &frame->fields_end);
	frame->parent = parent;
	frame->hidden = hidden;
	frame->field = field;
}

// vl_walk writes the nodes below root in preorder, each with the index of
// its parent, and returns how many it wrote (at most cap). With e, it
// does not go below a node that e's version already had (see vl_reused).
static uint32_t vl_walk(VLNode root, VLFlat *out, uint32_t cap, VLEdit *e) {
	if (cap == 0) return 0;
	const TSLanguage *lang = root.tree->language;
	Subtree sub = *(const Subtree *)root.id;
	out[0] = (VLFlat){
		.key = *(const uint64_t *)root.id,
		.start = ts_node_start_byte(root),
		.end = ts_node_end_byte(root),
		.parent = -1, .reused = -1,
		.symbol = ts_node_symbol(root),
		.named = ts_node_is_named(root),
		.missing = ts_node_is_missing(root),
	};
	uint32_t n = 1;
	if (ts_subtree_child_count(sub) == 0) return n;
	uint32_t depth = 0, room = 64;
	VLFrame *path = malloc(room * sizeof(VLFrame));
	if (path == NULL) return n;
	vl_enter(&path[0], lang, sub, out[0].start, 0, false, 0);
	for (;;) {
		VLFrame *f = &path[depth];
		if (f->next == f->count) {
			if (depth == 0) break;
			depth--;
			continue;
		}
		const Subtree *childp = &f->children[f->next];
		Subtree child = *childp;
		uint32_t start = f->position;
		uint32_t end = start + ts_subtree_size(child).bytes;
		bool extra = ts_subtree_extra(child);
		TSSymbol alias = 0;
		uint16_t field = 0;
		if (!extra) {
			if (f->aliases) alias = f->aliases[f->structural];
			field = vl_field_of(f, f->structural);
			if (!field && f->hidden) field = f->field;
			f->structural++;
		}
		f->next++;
		f->position = end;
		if (f->next < f->count) f->position += ts_subtree_padding(f->children[f->next]).bytes;
		bool visible = ts_subtree_visible(child) || alias != 0;
		int32_t parent = f->parent;
		bool descend = ts_subtree_child_count(child) > 0;
		if (visible) {
			if (n == cap) break;
			uint64_t key = *(const uint64_t *)childp;
			int32_t reused = vl_reused(e, key, start, end);
			out[n] = (VLFlat){
				.key = key,
				.start = start, .end = end,
				.parent = parent, .reused = reused,
				.symbol = ts_language_public_symbol(lang, alias ? alias : ts_subtree_symbol(child)),
				.field = field,
				.named = alias ? ts_language_symbol_metadata(lang, alias).named : ts_subtree_named(child),
				.missing = ts_subtree_missing(child),
			};
			parent = (int32_t)n++;
			descend = descend && reused < 0;
		} else {
			// The cursor goes into a hidden node only when it has visible
			// children; a hidden leaf (a newline, an indent) is not shown.
			descend = ts_subtree_visible_child_count(child) > 0;
		}
		if (!descend) continue;
		if (++depth == room) {
			VLFrame *grown = realloc(path, 2 * room * sizeof(VLFrame));
			if (grown == NULL) break;
			path = grown;
			room *= 2;
		}
		// A hidden extra passes no field down: the cursor stops its walk up
		// at an extra node.
		vl_enter(&path[depth], lang, child, start, parent, !visible, visible || extra ? 0 : field);
	}
	free(path);
	return n;
}

typedef struct {
	VLNode node;
	uint32_t start, end;
	bool has_error;
} VLTop;

// vl_top lists the visible children of root (the module's top-level
// statements), at most cap of them, and returns how many there are.
static uint32_t vl_top(VLNode root, VLTop *out, uint32_t cap) {
	TSTreeCursor c = ts_tree_cursor_new(root);
	uint32_t n = 0;
	if (ts_tree_cursor_goto_first_child(&c)) {
		do {
			if (n < cap) {
				VLNode child = ts_tree_cursor_current_node(&c);
				out[n].node = child;
				out[n].start = ts_node_start_byte(child);
				out[n].end = ts_node_end_byte(child);
				// Also a MISSING node the walk does not see (a hidden
				// _newline).
				out[n].has_error = ts_node_has_error(child);
			}
			n++;
		} while (ts_tree_cursor_goto_next_sibling(&c));
	}
	ts_tree_cursor_delete(&c);
	return n;
}
*/
import "C"

import (
	"cmp"
	"runtime"
	"slices"
	"sync/atomic"
	"unsafe"

	sitter "github.com/smacker/go-tree-sitter"
)

// topLevel lists the top-level statements of a parsed module whose text
// starts at origin in the source.
func topLevel(ts *sitter.Tree, origin int) []top {
	root := rootOf(ts)
	tops := make([]C.VLTop, 64)
	n := C.vl_top(root, &tops[0], C.uint32_t(len(tops)))
	if int(n) > len(tops) {
		tops = make([]C.VLTop, n)
		n = C.vl_top(root, &tops[0], n)
	}
	out := make([]top, n)
	for i := range out {
		t := &tops[i]
		out[i] = top{node: t.node, start: origin + int(t.start), end: origin + int(t.end), origin: origin, hasError: bool(t.has_error)}
	}
	return out
}

// wholeTop is the root of ts as one top-level statement, for a region
// that does not parse as a module at all (its root is an ERROR).
func wholeTop(ts *sitter.Tree, origin int) top {
	root := rootOf(ts)
	return top{node: root, start: origin + int(C.ts_node_start_byte(root)), end: origin + int(C.ts_node_end_byte(root)), origin: origin, hasError: true}
}

// top is a top-level statement: its tree-sitter node and byte range.
type top struct {
	node       C.VLNode
	start, end int  // in the source
	origin     int  // where the text the node was parsed from starts
	hasError   bool // it holds an ERROR or MISSING node
}

func rootOf(ts *sitter.Tree) C.VLNode {
	// The binding's Node begins with the C TSNode it wraps.
	return *(*C.VLNode)(unsafe.Pointer(ts.RootNode()))
}

// flatten lists the nodes below n in preorder. The walk runs in C, in
// one cgo call: through the binding, every step would cross cgo and go
// through the binding's node cache. With from, it does not go below the
// nodes the previous version's mirror has (they are marked reused).
//
// The nodes are written to scratch, grown when needed: callers copy them
// into Go nodes or hash them right after, and use the buffer again.
func flatten(n C.VLNode, scratch *[]C.VLFlat, from *reuse) []C.VLFlat {
	count := uint32(C.vl_count(n))
	if from == nil || len(from.seen) == 0 {
		flat := grow(scratch, count)
		return flat[:C.vl_walk(n, &flat[0], C.uint32_t(count), nil)]
	}
	// The table is Go memory that the argument points to.
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&from.seen[0])
	// Such a walk writes a few nodes of the count: a buffer for all of
	// them would cost more to clear than the walk, and it grows only when
	// one of that size is full.
	for size := min(count, reuseWalkFirst); ; size = count {
		flat := grow(scratch, size)
		edit := C.VLEdit{seen: &from.seen[0], n: C.uint32_t(len(from.seen)), lo: C.uint32_t(from.lo), hi: C.uint32_t(from.hi), delta: C.int32_t(from.delta)}
		if k := uint32(C.vl_walk(n, &flat[0], C.uint32_t(size), &edit)); k < size || size == count {
			return flat[:k]
		}
	}
}

// reuseWalkFirst is the size of a walk's buffer when the walk skips the
// nodes an edit left alone: enough for a table of thousands of entries.
var reuseWalkFirst uint32 = 1 << 14

// grow returns scratch's first n entries, reallocated when it has fewer.
func grow(scratch *[]C.VLFlat, n uint32) []C.VLFlat {
	if uint32(cap(*scratch)) < n {
		*scratch = make([]C.VLFlat, n+n/2)
	}
	return (*scratch)[:n]
}

// scratch is a buffer for flatten.
type scratch = []C.VLFlat

// flatNode is a node as flatten lists it.
type flatNode = C.VLFlat

// seenNodes describes the nodes of a statement's mirror, in its order, for
// the mirror of its next version (see VLSeen).
type seenNodes = []C.VLSeen

// reuse is what a statement mirrored again after an edit can take from
// its previous mirror: prior, the segment it was (one statement, with its
// seen nodes), and the edit: bytes [lo, hi) of the new text replaced bytes
// [lo, hi-delta) of prior's. seen is prior's seen table (see
// Segment.keptTree).
type reuse struct {
	prior         *Segment
	seen          seenNodes
	lo, hi, delta int
}

// reusedNodes counts the nodes mirrors copied from an earlier version's
// rather than walked again (for tests).
var reusedNodes atomic.Int64

// The shape of a statement hashes its structure: every node's offsets
// from the statement's start, its parent's index in preorder, its kind,
// field and whether it is named. Two statements with the same text and
// shape have the same mirror. shapeOf hashes it from a walk, shapeOfMirror
// from a mirror; the two agree.
const (
	shapeBasis = 14695981039346656037
	shapePrime = 1099511628211
)

func shapeStep(h uint64, start, end int, parent int32, kind, field uint16, named bool) uint64 {
	var n uint64
	if named {
		n = 1
	}
	for _, v := range [...]uint64{uint64(start), uint64(end), uint64(uint32(parent)), uint64(kind)<<32 | uint64(field)<<16 | n} {
		h = (h ^ v) * shapePrime
	}
	return h
}

// shapeOf hashes the structure of the statements tops, offsets taken from
// start (in the source); buf is a buffer for flatten.
func shapeOf(tops []top, start int, buf *scratch) uint64 {
	h := uint64(shapeBasis)
	for _, t := range tops {
		h = shapeOfWalk(h, flatten(t.node, buf, nil), start-t.origin)
	}
	return h
}

// shapeOfWalk adds to h the shape of a statement's walk (see flatten),
// offsets taken from origin.
func shapeOfWalk(h uint64, flat []C.VLFlat, origin int) uint64 {
	for i := range flat {
		f := &flat[i]
		kind, field, named := nodeOf(f)
		h = shapeStep(h, int(f.start)-origin, int(f.end)-origin, int32(f.parent), kind, field, named)
	}
	return h
}

// shapeOfMirror adds to h the shape of the statement mirrored in nodes,
// offsets taken from origin (in Tree.Src).
func shapeOfMirror(h uint64, nodes []Node, origin int) uint64 {
	for i := range nodes {
		n := &nodes[i]
		parent := int32(-1)
		if i > 0 {
			parent = int32(i) - n.parentAt
		}
		h = shapeStep(h, n.Start()-origin, n.End()-origin, parent, n.kind, n.field, n.Named)
	}
	return h
}

// indexIn returns the index in nodes of n, which is one of them.
func indexIn(nodes []Node, n *Node) int32 {
	return int32((uintptr(unsafe.Pointer(n)) - uintptr(unsafe.Pointer(&nodes[0]))) / unsafe.Sizeof(Node{}))
}

// nodeOf returns the kind, field and namedness of a walked node, as its
// mirror has them.
func nodeOf(f *C.VLFlat) (kind, field uint16, named bool) {
	if int(f.symbol) < len(kindNames)-2 { // the grammar's; ERROR and MISSING follow
		kind = uint16(f.symbol)
	} else {
		kind = kindOf(language.SymbolName(sitter.Symbol(f.symbol))) // ERROR is symbol 65535
	}
	if int(f.field) < len(fieldNames) {
		field = uint16(f.field)
	}
	named = f.named != 0
	if f.missing != 0 {
		// A MISSING node is the parser's repair, not text the user wrote.
		kind, named = kindNumbers["MISSING"], false
	}
	return kind, field, named
}

// mirror copies the walked nodes flat into Go values, in one array in
// preorder, adding shift to every offset and hanging them below the Root
// numbered root (see newRoot).
// A node the walk marked reused brings its subtree from from.prior's
// mirror, shifted; runs lists those subtrees. With keep, it also returns
// the nodes' seen table, for the next version's mirror.
func mirror(flat []C.VLFlat, shift int, root int32, from *reuse, keep bool, spares *spareTexts) (nodes []Node, seen seenNodes, runs []copiedRun) {
	size := len(flat)
	var prior []Node
	var priorSeen seenNodes
	// at[i] is where flat[i] goes when the walk reused nodes (a reused node
	// is followed by its subtree); without, flat[i] goes at i, and a whole
	// file's open allocates no such index.
	var at []int32
	if from != nil {
		priorSeen = from.seen
		prior = unsafe.Slice(from.prior.Nodes[0], len(priorSeen))
		at = make([]int32, len(flat))
		size = 0
		for i := range flat {
			at[i] = int32(size)
			if r := flat[i].reused; r >= 0 {
				size += int(priorSeen[r].count)
			} else {
				size++
			}
		}
	}
	place := func(i int32) int32 {
		if at == nil {
			return i
		}
		return at[i]
	}
	if keep {
		// Perhaps spares, written over (see mirrorArrays).
		nodes, seen = spares.mirrorArrays(size)
	} else {
		nodes = make([]Node, size)
	}
	// last[p] is 1 + the index of the last child of flat[p] linked so far
	// (0: none yet): the nodes come in preorder, so each one follows its
	// parent and its earlier siblings.
	last := make([]int32, len(flat))
	copied := 0
	for i := range flat {
		f := &flat[i]
		k := place(int32(i))
		node := &nodes[k]
		if r := int(f.reused); r >= 0 {
			copyReused(nodes, int(k), prior, r, int(priorSeen[r].count), int32(int(f.start)+shift)-prior[r].start)
			node.nextAt = 0 // its siblings are this version's
			runs = append(runs, copiedRun{at: k, from: int32(r), count: int32(priorSeen[r].count)})
			if keep {
				copy(seen[k:], priorSeen[r:r+int(priorSeen[r].count)])
				for j := range priorSeen[r].count {
					seen[k+int32(j)].start += f.start - priorSeen[r].start
				}
			}
			copied += int(priorSeen[r].count)
		} else if keep {
			// The array may be a spare, holding an earlier mirror (see
			// mirrorArrays): the links are set as the children come.
			*node = Node{}
			seen[k] = C.VLSeen{key: f.key, start: f.start, count: 1}
		}
		node.kind, node.field, node.Named = nodeOf(f)
		node.start, node.end = int32(int(f.start)+shift), int32(int(f.end)+shift)
		if f.parent >= 0 {
			pk := place(int32(f.parent))
			p := &nodes[pk]
			node.parentAt = k - pk
			if prev := last[f.parent]; prev != 0 {
				nodes[prev-1].nextAt = k - (prev - 1)
			} else {
				p.firstAt = k - pk
			}
			last[f.parent] = k + 1
		} else {
			node.parentAt = -root
		}
	}
	if keep {
		// Each walked node's subtree: its children come after it.
		for i := len(flat) - 1; i > 0; i-- {
			if p := flat[i].parent; p >= 0 {
				seen[place(int32(p))].count += seen[place(int32(i))].count
			}
		}
	}
	reusedNodes.Add(int64(copied))
	return nodes, seen, runs
}

// copiedRun is a subtree a mirror copied from its prior's (see mirror):
// its count nodes from index at are those of the prior's from index from.
type copiedRun struct{ at, from, count int32 }

// CopiedFrom reports whether b's subtree, in s, is a copy that s's mirror
// made of a's subtree in old, the segment s was mirrored from after an
// edit: then the two have the same shape (see SameShape) without a look
// at their nodes. False does not mean another shape.
func (s *Segment) CopiedFrom(old *Segment, a, b *Node) bool {
	if s.copiedFrom == 0 || s.copiedFrom != old.serial || len(s.Nodes) != 1 || len(old.Nodes) != 1 {
		return false
	}
	at, from := nodeIndex(s, b), nodeIndex(old, a)
	if at < 0 || from < 0 {
		return false
	}
	// The last run starting at or before b.
	k, found := slices.BinarySearchFunc(s.copied, at, func(r copiedRun, at int32) int { return cmp.Compare(r.at, at) })
	if !found {
		k--
	}
	if k < 0 {
		return false
	}
	r := s.copied[k]
	return at-r.at == from-r.from && at+int32(len(b.subtree())) <= r.at+r.count
}

// nodeIndex is n's index in the array of seg's only statement, which
// keeps a seen table; -1 when n is not one of its nodes.
func nodeIndex(seg *Segment, n *Node) int32 {
	first := seg.Nodes[0]
	if uintptr(unsafe.Pointer(n)) < uintptr(unsafe.Pointer(first)) {
		return -1
	}
	i := (uintptr(unsafe.Pointer(n)) - uintptr(unsafe.Pointer(first))) / unsafe.Sizeof(Node{})
	if _, seen := seg.keptTree(); i >= uintptr(len(seen)) {
		return -1
	}
	return int32(i)
}

// copyReused copies the count nodes of prior from index r (a subtree) to
// nodes from index k, with offsets moved by shift. The copies keep their
// parents, children and siblings: those are distances within the subtree
// (the subtree's own root is linked by the caller).
func copyReused(nodes []Node, k int, prior []Node, r, count int, shift int32) {
	dst := nodes[k : k+count]
	copy(dst, prior[r:r+count])
	for j := range dst {
		dst[j].start += shift
		dst[j].end += shift
	}
}

// joinClassParts lists the nodes of the whole class, in preorder, from its
// parts: the first part's, then each later part's body statements under
// the first part's body, the class and what holds it ending where the
// last part's body ends. ok is false when a part is not a class whose
// body comes last, or the parts' headers differ.
func joinClassParts(parts []classPart) (flat []C.VLFlat, ok bool) {
	first := parts[0].flat
	class, body := classBody(first)
	if body < 0 {
		return nil, false
	}
	n := 0
	for _, p := range parts {
		n += len(p.flat)
	}
	flat = append(make([]C.VLFlat, 0, n), first...)
	end := first[body].end
	for _, p := range parts[1:] {
		c, b := classBody(p.flat)
		if b < 0 || !sameHeader(p.flat[c:b+1], first[class:body+1], c, class) {
			return nil, false
		}
		shift := int32(len(flat) - (b + 1))
		for _, f := range p.flat[b+1:] {
			if f.parent == C.int32_t(b) {
				f.parent = C.int32_t(body)
			} else {
				f.parent += C.int32_t(shift)
			}
			flat = append(flat, f)
		}
		end = p.flat[b].end
	}
	// The body and what holds it end with the class (a decorated
	// definition, the class itself), as they did in the first part.
	for i := int32(body); i >= 0; i = int32(flat[i].parent) {
		if flat[i].end != first[body].end {
			return nil, false
		}
		flat[i].end = end
	}
	return flat, true
}

// classBody returns the indexes in flat of the first class definition and
// of its body, when that body comes last in preorder (every node after it
// is in it); body is -1 otherwise.
func classBody(flat []C.VLFlat) (class, body int) {
	class = slices.IndexFunc(flat, func(f C.VLFlat) bool { return kindNames[kindAt(&f)] == "class_definition" })
	if class < 0 {
		return class, -1
	}
	body = slices.IndexFunc(flat[class+1:], func(f C.VLFlat) bool {
		return int(f.parent) == class && fieldNames[fieldAt(&f)] == "body"
	})
	if body < 0 {
		return class, -1
	}
	body += class + 1
	for _, f := range flat[body+1:] {
		if int(f.parent) < body {
			return class, -1 // a node after the body, outside it
		}
	}
	return class, body
}

// sameHeader reports whether a later part's nodes from its class to its
// body (header, the class at index at in its part) are the first part's
// (first, at firstAt), but for where the class and its body end, where
// the body starts, and the class's field (the definition of a decorated
// class in the first part).
func sameHeader(header, first []C.VLFlat, at, firstAt int) bool {
	if len(header) != len(first) {
		return false
	}
	for i := range header {
		f, g := &header[i], &first[i]
		isClass, isBody := i == 0, i == len(header)-1
		if f.symbol != g.symbol || !isClass && (f.field != g.field || int(f.parent)-at != int(g.parent)-firstAt) ||
			!isBody && (f.start != g.start || !isClass && f.end != g.end) {
			return false
		}
	}
	return true
}

func kindAt(f *C.VLFlat) uint16  { k, _, _ := nodeOf(f); return k }
func fieldAt(f *C.VLFlat) uint16 { _, fd, _ := nodeOf(f); return fd }

// seenIfSame returns the seen table of ts's walk (see mirror) when its
// nodes are those of seg's mirror: the same shape (see shapeOf), from the
// one walk that also gives the keys.
func seenIfSame(ts *sitter.Tree, seg *Segment) (seenNodes, bool) {
	tops := topLevel(ts, 0)
	if len(tops) != 1 || len(seg.Nodes) != 1 {
		return nil, false
	}
	var buf scratch
	flat := flatten(tops[0].node, &buf, nil)
	if shapeOfWalk(shapeBasis, flat, -tops[0].origin) != seg.Shape() {
		return nil, false
	}
	seen := make(seenNodes, len(flat))
	for i, f := range flat {
		seen[i] = C.VLSeen{key: f.key, start: f.start, count: 1}
	}
	for i := len(flat) - 1; i > 0; i-- {
		seen[flat[i].parent].count += seen[i].count
	}
	return seen, len(seen) == len(seg.Nodes[0].subtree())
}
