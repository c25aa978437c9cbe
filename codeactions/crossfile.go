package codeactions

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/vramlint/vramlint/analysis"
)

// A cross-file fix edits the file it was reported in and other files of
// the project (GPU001's fix takes the transfer out of a Dataset in data.py
// and puts it in the loops of train.py). It is applied on its own, as a
// whole: every file or none.

// CrossFile chooses each diagnostic's first allowed fix when it edits
// other files too; nil otherwise (Preferred and fix-all handle the rest).
func CrossFile(unsafe bool) Chooser {
	return func(d analysis.Diagnostic) *analysis.Fix {
		for i, f := range d.Fixes {
			if allowed(f, unsafe) {
				if len(f.Others) > 0 {
					return &d.Fixes[i]
				}
				return nil // the preferred fix is a one-file fix
			}
		}
		return nil
	}
}

// FileChange is one file a fix rewrites: its text before and after.
type FileChange struct {
	Path          string
	Before, After []byte
}

// Changes applies a fix of a result of the file at path: the file's own
// edits to res.Src, the others to the sources in res.Others.
func Changes(res *analysis.Result, path string, fix analysis.Fix) ([]FileChange, error) {
	own, err := analysis.ApplyEdits(res.Src, fix.Edits)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := []FileChange{{Path: path, Before: res.Src, After: own}}
	for _, o := range fix.Others {
		before, ok := res.Others[o.Path]
		if !ok {
			return nil, fmt.Errorf("%s: the fix edits %s, whose text it lacks", path, o.Path)
		}
		if sameFile(o.Path, path) {
			return nil, fmt.Errorf("%s: the fix edits the file twice", path)
		}
		after, err := analysis.ApplyEdits(before, o.Edits)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.Path, err)
		}
		out = append(out, FileChange{Path: o.Path, Before: before, After: after})
	}
	return out, nil
}

func sameFile(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}

// WriteChanges writes every change or none: each file must still hold its
// Before (checked for all of them first, and again by each write), and if
// a write fails the files already written get their Before back.
func WriteChanges(changes []FileChange) error {
	for _, c := range changes {
		now, err := analysis.ReadFile(c.Path)
		if err != nil {
			return fmt.Errorf("%s: %w", c.Path, err)
		}
		if !slices.Equal(now, c.Before) {
			return fmt.Errorf("%s: %w", c.Path, ErrChangedOnDisk)
		}
	}
	for i, c := range changes {
		if err := WriteFixed(c.Path, c.Before, c.After); err != nil {
			errs := []error{fmt.Errorf("%s: %w", c.Path, err)}
			for _, done := range changes[:i] {
				if rerr := WriteFixed(done.Path, done.After, done.Before); rerr != nil {
					errs = append(errs, fmt.Errorf("%s was fixed and could not be put back: %w", done.Path, rerr))
				}
			}
			return errors.Join(errs...)
		}
	}
	return nil
}
