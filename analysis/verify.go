package analysis

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/semantic"
)

// Fix verification reparses only what a fix touches. First the lines of
// the statements inside blocks that hold its edits, each parsed after them
// (verify_alone.go): a clean parse there means a clean file, the common
// case. Otherwise, as top-level statements start at column 0 and parse
// independently of each other, each group of top-level statements touched
// by the fix's edits is parsed alone, before and after the edits, and the
// fix is dropped if the "after" has more syntax errors. A large statement
// being edited keeps its tree (pyast.Segment.KeptRegion): that tree is the
// "before", and the "after" an incremental reparse of it. Verdicts are
// cached by the text parsed and the edits, so unchanged code is not
// reparsed on every keystroke.

// region is a byte range of whole top-level statements.
type region struct{ start, end int }

// fixRegions groups a fix's edits by the top-level statements they touch.
// An edit between statements (an insertion after a loop) belongs with the
// statement before it.
func fixRegions(f *semantic.File, edits []Edit) []region {
	stmts := f.Tree.Statements
	var regions []region
	for _, e := range edits {
		r := region{e.Start, e.End}
		// The last statement that starts at or before the edit.
		i := sort.Search(len(stmts), func(i int) bool { return stmts[i].Start() > e.Start }) - 1
		if i >= 0 {
			r.start = min(r.start, stmts[i].Start())
			r.end = max(r.end, stmts[i].End())
		} else {
			r.start = 0
		}
		// Statements the edit reaches into.
		for j := i + 1; j < len(stmts) && stmts[j].Start() < e.End; j++ {
			r.end = max(r.end, stmts[j].End())
		}
		regions = append(regions, r)
	}
	sort.Slice(regions, func(i, j int) bool { return regions[i].start < regions[j].start })
	var merged []region
	for _, r := range regions {
		if n := len(merged); n > 0 && r.start <= merged[n-1].end {
			merged[n-1].end = max(merged[n-1].end, r.end)
			continue
		}
		merged = append(merged, r)
	}
	return merged
}

// verdicts caches verification results across files and versions, by
// verdictKeyOf.
var verdicts = newVerdictCache[error]()

// verdictCache holds verdicts by key for the whole process, side by side
// for fixes verified at once; it forgets them all once it holds
// maxVerdicts.
type verdictCache[V any] struct {
	mu sync.Mutex
	m  map[verdictKey]V
}

func newVerdictCache[V any]() *verdictCache[V] {
	return &verdictCache[V]{m: map[verdictKey]V{}}
}

// get returns the verdict of key, computing it with verify (outside the
// lock) when the cache has none.
func (c *verdictCache[V]) get(key verdictKey, verify func() V) V {
	c.mu.Lock()
	v, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return v
	}
	v = verify()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxVerdicts {
		clear(c.m)
	}
	c.m[key] = v
	return v
}

// verdictKey identifies a region's text and the edits made in it: two
// 64-bit hashes of them under independent seeds. Every version hashes the
// regions of every fix of the rules that run over the whole file (a
// Dataset's class and the loops it feeds, kilobytes each): with SHA-256
// and the edits printed by fmt, that was a third of fix verification on a
// 50,000-line file with 556 findings. Two texts share a key with a
// chance of 2^-128.
type verdictKey [2]uint64

var verdictSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// verdictKeyOf is the key of text with edits (offsets local to it).
func verdictKeyOf(text []byte, edits []Edit) verdictKey {
	var key verdictKey
	for i, seed := range verdictSeeds {
		var h maphash.Hash
		h.SetSeed(seed)
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(text)))
		h.Write(n[:])
		h.Write(text)
		writeEdits(&h, edits)
		key[i] = h.Sum64()
	}
	return key
}

// hashEdits hashes the offsets and texts of edits, as keptVerdicts are
// looked up by.
func hashEdits(edits []Edit) uint64 {
	var h maphash.Hash
	h.SetSeed(verdictSeeds[0])
	writeEdits(&h, edits)
	return h.Sum64()
}

// writeEdits writes each edit's offsets, length and text to h.
func writeEdits(h *maphash.Hash, edits []Edit) {
	for _, e := range edits {
		var n [24]byte
		binary.LittleEndian.PutUint64(n[0:], uint64(e.Start))
		binary.LittleEndian.PutUint64(n[8:], uint64(e.End))
		binary.LittleEndian.PutUint64(n[16:], uint64(len(e.NewText)))
		h.Write(n[:])
		h.WriteString(e.NewText)
	}
}

