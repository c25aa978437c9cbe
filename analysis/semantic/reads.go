package semantic

import (
	"slices"
	"strings"
	"sync"

	"github.com/vramlint/vramlint/analysis/pyast"
)

// Remember keeps an answer that follows from one statement's code. Some
// answers read more: GPU001's fix for a Dataset follows its DataLoaders
// into the functions they are passed to and the loops over them, wherever
// those are in the file. RememberReading keeps such an answer while what
// it read is unchanged, told by the answer itself as it is computed
// (Reads): the statements it read, and the names it looked up across the
// file, which a statement added, removed or changed anywhere may bind,
// call or use anew.

// Reads records what an answer of RememberReading read of its file
// besides the statement of the node it is about.
type Reads struct {
	f        *File
	segments []*pyast.Segment
	names    []string
	whole    bool // read in a way no list tells: not kept
}

// Code records that the answer read the code of n's top-level statement.
// n must be a node of the file the answer is about. The methods of a nil
// Reads record nothing: code that reads another file passes nil.
func (r *Reads) Code(n *pyast.Node) {
	if r == nil {
		return
	}
	seg := r.f.segmentOf(n)
	if seg == nil {
		r.whole = true
		return
	}
	if !slices.Contains(r.segments, seg) {
		r.segments = append(r.segments, seg)
	}
}

// Name records that the answer looked name (a plain identifier) up
// across the file: it depends on every statement that mentions or defines
// it, the ones there are and any added.
func (r *Reads) Name(name string) {
	if r != nil && !slices.Contains(r.names, name) {
		// A copy: name is often a view of this version's text, which a
		// kept answer would otherwise keep alive for many versions.
		r.names = append(r.names, strings.Clone(name))
	}
}

// Settled reports whether off, an offset of the file's text, lies in the
// text of a statement the answer read (before the spaces the layout puts
// after it, see pyast.Segment.Settled): only such an offset holds in a
// later version that takes the answer. An offset at the start of the next
// statement (an insertion after a function's last line) moves with that
// statement. A nil Reads says true.
func (r *Reads) Settled(off int) bool {
	if r == nil {
		return true
	}
	for _, seg := range r.segments {
		if seg.Settled(off) {
			return true
		}
	}
	return false
}

// Whole records that the answer read the file in a way Code and Name do
// not describe: it is not kept for the next version.
func (r *Reads) Whole() {
	if r != nil {
		r.whole = true
	}
}

// readingTable is what one version remembered for a question of
// RememberReading, by node. The next version reads it (see
// File.tables.lastReading) while this one may still add to it.
type readingTable[T any] struct {
	mu sync.Mutex
	m  map[*pyast.Node]readAnswer[T]
}

type readAnswer[T any] struct {
	value    T
	segments []*pyast.Segment
	names    []string
}

func (t *readingTable[T]) get(n *pyast.Node) (readAnswer[T], bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a, ok := t.m[n]
	return a, ok
}

func (t *readingTable[T]) put(n *pyast.Node, a readAnswer[T]) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m[n] = a
}

// RememberReading returns the answer to the question called name about
// n, computing it on the first ask, or taking the last version's answer
// while it still holds: none of the statements it read changed
// (Reads.Code) or reads differently (a name it mentions bound anew, see
// Reanalysed), no statement that mentions or defines a name it looked up
// (Reads.Name) added, removed or changed, and holds, the asker's check of
// what it passes in (say the DataLoaders it found), true of it. compute records what it reads in r; the statement
// of n is recorded already. An answer that keeps offsets of the text must
// call Whole when one is not Settled. An answer must not be changed once
// returned.
func RememberReading[T any](f *File, name string, n *pyast.Node, holds func(T) bool, compute func(r *Reads) T) T {
	f.tables.Lock()
	table, _ := f.tables.m[name].(*readingTable[T])
	if table == nil {
		table = &readingTable[T]{m: map[*pyast.Node]readAnswer[T]{}}
		if f.tables.m == nil {
			f.tables.m = map[string]any{}
		}
		f.tables.m[name] = table
	}
	last, _ := f.tables.lastReading[name].(*readingTable[T])
	f.tables.Unlock()
	if a, ok := table.get(n); ok && holds(a.value) {
		return a.value
	}
	if last != nil {
		if a, ok := last.get(n); ok && f.unchangedFor(a.segments, a.names) && holds(a.value) {
			table.put(n, a)
			return a.value
		}
	}
	r := &Reads{f: f}
	r.Code(n)
	v := compute(r)
	if !r.whole {
		table.put(n, readAnswer[T]{value: v, segments: slices.Clip(r.segments), names: slices.Clip(r.names)})
	}
	return v
}

// unchangedFor reports whether what an answer of the version f was built
// from read is the same in f: the segments, none of them analysed again
// (see Reanalysed), and no segment f or that version has alone, or
// analyses again, mentioning or defining one of names.
func (f *File) unchangedFor(segments []*pyast.Segment, names []string) bool {
	focus, ok := f.Reanalysed()
	if !ok {
		return false
	}
	for _, seg := range segments {
		if focus[seg] || f.segmentNumber(seg) < 0 {
			return false
		}
	}
	if len(names) == 0 {
		return true
	}
	touched := f.touchedIndexes()
	if len(touched) > len(f.Tree.Segments)/2 {
		return false // a paste or a large deletion: as well compute again
	}
	for _, name := range names {
		h := nameHash(name)
		for _, ix := range touched {
			if ix.mentionsHash(h) || ix.defines(name) {
				return false
			}
		}
	}
	return true
}

// touchedIndexes are the indexes of the segments f analyses again and of
// those the version it was built from had alone.
func (f *File) touchedIndexes() []*segmentIndex {
	f.touched.Do(func() {
		list := slices.Clone(f.carried.gone)
		for seg := range f.carried.focus {
			if i := f.segmentNumber(seg); i >= 0 {
				list = append(list, f.indexes[i])
			}
		}
		f.touched.indexes = list
	})
	return f.touched.indexes
}

// defines reports whether the segment defines a function or class called
// name (a definition's own name is no mention of it, see mentions).
func (ix *segmentIndex) defines(name string) bool {
	for _, d := range ix.functions {
		if d.name == name {
			return true
		}
	}
	for _, c := range ix.classes {
		if c.Name == name {
			return true
		}
	}
	return false
}
