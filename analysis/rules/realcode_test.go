package rules_test

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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

// TestIncrementalMatchesFreshOnRealCodeWhereFunctionsChange edits the
// first return of functions and methods in real files of many classes
// (`.cuda()` or `.backward()` typed at its end, so the function does
// otherwise), the edits whose reach semantic's definitionsReached
// narrows: the version's incremental analysis must equal a fresh one.
// The first 120 such files (in lexical order, the same every run), 8
// definitions each. (Where a finding depends on a class reached through
// another's methods is rare in real code: no finding of these files
// differs when no class's methods are followed at all. The fixtures of
// semantic's and the rules' incremental tests are what tell.)
func TestIncrementalMatchesFreshOnRealCodeWhereFunctionsChange(t *testing.T) {
	root, paths := realsources.Paths(t)
	runner := &analysis.Runner{Rules: rules.All()}
	definition := regexp.MustCompile(`(?m)^(?:    )?def \w+\(`)
	files, edits := 0, 0
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil || len(src) > 150<<10 || bytes.Count(src, []byte("\nclass ")) < 3 {
			continue
		}
		rel, _ := filepath.Rel(root, p)
		defs := definition.FindAllIndex(src, -1)
		for k, d := range defs[:min(len(defs), 8)] {
			// The end of the first line of the definition's body that
			// returns, before the next definition.
			body := src[d[1]:]
			if next := bytes.Index(body, []byte("def ")); next >= 0 {
				body = body[:next]
			}
			r := bytes.Index(body, []byte("return "))
			eol := -1
			if r >= 0 {
				eol = bytes.IndexByte(body[r:], '\n')
			}
			if eol < 0 {
				continue
			}
			at := d[1] + r + eol
			// editIncrementally's wide scripts place an edit at a share
			// of the text in 65,536ths: the one landing on at.
			share := (at*65536 + len(src) - 1) / len(src)
			if share >= 65536 || share*len(src)/65536 != at {
				continue
			}
			typed := ".cuda()"
			if k%2 == 1 {
				typed = ".backward()"
			}
			script := []byte{byte(share >> 8), byte(share), 0, byte(slices.Index(fragments, typed))}
			t.Run(rel, func(t *testing.T) { editIncrementally(t, runner, src, script, true) })
			edits++
		}
		if files++; files == 120 {
			break
		}
	}
	if edits < 300 {
		t.Fatalf("only %d definitions edited in %d files under %s: not the ecosystem check's projects", edits, files, root)
	}
}
