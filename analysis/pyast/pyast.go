// Package pyast parses Python with tree-sitter and mirrors the syntax tree
// into plain Go values.
//
// Every call into the tree-sitter binding crosses cgo, so rules that walk
// the tree node by node from Go pay for each step. The mirror is built with
// one walk per top-level statement, in C, over tree-sitter's own subtrees
// (walk.go: a third of the time its cursor took); after that, rules read
// ordinary structs, and the tree-sitter tree is freed (except a large
// statement's in a buffer being edited, see reparse.go). A buffer being
// edited reparses only the top-level statements an edit touched and keeps
// the mirror of every other one (reparse.go, layout.go); a large one is
// parsed in chunks on several cores when opened (chunked.go), and a class
// of thousands of lines in parts, a run of its methods each
// (classparts.go).
package pyast

import (
	"bytes"
	"context"
	"fmt"
	"iter"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	sitter "github.com/smacker/go-tree-sitter"
	"github.com/smacker/go-tree-sitter/python"
)

// Node is one syntax node: its kind, the field it fills in its parent and
// its byte range in the source.
type Node struct {
	// start and end are the node's bytes in the laid-out text (Start and
	// End); 32 bits are enough for any text Parse accepts (maxLaidOut).
	start, end int32
	// parentAt says where the node's parent is: that many nodes back in
	// its mirror's array when positive; its tree's Root, registered as
	// root number -parentAt (see roots.go), for a top-level statement; none
	// for a Root. Like firstAt and nextAt a number rather than a pointer,
	// so that the arrays hold no pointer at all and the collector never
	// scans them: they are most of a buffer's heap (26 of 45 MB at 50,000
	// lines), and a collection's mark took a core for 15-40 ms while
	// typing (see docs/PERFORMANCE.md).
	parentAt int32
	// firstAt and nextAt say how many nodes further on, in the array its
	// mirror allocated (mirror: one per statement, in preorder, so both
	// come after the node), its first child and its next sibling are; 0:
	// none. Offsets rather than a slice of children or pointers: 8 bytes
	// instead of 32.
	firstAt, nextAt int32
	Named           bool
	// kind and field are numbers in kindNames and fieldNames (field 0:
	// none), see Kind and Field. Numbers rather than the names: a file's
	// mirror holds 14 nodes a line, and each name cost it 16 bytes and a
	// pointer for the collector to follow.
	kind, field uint16
}

// Kind returns the node's kind: the grammar's name for it ("call",
// "identifier"), "ERROR" for a syntax error and "MISSING" for what the
// parser supplied.
func (n *Node) Kind() string { return kindNames[n.kind] }

// Field returns the name of the field the node fills in its parent, or "".
func (n *Node) Field() string { return fieldNames[n.field] }

// kindNames are the grammar's symbol names by number, then ERROR's and
// MISSING's; kindNumbers number each name (its first number: some names
// are several symbols').
var kindNames, kindNumbers = func() ([]string, map[string]uint16) {
	var names []string
	for i := range language.SymbolCount() {
		names = append(names, language.SymbolName(sitter.Symbol(i)))
	}
	names = append(names, "ERROR", "MISSING")
	numbers := make(map[string]uint16, len(names))
	for i := len(names) - 1; i >= 0; i-- {
		numbers[names[i]] = uint16(i)
	}
	return names, numbers
}()

// kindOf returns the number of a kind's name; an unknown name is an ERROR.
func kindOf(name string) uint16 {
	if k, ok := kindNumbers[name]; ok {
		return k
	}
	return kindNumbers["ERROR"]
}

// fieldNames are the grammar's field names by number ("" for 0).
var fieldNames = func() []string {
	names := []string{""}
	for i := 1; ; i++ {
		name := language.FieldName(i)
		if name == "" {
			return names
		}
		names = append(names, name)
	}
}()

var language = python.GetLanguage()

