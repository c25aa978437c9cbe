// Package realsources lists the Python files of real projects that some
// tests read: those the ecosystem check downloads (scripts/ecosystem), found
// under $VRAMLINT_REAL_SOURCES. CI sets the variable after that check; a
// fresh clone has no such files, and the tests skip.
package realsources

import (
	"os"
	"path/filepath"
	"testing"
)

// Paths returns the root the variable names and the .py files under it, in
// lexical order (the same files every run); it skips t when the variable is
// not set.
func Paths(t testing.TB) (root string, paths []string) {
	t.Helper()
	root = os.Getenv("VRAMLINT_REAL_SOURCES")
	if root == "" {
		t.Skip("VRAMLINT_REAL_SOURCES is not set (CI sets it to the ecosystem check's downloads)")
	}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(p) == ".py" {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return root, paths
}
