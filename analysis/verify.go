package analysis

import (
	"crypto/sha256"
	"fmt"
	"sort"
	"sync"

	"github.com/vramlint/vramlint/analysis/pyast"
)

// Fix verification reparses only what a fix touches. Top-level statements
// start at column 0 and parse independently of each other, so each group
// of top-level statements touched by a fix's edits is parsed alone, before
// and after the edits, and the fix is dropped if the "after" has more
// syntax errors. Verdicts are cached by the text of the region and the
// edits, so unchanged code is not reparsed on every keystroke.

// region is a byte range of whole top-level statements.
type region struct{ start, end int }

// fixRegions groups a fix's edits by the top-level statements they touch.
// An edit between statements (an insertion after a loop) belongs with the
// statement before it.
func (f *File) fixRegions(edits []Edit) []region {
	stmts := f.Tree.Root.Children
	var regions []region
	for _, e := range edits {
		r := region{e.Start, e.End}
		// The last statement that starts at or before the edit.
		i := sort.Search(len(stmts), func(i int) bool { return stmts[i].Start > e.Start }) - 1
		if i >= 0 {
			r.start = min(r.start, stmts[i].Start)
			r.end = max(r.end, stmts[i].End)
		} else {
			r.start = 0
		}
		// Statements the edit reaches into.
		for j := i + 1; j < len(stmts) && stmts[j].Start < e.End; j++ {
			r.end = max(r.end, stmts[j].End)
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

// verdicts caches verification results across files and versions.
var verdicts = struct {
	sync.Mutex
	m map[[32]byte]error
}{m: map[[32]byte]error{}}

const maxVerdicts = 1 << 14

func verifyFix(f *File, fix Fix) error {
	if _, err := ApplyEdits(f.Src, fix.Edits); err != nil {
		return err
	}
	for _, r := range f.fixRegions(fix.Edits) {
		var local []Edit
		for _, e := range fix.Edits {
			if r.start <= e.Start && e.End <= r.end {
				local = append(local, Edit{e.Start - r.start, e.End - r.start, e.NewText})
			}
		}
		before := f.Src[r.start:r.end]
		h := sha256.New()
		h.Write(before)
		fmt.Fprint(h, local)
		var key [32]byte
		copy(key[:], h.Sum(nil))
		verdicts.Lock()
		err, ok := verdicts.m[key]
		verdicts.Unlock()
		if !ok {
			err = verifyRegion(before, local)
			verdicts.Lock()
			if len(verdicts.m) >= maxVerdicts {
				clear(verdicts.m)
			}
			verdicts.m[key] = err
			verdicts.Unlock()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func verifyRegion(before []byte, edits []Edit) error {
	after, err := ApplyEdits(before, edits)
	if err != nil {
		return err
	}
	tb, err := pyast.ParseTree(nil, before)
	if err != nil {
		return err
	}
	defer tb.Close()
	ta, err := pyast.ParseTree(nil, after)
	if err != nil {
		return err
	}
	defer ta.Close()
	if pyast.ErrorCount(ta.RootNode()) > pyast.ErrorCount(tb.RootNode()) {
		return fmt.Errorf("the result would not parse")
	}
	return nil
}