// parsers keeps idle parsers: making one allocates tree-sitter's buffers
// (about a millisecond), and a sync.Pool would drop them at every garbage
// collection.
var parsers = make(chan *sitter.Parser, 16)

func getParser() *sitter.Parser {
	select {
	case p := <-parsers:
		return p
	default:
		p := sitter.NewParser()
		p.SetLanguage(language)
		return p
	}
}

func putParser(p *sitter.Parser) {
	select {
	case parsers <- p:
	default:
		p.Close()
	}
}

// parse parses src afresh. Close the tree when done.
func parse(ctx context.Context, src []byte) (*sitter.Tree, error) {
	return parseFrom(ctx, nil, src)
}

// parseFrom parses src, incrementally from old (an edited copy of a tree)
// when it is not nil. Close the tree when done.
func parseFrom(ctx context.Context, old *sitter.Tree, src []byte) (*sitter.Tree, error) {
	p := getParser()
	// With a cancellable context the binding watches it from a goroutine
	// that may still set the parser's cancellation flag after the parse
	// has finished, which would abort the parser's next parse. Such a
	// parser is never reused, and is freed at once: its buffers, grown to
	// the file, are C memory, which the collector would free only when the
	// Go heap next calls for a collection (the flag itself is Go memory,
	// which the goroutine may still write).
	if ctx.Done() == nil {
		defer putParser(p)
	} else {
		defer p.Close()
	}
	ts, err := p.ParseCtx(ctx, old, withNewlines(src))
	// The binding frees nothing of old, but Go may collect it (and its
	// finalizer free the C tree) as soon as it is last used, mid-parse.
	runtime.KeepAlive(old)
	if err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	return track(ts), nil
}

// liveTrees counts the tree-sitter trees pyast has made and not freed:
// their memory is C memory, which Go's collector neither sees nor frees
// in time, so each must be freed (free) as soon as it is mirrored.
var liveTrees atomic.Int64

func track(ts *sitter.Tree) *sitter.Tree {
	liveTrees.Add(1)
	return ts
}

func free(ts *sitter.Tree) {
	ts.Close()
	liveTrees.Add(-1)
}

// freeLater frees a mirrored tree off the caller's path: freeing the tree
// of a 10,000-line file takes milliseconds that an open would otherwise
// wait for before its analysis starts. The trees wait in a short queue;
// when it is full, the caller frees its own.
func freeLater(ts *sitter.Tree) {
	startFreeing.Do(func() {
		go func() {
			for ts := range toFree {
				free(ts)
				freeing.Add(-1)
			}
		}()
	})
	freeing.Add(1)
	select {
	case toFree <- ts:
	default:
		free(ts)
		freeing.Add(-1)
	}
}

var (
	toFree       = make(chan *sitter.Tree, 16)
	startFreeing sync.Once
	// freeing counts the trees freeLater queued and has not freed yet.
	freeing atomic.Int64
)

// freeQueued frees the trees freeLater queued, and waits (a second at
// most) for one being freed, so that their C memory can go back to the
// system (see ReleaseMemory).
func freeQueued() {
	for deadline := time.Now().Add(time.Second); freeing.Load() > 0 && time.Now().Before(deadline); {
		select {
		case ts := <-toFree:
			free(ts)
			freeing.Add(-1)
		default:
			time.Sleep(time.Millisecond)
		}
	}
}

// LiveTrees is how many tree-sitter trees pyast holds: those of the
// Regions not yet closed, of parses in progress, and of large statements
// kept for their next edit (see Segment.tree) until their segment is
// collected. A test that it comes back to 0 catches a leak.
func LiveTrees() int64 { return liveTrees.Load() }

