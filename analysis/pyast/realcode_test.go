package pyast

import (
	"bytes"
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
	var files, withErrors, recovered, classes int
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
		// A large class parsed in parts, parsed whole later, keeps that
		// tree: its nodes are those of the mirror of the parts.
		mismatches := splitMismatches.Load()
		got.KeepSplitTrees(context.Background())
		for _, seg := range got.Segments {
			if seg.later != nil {
				classes++
				if !seg.KeepsTree() {
					t.Errorf("%s: a class parsed in parts keeps no tree once parsed whole", rel)
				}
			}
		}
		if splitMismatches.Load() != mismatches {
			t.Errorf("%s: a class parsed in parts differs from its whole parse", rel)
		}
	}
	t.Logf("%d files of 16 KB to 1 MB: %d with a syntax error, %d opened in parts at a recovery, %d classes parsed in parts", files, withErrors, recovered, classes)
	if classes == 0 {
		t.Error("no class was parsed in parts")
	}
}

// A letter typed before the first name of a statement inside a real file's
// large statement (a class of thousands of lines that keeps its tree, see
// keepTreeFrom), and deleted again, is parsed incrementally from that tree
// and gives the tree a fresh parse gives, its mirror the one a fresh walk
// gives: where a statement starts, tree-sitter's incremental parse meets
// the scanner's indent and dedent tokens, which the tree-sitter built in
// handles otherwise than stock tree-sitter does (see
// internal/go-tree-sitter/README.md). The projects of the ecosystem check,
// under $VRAMLINT_REAL_SOURCES.
func TestStatementStartsInLargeStatementsOnRealCode(t *testing.T) {
	root, paths := realsources.Paths(t)
	rng := rand.New(rand.NewSource(5))
	files, edits, incremental, copied := 0, 0, 0, reusedNodes.Load()
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil || len(src) < keepTreeFrom || len(src) > 1<<20 {
			continue
		}
		tree, err := ParseForEditing(context.Background(), src)
		if err != nil || tree.HasError() {
			continue
		}
		// As the server does once the editor pauses after the open: the
		// large classes parsed in parts keep the tree of a whole parse.
		tree.KeepSplitTrees(context.Background())
		// The starts of indented lines that begin with a name (not a
		// keyword: typing there keeps the code valid), inside the segments
		// that keep their trees.
		var starts []int
		for i, seg := range tree.Segments {
			if !seg.KeepsTree() {
				continue
			}
			text := seg.text
			for off := 0; off < len(text); {
				line, _, _ := bytes.Cut(text[off:], []byte("\n"))
				code := bytes.TrimLeft(line, " ")
				word := code[:len(code)-len(bytes.TrimLeft(code, "_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"))]
				if len(code) < len(line) && len(word) > 0 && (word[0] == '_' || word[0] >= 'a' && word[0] <= 'z') && !hardKeywords[string(word)] {
					starts = append(starts, tree.starts[i]+off+len(line)-len(code))
				}
				off += len(line) + 1
			}
		}
		if len(starts) == 0 {
			continue
		}
		rel, _ := filepath.Rel(root, p)
		t.Run(rel, func(t *testing.T) {
			for range 8 {
				at := starts[rng.Intn(len(starts))]
				before := reparsed.Load()
				next, nsrc := edit(t, tree, src, at, at, "x")
				if next.HasError() {
					continue // `xlambda: ...`, say
				}
				if reparsed.Load() == before+1 {
					incremental++
				}
				checkLayout(t, next, nsrc)
				checkReusedMirrors(t, next)
				back, bsrc := edit(t, next, nsrc, at, at+1, "")
				checkLayout(t, back, bsrc)
				checkReusedMirrors(t, back)
				tree, src = back, bsrc
				edits++
			}
		})
		if files++; files == 40 {
			break
		}
	}
	if files < 10 || edits < 100 {
		t.Fatalf("%d files with large statements under %s, %d edits: not the ecosystem check's projects", files, root, edits)
	}
	// Some may parse the statement afresh (one whose region the layout
	// widens); most must not.
	if incremental < edits*9/10 {
		t.Errorf("%d of %d edits were parsed incrementally", incremental, edits)
	}
	t.Logf("%d edits in %d files, %d parsed incrementally; the mirrors copied %d nodes", edits, files, incremental, reusedNodes.Load()-copied)
}
