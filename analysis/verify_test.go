package analysis

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vramlint/vramlint/analysis/pyast"
)

// verifyRegion reparses a region incrementally after a fix's edits; its
// verdict must be the one fresh parses of the region before and after
// give, for edits of every shape (several per fix, insertions, deletions,
// line breaks, text that breaks the syntax).
func TestIncrementalVerificationMatchesFreshParses(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("rules", "testdata", "*", "*.py"))
	texts := []string{"", "x", "\n", "    pass\n", "(", ")", "'''", ".cuda()", "数😀", "\r\n", ":\n        y = 1\n"}
	rng := rand.New(rand.NewSource(1))
	checked, rejected := 0, 0
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		r := region{0, len(src)}
		var trees regionTrees
		for range 20 {
			var edits []Edit
			at := 0
			for n := 1 + rng.Intn(3); n > 0 && at < len(src); n-- {
				start := at + rng.Intn(len(src)-at)
				end := min(len(src), start+rng.Intn(3)*rng.Intn(5))
				edits = append(edits, Edit{start, end, texts[rng.Intn(len(texts))]})
				at = end + 1
			}
			got := verifyRegion(src, r, edits, &trees)
			after, err := ApplyEdits(src, edits)
			if err != nil {
				t.Fatal(err)
			}
			tb, _ := pyast.ParseTree(nil, src)
			ta, _ := pyast.ParseTree(nil, after)
			want := pyast.ErrorCount(ta.RootNode()) > pyast.ErrorCount(tb.RootNode())
			tb.Close()
			ta.Close()
			if (got != nil) != want {
				t.Errorf("%s: edits %+v: verdict %v, fresh parses say broken=%v", file, edits, got, want)
			}
			checked++
			if want {
				rejected++
			}
		}
		trees.close()
	}
	if checked < 400 || rejected < 50 || rejected == checked {
		t.Errorf("%d edit sets checked, %d of them break the syntax", checked, rejected)
	}
}

// Two fixes' regions may start at the same statement and end apart (a fix
// that inserts after a loop also takes in the statement after it); each
// is verified against a parse of its own text, in either order, and so
// against its own syntax errors (here the statement after the loop has
// one, which neither fix adds).
func TestRegionsThatStartTogetherAreParsedApart(t *testing.T) {
	src := []byte("for b in loader:\n    step(b)\n    torch.cuda.empty_cache()\nreport(]\n")
	loop := region{0, len("for b in loader:\n    step(b)\n    torch.cuda.empty_cache()\n")}
	both := region{0, len(src)}
	removeCall := []Edit{{Start: len("for b in loader:\n    step(b)\n    "), End: loop.end - 1, NewText: "pass"}}
	insertAfterLoop := []Edit{{Start: loop.end, End: loop.end, NewText: "torch.cuda.empty_cache()\n"}}
	for _, shortFirst := range []bool{true, false} {
		var trees regionTrees
		first, second := loop, both
		firstEdits, secondEdits := removeCall, insertAfterLoop
		if !shortFirst {
			first, second = second, first
			firstEdits, secondEdits = secondEdits, firstEdits
		}
		if err := verifyRegion(src, first, firstEdits, &trees); err != nil {
			t.Errorf("region %v first: %v", first, err)
		}
		if err := verifyRegion(src, second, secondEdits, &trees); err != nil {
			t.Errorf("region %v after %v: %v", second, first, err)
		}
		trees.close()
	}
}