// withNewlines returns src with each lone "\r" (a line break in old Mac
// files, and in the LSP) replaced by "\n", which tree-sitter's Python
// scanner needs to see lines: the copy has the same length, so offsets
// into it are offsets into src. advance counts rows the same way.
func withNewlines(src []byte) []byte {
	if bytes.IndexByte(src, '\r') < 0 {
		return src
	}
	var out []byte // a copy, made at the first lone "\r"
	for i, b := range src {
		if loneCR(src, i, b) {
			if out == nil {
				out = bytes.Clone(src)
			}
			out[i] = '\n'
		}
	}
	if out == nil {
		return src // "\r\n" only
	}
	return out
}

// loneCR reports whether b, at src[i], is a "\r" not followed by "\n".
func loneCR(src []byte, i int, b byte) bool {
	return b == '\r' && (i+1 == len(src) || src[i+1] != '\n')
}

// Parse parses src from scratch and mirrors it with the source's own
// offsets (Tree.Src is src), but for a file with a bracket left open
// before a definition: that one is parsed in parts, as the server opens
// it (see statementStarts' recoveries), and laid out as ParseForEditing
// lays it out, so that `check` and the server see the same statements.
func Parse(ctx context.Context, src []byte) (*Tree, error) {
	if len(src) > maxLaidOut {
		return nil, tooLarge(src)
	}
	ts, err := parse(ctx, src)
	if err != nil {
		return nil, err
	}
	defer freeLater(ts)
	if err := ctx.Err(); err != nil {
		return nil, err // cancelled as the parse ended: the mirror is work too
	}
	if ts.RootNode().HasError() {
		if _, recoveries := statementStarts(src); len(recoveries) > 0 {
			return ParseForEditing(ctx, src)
		}
	}
	return layOut(ts, src, false), nil
}

// ParseForEditing parses src afresh for a buffer that will be edited: laid
// out so that the versions after it (see Editor) reuse every top-level
// statement an edit did not touch (see Tree). A large file is parsed in
// chunks on several cores.
func ParseForEditing(ctx context.Context, src []byte) (*Tree, error) {
	// Only a text of tens of megabytes can lay out past 32 bits (at most
	// 34 bytes a source byte, for a file of line breaks): count its lines.
	if len(src) > maxLaidOut/34 && freshBase(len(src), bytes.Count(src, []byte{'\n'})) > maxLaidOut {
		return nil, tooLarge(src)
	}
	if t := parseChunked(ctx, src); t != nil {
		return t, nil
	}
	ts, err := parse(ctx, src)
	if err != nil {
		return nil, err
	}
	defer freeLater(ts)
	return layOut(ts, src, true), nil
}

// maxLaidOut is the largest text a node's 32-bit offsets index: a laid-out
// text (about twice the source, see freshBase) must fit below it. Files
// are analysed up to analysis.MaxFileSize (10 MB), far below.
const maxLaidOut = math.MaxInt32

// tooLarge is the error for a source too large to lay out.
func tooLarge(src []byte) error {
	return fmt.Errorf("the text is too large to parse (%d MB)", len(src)>>20)
}

// Text is the source text of n. It shares src's memory instead of
// copying it (rules ask for texts by the thousand): sources are never
// modified once parsed.
func (n *Node) Text(src []byte) string {
	if n.End() <= n.Start() {
		return ""
	}
	return unsafe.String(&src[n.Start()], n.End()-n.Start())
}

// Start is the offset of n's first byte in its tree's Src.
func (n *Node) Start() int { return int(n.start) }

// End is the offset just after n's last byte in its tree's Src.
func (n *Node) End() int { return int(n.end) }

// Children yields n's children in order.
func (n *Node) Children() iter.Seq[*Node] {
	return func(yield func(*Node) bool) {
		for c := n.FirstChild(); c != nil && yield(c); c = c.NextSibling() {
		}
	}
}

// Parent returns the node n is a child of: for a top-level statement its
// tree's Root, for a Root nil.
func (n *Node) Parent() *Node {
	switch {
	case n.parentAt > 0:
		// Back within the array (parentAt is at most n's index in it).
		return (*Node)(unsafe.Add(unsafe.Pointer(n), -int(n.parentAt)*int(unsafe.Sizeof(Node{}))))
	case n.parentAt < 0:
		return rootNumbered(-n.parentAt)
	}
	return nil
}