const maxVerdicts = 1 << 14

// regionTrees are the regions parsed during one analysis, by their range
// (two fixes' regions may start together and end apart: a fix that
// inserts after a statement also takes the next one in): the fixes of a
// file often touch the same statements, and each is
// verified by an incremental reparse of a copy of the region's tree. Fixes
// are verified side by side; the zero value is ready to use.
type regionTrees struct {
	mu sync.Mutex
	m  map[region]*regionTree
}

// keptSegment returns the segment whose statements region r is, when it
// keeps its tree (a large statement being edited, see
// pyast.Segment.KeptRegion), nil otherwise. Its tree is of its whole text:
// the statements and what follows them up to the next segment (line
// breaks, comments), which the file has there too.
func keptSegment(f *semantic.File, r region) *pyast.Segment {
	seg := f.SegmentAt(r.start)
	if seg == nil || seg.Base != r.start || !seg.KeepsTree() || len(seg.Nodes) == 0 || r.end > seg.Nodes[len(seg.Nodes)-1].End() {
		return nil
	}
	return seg
}

type regionTree = pyast.Region

// regionsParsed counts the regions parsed to verify fixes, for tests.
var regionsParsed atomic.Int64

func (rt *regionTrees) close() {
	for _, t := range rt.m {
		t.Close()
	}
}

// parse returns the tree of region r of src, parsing it once; the tree
// kept is the tree of kept, the segment whose statements r is, when not
// nil (see keptSegment).
func (rt *regionTrees) parse(src []byte, r region, kept *pyast.Segment) (*regionTree, error) {
	rt.mu.Lock()
	t := rt.m[r]
	rt.mu.Unlock()
	if t != nil {
		return t, nil
	}
	var err error
	if kept != nil {
		t = kept.KeptRegion()
	} else if t, err = pyast.ParseRegion(src[r.start:r.end]); err != nil {
		return nil, err
	} else {
		regionsParsed.Add(1)
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if had := rt.m[r]; had != nil {
		t.Close() // parsed at the same time for another fix
		return had, nil
	}
	if rt.m == nil {
		rt.m = map[region]*regionTree{}
	}
	rt.m[r] = t
	return t, nil
}

// verifyFix verifies fix's edits in f, grouped in regions (fixRegions).
func verifyFix(f *semantic.File, fix Fix, regions []region, trees *regionTrees) error {
	if _, err := sortEdits(len(f.Src), fix.Edits); err != nil {
		return err
	}
	for _, r := range regions {
		var inRegion, local []Edit
		for _, e := range fix.Edits {
			if r.start <= e.Start && e.End <= r.end {
				inRegion = append(inRegion, e)
				local = append(local, Edit{e.Start - r.start, e.End - r.start, e.NewText})
			}
		}
		if verifyAlone(f, inRegion) {
			continue
		}
		text, kept := f.Src[r.start:r.end], keptSegment(f, r)
		if kept != nil {
			text = kept.Text() // what its tree is of
		}
		err := verdicts.get(verdictKeyOf(text, local), func() error {
			return verifyRegion(f.Src, r, local, trees, kept)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// verifyRegion reports an error when edits (offsets local to region r of
// src) would give the region more syntax errors than it has, or leave the
// blocks they edit misaligned where they were not. kept, when not nil, is
// the segment whose statements r is and whose tree is taken for the
// region's (see keptSegment).
func verifyRegion(src []byte, r region, edits []Edit, trees *regionTrees, kept *pyast.Segment) error {
	bt, err := trees.parse(src, r, kept)
	if err != nil {
		return err
	}
	// The region's statements, or the kept segment's whole text: the
	// edits lie in its statements, at the same offsets from its start in
	// either.
	before := bt.Text()
	after, err := ApplyEdits(before, edits)
	if err != nil {
		return err
	}
	sorted, _ := sortEdits(len(before), edits)
	replacements := make([]pyast.Replacement, len(sorted))
	for i, e := range sorted {
		replacements[i] = pyast.Replacement{Start: e.Start, End: e.End, Text: e.NewText}
	}
	errs, aligned, err := bt.ErrorsAfter(after, replacements)
	if err != nil {
		return err
	}
	if errs > bt.Errors() {
		return fmt.Errorf("the result would not parse")
	}
	if !aligned && bt.AlignedAround(replacements) {
		return fmt.Errorf("the result would not be indented as Python requires")
	}
	return nil
}
