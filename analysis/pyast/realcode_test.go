package pyast

import (
	"context"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/vramlint/vramlint/internal/realsources"
)

// Real files opened as the server opens them (in chunks, and in parts
// after a bracket left open before a definition) give the tree of a whole
// parse when that has no syntax error, and the whole parses of their parts
// when it has one: the projects the ecosystem check downloads, under
// $VRAMLINT_REAL_SOURCES (skipped without it). What the cuts rely on, a
// scan of strings and brackets (see lexState), may misread real code (an
// f-string's nested quotes) where the fixtures never do.
func TestChunkedParseOnRealCode(t *testing.T) {
	root, paths := realsources.Paths(t)
	// More chunks than this machine's cores, as on a larger one.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	// A sample of the same files every run while the projects stay the
	// same, of a size that keeps the test near a minute as the ecosystem
	// check's list grows (all 9,939 files of its 451 projects took three).
	rand.New(rand.NewSource(7)).Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
	const sample = 4000
	var files, withErrors, recovered int
	for _, p := range paths {
		if files == sample {
			break
		}
		src, err := os.ReadFile(p)
		if err != nil || len(src) < 2*minChunk || len(src) > 1<<20 {
			continue
		}
		files++
		rel, _ := filepath.Rel(root, p)
		got, err := ParseForEditing(context.Background(), src)
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		want, wantFlags, recoveries, wantError := piecewise(t, src)
		if wantError {
			withErrors++
		}
		if len(recoveries) > 0 {
			recovered++
		}
		if got.HasError() != wantError || renderStatements(got) != want {
			t.Errorf("%s: the tree differs from a whole parse of each part (error: %v, the parts': %v; recoveries at %v)", rel, got.HasError(), wantError, recoveries)
			continue
		}
		if wantError && flags(got, 0) != wantFlags {
			t.Errorf("%s: segments with errors at %s, the parts' at %s", rel, flags(got, 0), wantFlags)
		}
	}
	t.Logf("%d files of 16 KB to 1 MB: %d with a syntax error, %d opened in parts at a recovery", files, withErrors, recovered)
}