// SameShape reports whether the subtrees of a and b, nodes of two
// mirrors, have the same nodes in the same places: kinds, fields,
// namedness and offsets from their roots. Over the same text they are the
// same code, parsed the same way. A subtree is a run of its mirror's array
// (preorder), so the two runs are compared node by node, their links
// within the subtree included: the same links are the same tree.
func SameShape(a, b *Node) bool {
	xs, ys := a.subtree(), b.subtree()
	if len(xs) != len(ys) {
		return false
	}
	da, db := a.start, b.start
	for i := range xs {
		x, y := &xs[i], &ys[i]
		if x.kind != y.kind || x.field != y.field || x.Named != y.Named || x.start-da != y.start-db || x.end-da != y.end-db ||
			x.firstAt != y.firstAt || i > 0 && x.nextAt != y.nextAt { // the root's next sibling is not in its subtree
			return false
		}
	}
	return true
}

// Counterpart returns the node at n's place in b's subtree, given a and b
// of the same shape (see SameShape) and n a node of a's subtree; nil when
// n is not one. The subtrees are runs of their arrays, alike node by node.
func Counterpart(a, b, n *Node) *Node { return NewMover(a, b).Move(n) }

// Mover takes the nodes of one subtree to their places in another of the
// same shape (see Counterpart), its subtree measured once for many nodes.
type Mover struct {
	from, to *Node
	size     uintptr // of from's run, in bytes
}

// NewMover returns the Mover from a's subtree to b's, of the same shape.
func NewMover(a, b *Node) Mover {
	return Mover{from: a, to: b, size: uintptr(len(a.subtree())) * unsafe.Sizeof(Node{})}
}

// Move returns the node at n's place in the other subtree; nil when n is
// not one of the first subtree's nodes.
func (m Mover) Move(n *Node) *Node {
	at := uintptr(unsafe.Pointer(n)) - uintptr(unsafe.Pointer(m.from))
	if uintptr(unsafe.Pointer(n)) < uintptr(unsafe.Pointer(m.from)) || at >= m.size {
		return nil
	}
	return (*Node)(unsafe.Add(unsafe.Pointer(m.to), at))
}

// subtree returns n and its descendants, the run of its mirror's array
// they fill (preorder): from n to its last descendant.
func (n *Node) subtree() []Node {
	// It ends where the next sibling of n, or of its nearest ancestor in
	// the array that has one, begins: a few steps up rather than the
	// walk down every last child's siblings (a class's methods, a method's
	// statements).
	for m := n; m.parentAt > 0; m = m.Parent() {
		if next := m.further(m.nextAt); next != nil {
			return unsafe.Slice(n, (uintptr(unsafe.Pointer(next))-uintptr(unsafe.Pointer(n)))/unsafe.Sizeof(Node{}))
		}
	}
	// The array's last nodes: walk down to its last descendant.
	last := n
	for c := last.FirstChild(); c != nil; c = last.FirstChild() {
		for next := c.NextSibling(); next != nil; next = c.NextSibling() {
			c = next
		}
		last = c
	}
	return unsafe.Slice(n, 1+(uintptr(unsafe.Pointer(last))-uintptr(unsafe.Pointer(n)))/unsafe.Sizeof(Node{}))
}

// FirstChild returns n's first child, or nil.
func (n *Node) FirstChild() *Node { return n.further(n.firstAt) }

// NextSibling returns the child of n's parent that follows n, or nil.
func (n *Node) NextSibling() *Node { return n.further(n.nextAt) }

// further returns the node k places after n in their mirror's array, or
// nil for 0. It stays within the array (see firstAt), as unsafe.Add
// requires.
func (n *Node) further(k int32) *Node {
	if k == 0 {
		return nil
	}
	return (*Node)(unsafe.Add(unsafe.Pointer(n), uintptr(k)*unsafe.Sizeof(Node{})))
}

