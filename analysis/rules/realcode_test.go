package rules_test

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/rules"
	"github.com/vramlint/vramlint/internal/realsources"
)

// TestIncrementalMatchesFreshOnRealCode runs FuzzIncremental's edits over
// real files: the projects the ecosystem check downloads, found under
// $VRAMLINT_REAL_SOURCES (CI sets it after that check; without it the test
// is skipped, as a fresh clone has no such files). Random edit scripts on
// 250 files that train, load data or turn gradients off, three each;
// every version's incremental analysis must equal a fresh one. The fixtures are small: a class of
// dozens of methods split by an edit, which let answers computed while
// carrying over leak into another version (see semantic.NewModelFrom),
// happens only in real code.
func TestIncrementalMatchesFreshOnRealCode(t *testing.T) {
	root, paths := realsources.Paths(t)
	// The same files and scripts every run.
	rng := rand.New(rand.NewSource(11))
	rng.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
	runner := &analysis.Runner{Rules: rules.All()}
	files := 0
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil || len(src) > 150<<10 || !bytes.Contains(src, []byte("backward")) && !bytes.Contains(src, []byte("DataLoader")) && !bytes.Contains(src, []byte("no_grad")) {
			continue
		}
		rel, _ := filepath.Rel(root, p)
		for range 3 {
			script := make([]byte, 48)
			rng.Read(script)
			t.Run(rel, func(t *testing.T) { editIncrementally(t, runner, src, script, false) })
		}
		if files++; files == 250 {
			break
		}
	}
	if files < 50 {
		t.Fatalf("only %d files under %s train, load data or turn gradients off: not the ecosystem check's projects", files, root)
	}
}
