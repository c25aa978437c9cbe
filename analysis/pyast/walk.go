package pyast

/*
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

// tree-sitter's C library is compiled into the binary by
// github.com/smacker/go-tree-sitter; these are the prototypes of the part
// of its API (lib/include/tree_sitter/api.h) the walk below uses. VLNode
// and VLCursor have the layout of TSNode and TSTreeCursor.
typedef struct { uint32_t context[4]; const void *id; const void *tree; } VLNode;
typedef struct { const void *tree; const void *id; uint32_t context[3]; } VLCursor;

extern VLCursor ts_tree_cursor_new(VLNode node);
extern void ts_tree_cursor_delete(VLCursor *self);
extern bool ts_tree_cursor_goto_first_child(VLCursor *self);
extern bool ts_tree_cursor_goto_next_sibling(VLCursor *self);
extern bool ts_tree_cursor_goto_parent(VLCursor *self);
extern VLNode ts_tree_cursor_current_node(const VLCursor *self);
extern uint16_t ts_tree_cursor_current_field_id(const VLCursor *self);
extern uint16_t ts_node_symbol(VLNode self);
extern uint32_t ts_node_start_byte(VLNode self);
extern uint32_t ts_node_end_byte(VLNode self);
extern bool ts_node_is_named(VLNode self);
extern bool ts_node_is_missing(VLNode self);
extern uint32_t ts_node_descendant_count(VLNode self);
extern bool ts_node_has_error(VLNode self);

typedef struct {
	uint32_t start, end;
	int32_t parent;
	uint16_t symbol, field;
	uint8_t named, missing;
} VLFlat;

static uint32_t vl_count(VLNode root) { return ts_node_descendant_count(root); }

// VLLevel is what the walk knows of the children of one node on its path:
// how many it has seen, whether any had a field, and the symbols of up to 8
// that had none.
typedef struct {
	uint32_t children;
	uint8_t fielded, nseen;
	uint16_t seen[8];
} VLLevel;

// vl_field returns the field of the cursor's node, a child at level lv.
// tree-sitter finds it by walking up the hidden nodes between the child and
// its parent, which for the elements of a long list literal or argument
// list are a repetition tree that grows with the list: looking it up for
// every element made a 10 MB list take seconds, superlinearly. So past a
// node's first 64 children, when none had a field, a child whose symbol
// was already seen without one is taken to have none either (the elements
// of a repetition); a new symbol (the definition after many decorators) is
// still looked up.
// vl_field_lookups counts the lookups past a node's first 64 children, for
// a test that they stay few.
static uint64_t vl_field_lookups;

static uint64_t vl_lookups(void) { return vl_field_lookups; }

static uint16_t vl_field(VLCursor *c, VLLevel *lv, uint16_t symbol) {
	bool seen = false;
	for (uint8_t i = 0; i < lv->nseen; i++) {
		if (lv->seen[i] == symbol) { seen = true; break; }
	}
	uint16_t field = 0;
	if (lv->children < 64 || lv->fielded || !seen) {
		field = ts_tree_cursor_current_field_id(c);
		if (lv->children >= 64) vl_field_lookups++;
		if (field) lv->fielded = 1;
		else if (!seen && lv->nseen < 8) lv->seen[lv->nseen++] = symbol;
	}
	lv->children++;
	return field;
}

static void vl_record(VLCursor *c, VLFlat *f, int32_t parent, VLLevel *lv) {
	VLNode n = ts_tree_cursor_current_node(c);
	f->start = ts_node_start_byte(n);
	f->end = ts_node_end_byte(n);
	f->parent = parent;
	f->symbol = ts_node_symbol(n);
	f->field = lv ? vl_field(c, lv, f->symbol) : 0;
	f->named = ts_node_is_named(n);
	f->missing = ts_node_is_missing(n);
}

// vl_walk writes the nodes below root in preorder, each with the index of
// its parent, and returns how many it wrote (at most cap).
static uint32_t vl_walk(VLNode root, VLFlat *out, uint32_t cap) {
	VLCursor c = ts_tree_cursor_new(root);
	uint32_t n = 0;
	vl_record(&c, &out[n++], -1, NULL);
	int32_t parent = 0;
	// levels[d] describes the children of the node at depth d on the path.
	uint32_t depth = 0, room = 64;
	VLLevel *levels = calloc(room, sizeof(VLLevel));
	if (levels == NULL) { ts_tree_cursor_delete(&c); return 0; }
	if (ts_tree_cursor_goto_first_child(&c)) {
		for (;;) {
			if (n == cap) break;
			int32_t self = (int32_t)n;
			vl_record(&c, &out[n++], parent, &levels[depth]);
			if (ts_tree_cursor_goto_first_child(&c)) {
				parent = self;
				if (++depth == room) {
					VLLevel *grown = realloc(levels, 2 * room * sizeof(VLLevel));
					if (grown == NULL) break;
					levels = grown;
					room *= 2;
				}
				memset(&levels[depth], 0, sizeof(VLLevel));
				continue;
			}
			bool more = true;
			while (!ts_tree_cursor_goto_next_sibling(&c)) {
				if (!ts_tree_cursor_goto_parent(&c)) { more = false; break; }
				depth--;
				parent = out[parent].parent;
				if (parent < 0) { more = false; break; }
			}
			if (!more) break;
		}
	}
	free(levels);
	ts_tree_cursor_delete(&c);
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
	VLCursor c = ts_tree_cursor_new(root);
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
// through the binding's node cache.
//
// The nodes are written to scratch, grown when needed: callers copy them
// into Go nodes or hash them right after, and use the buffer again.
func flatten(n C.VLNode, scratch *[]C.VLFlat) []C.VLFlat {
	count := C.vl_count(n)
	if uint32(cap(*scratch)) < uint32(count) {
		*scratch = make([]C.VLFlat, count+count/2)
	}
	flat := (*scratch)[:count]
	count = C.vl_walk(n, &flat[0], count)
	return flat[:count]
}

// fieldLookups is how many field lookups past a node's first 64 children
// the walks have made so far.
func fieldLookups() uint64 { return uint64(C.vl_lookups()) }

// scratch is a buffer for flatten.
type scratch = []C.VLFlat

// shape hashes the structure of flattened nodes (kinds, fields and
// offsets from origin) into h: two statements with the same text and
// shape have the same mirror.
func shape(h uint64, flat []C.VLFlat, origin int) uint64 {
	const prime = 1099511628211
	for i := range flat {
		f := &flat[i]
		for _, v := range [...]uint64{uint64(f.start) - uint64(origin), uint64(f.end) - uint64(origin),
			uint64(uint32(f.parent)), uint64(f.symbol)<<32 | uint64(f.field)<<16 | uint64(f.named)<<8 | uint64(f.missing)} {
			h = (h ^ v) * prime
		}
	}
	return h
}

// shapeOf hashes the structure of the statements tops, offsets taken from
// start (in the source); buf is a buffer for flatten.
func shapeOf(tops []top, start int, buf *scratch) uint64 {
	h := uint64(14695981039346656037)
	for _, t := range tops {
		h = shape(h, flatten(t.node, buf), start-t.origin)
	}
	return h
}

// mirror copies the tree below n into Go values, adding shift to every
// offset and hanging it below parent.
func mirror(flat []C.VLFlat, shift int, parent *Node) *Node {
	nodes := make([]Node, len(flat))
	// last[p] is 1 + the index of the last child of node p linked so far
	// (0: none yet): the nodes come in preorder, so each one follows its
	// parent and its earlier siblings.
	last := make([]int32, len(flat))
	for i := range flat {
		f := &flat[i]
		node := &nodes[i]
		if int(f.symbol) < len(kindNames)-2 { // the grammar's; ERROR and MISSING follow
			node.kind = uint16(f.symbol)
		} else {
			node.kind = kindOf(language.SymbolName(sitter.Symbol(f.symbol))) // ERROR is symbol 65535
		}
		if int(f.field) < len(fieldNames) {
			node.field = uint16(f.field)
		}
		node.start, node.end, node.Named = int32(int(f.start)+shift), int32(int(f.end)+shift), f.named != 0
		if f.missing != 0 {
			// A MISSING node is the parser's repair, not text the user wrote.
			node.kind, node.Named = kindNumbers["MISSING"], false
		}
		if f.parent >= 0 {
			p := &nodes[f.parent]
			node.Parent = p
			if prev := last[f.parent]; prev != 0 {
				nodes[prev-1].nextAt = int32(i) - (prev - 1)
			} else {
				p.firstAt = int32(i) - int32(f.parent)
			}
			last[f.parent] = int32(i + 1)
		} else {
			node.Parent = parent
		}
	}
	return &nodes[0]
}