// ChildList returns n's children as a new slice, for code that indexes
// them (Children and FirstChild/NextSibling do not allocate).
func (n *Node) ChildList() []*Node {
	var out []*Node
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		out = append(out, c)
	}
	return out
}

// Child returns the first child filling field, or nil.
func (n *Node) Child(field string) *Node {
	if n == nil {
		return nil
	}
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if c.field != 0 && fieldNames[c.field] == field {
			return c
		}
	}
	return nil
}

// ChildOfKind returns the first child of the given kind, or nil; for
// children the grammar gives no field name (a with_statement's with_clause).
func (n *Node) ChildOfKind(kind string) *Node {
	if n == nil {
		return nil
	}
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if c.Kind() == kind {
			return c
		}
	}
	return nil
}

// ChildrenOf returns every child filling field.
func (n *Node) ChildrenOf(field string) []*Node {
	var out []*Node
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if c.field != 0 && fieldNames[c.field] == field {
			out = append(out, c)
		}
	}
	return out
}

// NamedChildren returns the named children, skipping comments.
func (n *Node) NamedChildren() []*Node {
	var out []*Node
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if c.Named && c.Kind() != "comment" {
			out = append(out, c)
		}
	}
	return out
}

// FirstNamed returns the first named child (comments skipped), or nil: a
// node the parser recovered from an error may lack the child its kind
// always has (`-` with no operand, `( )`).
func (n *Node) FirstNamed() *Node {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if c.Named && c.Kind() != "comment" {
			return c
		}
	}
	return nil
}

// Is reports whether n is non-nil and of one of the kinds.
func (n *Node) Is(kinds ...string) bool {
	if n == nil {
		return false
	}
	kind := n.Kind()
	for _, k := range kinds {
		if kind == k {
			return true
		}
	}
	return false
}

// Ancestor returns the nearest proper ancestor of one of the kinds, or nil.
func (n *Node) Ancestor(kinds ...string) *Node {
	for p := n.Parent(); p != nil; p = p.Parent() {
		if p.Is(kinds...) {
			return p
		}
	}
	return nil
}

// Contains reports whether m lies within n (n is m or an ancestor of m).
func (n *Node) Contains(m *Node) bool {
	if m == nil || m.Start() < n.Start() || m.End() > n.End() {
		return false // outside n's bytes: not below it
	}
	for ; m != nil; m = m.Parent() {
		if m == n {
			return true
		}
	}
	return false
}

// Walk calls visit for n and every descendant in source order; returning
// false from visit skips that node's children.
func Walk(n *Node, visit func(*Node) bool) {
	if n == nil || !visit(n) {
		return
	}
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		Walk(c, visit)
	}
}

// ParseTree parses src (incrementally from old, an edited tree) without
// building the Go mirror: for callers that only ask whether it parses.
func ParseTree(old *sitter.Tree, src []byte) (*sitter.Tree, error) {
	ts, err := parseFrom(context.Background(), old, src)
	if err != nil {
		return nil, err
	}
	liveTrees.Add(-1) // the caller's, closed by it: not one pyast holds
	return ts, nil
}

// ErrorCount counts the syntax errors (ERROR and MISSING nodes) of a
// tree-sitter tree, descending only into subtrees that contain one. A
// MISSING token of a hidden rule (the line break between two statements
// on one line: `z = T.ones(3).to(DEVICE)  x`) is no child a node lists,
// though the node has an error: such a node counts as one.
func ErrorCount(n *sitter.Node) int {
	if !n.HasError() {
		return 0
	}
	if n.IsError() || n.IsMissing() {
		return 1
	}
	count := 0
	for i := 0; i < int(n.ChildCount()); i++ {
		count += ErrorCount(n.Child(i))
	}
	return max(count, 1)
}