// A fix verdict is remembered by its region's text and edits: any
// difference in either, where one ends and the next begins included,
// gives another key.
func TestVerdictKeysTellTextsAndEditsApart(t *testing.T) {
	cases := []struct {
		text  string
		edits []Edit
	}{
		{"x = f(a)\n", nil},
		{"x = f(a)\n", []Edit{}},
		{"x = f(b)\n", nil},
		{"x = f(a)\n", []Edit{{Start: 4, End: 4, NewText: "g"}}},
		{"x = f(a)\n", []Edit{{Start: 4, End: 5, NewText: "g"}}},
		{"x = f(a)\n", []Edit{{Start: 5, End: 5, NewText: "g"}}},
		{"x = f(a)\n", []Edit{{Start: 4, End: 4, NewText: "h"}}},
		{"x = f(a)\n", []Edit{{Start: 4, End: 4, NewText: "g"}, {Start: 6, End: 6, NewText: ""}}},
		{"x = f(a)\n", []Edit{{Start: 4, End: 4, NewText: "g\x00"}}},
		{"x = f(a)\nx", nil},
		{"", nil},
	}
	seen := map[verdictKey]int{}
	for i, c := range cases {
		key := verdictKeyOf([]byte(c.text), c.edits)
		if again := verdictKeyOf([]byte(c.text), c.edits); again != key {
			t.Fatalf("case %d: two keys for the same text and edits", i)
		}
		if j, ok := seen[key]; ok && !(len(cases[j].edits) == 0 && len(c.edits) == 0 && cases[j].text == c.text) {
			t.Errorf("cases %d and %d share a key", j, i)
		}
		seen[key] = i
	}
}

// A fix verified on one version of a buffer is not verified again on the
// next when it is the same fix (the same edits, as a rule hands back a
// remembered verdict) over the same segments; when a segment its regions
// overlap changed, it is. The rule below hands back one fix on every
// version, its edit reaching from the first statement into the second:
// while another statement is edited its verdict is kept, and once the
// second statement is edited so that the fix would break it, the fix is
// dropped, as a verification without the last version's verdicts finds.
func TestKeptVerdictsFollowTheirSegments(t *testing.T) {
	var remembered []Edit
	rule := &Rule{Code: "GPU998", Run: func(p *Pass) {
		if remembered == nil {
			first, second := p.File.Tree.Statements[0], p.File.Tree.Statements[1]
			remembered = []Edit{{Start: first.Start(), End: second.Start() + len("b = ("), NewText: "a = ("}}
		}
		p.Report(Diagnostic{Start: 0, End: 1, Message: "merge", Fixes: []Fix{{Title: "Merge", Edits: remembered}}})
	}}
	runner := &Runner{Rules: []*Rule{rule}}
	var b strings.Builder
	b.WriteString("a = 1\nb = (2)\n")
	for i := range 10 {
		fmt.Fprintf(&b, "\n\ndef f%d():\n    return %d\n", i, i)
	}
	src := []byte(b.String())
	tree, err := pyast.ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	res := runner.AnalyzeTree(nil, "v.py", src, tree, nil)
	for _, step := range []struct {
		old, new string
		kept     bool // the verdict is the last version's
		fixed    bool // the fix is offered
	}{
		{"return 3", "return 33", true, true},
		{"b = (2)", "b = 2 + (3)", false, false},
		{"return 4", "return 44", true, false},
	} {
		at := bytes.Index(src, []byte(step.old))
		ed := pyast.NewEditor(tree, src)
		ed.Replace(at, at+len(step.old), step.new)
		next, err := ed.Parse(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		had := res.verdicts[idOf(remembered)]
		src, tree = ed.Text(), next
		res = runner.AnalyzeTree(res, "v.py", src, tree, nil)
		again := runner.AnalyzeTree(nil, "v.py", src, tree, nil) // verified afresh
		if !reflect.DeepEqual(res.Diagnostics, again.Diagnostics) {
			t.Fatalf("after %q: %+v, verified afresh %+v", step.new, res.Diagnostics, again.Diagnostics)
		}
		if fixed := len(res.Diagnostics[0].Fixes) == 1; fixed != step.fixed {
			t.Errorf("after %q: fix offered %v, want %v", step.new, fixed, step.fixed)
		}
		now := res.verdicts[idOf(remembered)]
		if kept := len(now.regions) > 0 && &now.regions[0] == &had.regions[0]; kept != step.kept {
			t.Errorf("after %q: the last version's verdict kept %v, want %v", step.new, kept, step.kept)
		}
	}
}
