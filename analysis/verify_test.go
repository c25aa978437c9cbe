package analysis

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/semantic"
	"github.com/vramlint/vramlint/internal/realsources"
)

// verifyRegion reparses a region incrementally after a fix's edits; its
// verdict must be the one fresh parses of the region before and after
// give, for edits of every shape (several per fix, insertions, deletions,
// line breaks, text that breaks the syntax or the indentation).
func TestIncrementalVerificationMatchesFreshParses(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("rules", "testdata", "*", "*.py"))
	texts := []string{"", "x", "\n", "    pass\n", "(", ")", "'''", ".cuda()", "数😀", "\r\n", ":\n        y = 1\n"}
	rng := rand.New(rand.NewSource(1))
	checked, rejected, misaligned := 0, 0, 0
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
			got := verifyRegion(src, r, edits, &trees, nil)
			after, err := ApplyEdits(src, edits)
			if err != nil {
				t.Fatal(err)
			}
			tb, _ := pyast.ParseTree(nil, src)
			ta, _ := pyast.ParseTree(nil, after)
			errorsBefore, errorsAfter := pyast.ErrorCount(tb.RootNode()), pyast.ErrorCount(ta.RootNode())
			tb.Close()
			ta.Close()
			// More syntax errors, or blocks Python would reject where it
			// accepted them (the whole text's: the fixtures have no
			// other misaligned block).
			want := errorsAfter > errorsBefore || !pyast.BlocksAligned(after) && pyast.BlocksAligned(src)
			if (got != nil) != want {
				t.Errorf("%s: edits %+v: verdict %v, fresh parses say broken=%v", file, edits, got, want)
			}
			checked++
			if want {
				rejected++
			}
			if want && errorsAfter <= errorsBefore {
				misaligned++
			}
		}
		trees.close()
	}
	if checked < 400 || rejected < 50 || rejected == checked || misaligned < 10 {
		t.Errorf("%d edit sets checked, %d of them break the syntax, %d only the indentation", checked, rejected, misaligned)
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
		if err := verifyRegion(src, first, firstEdits, &trees, nil); err != nil {
			t.Errorf("region %v first: %v", first, err)
		}
		if err := verifyRegion(src, second, secondEdits, &trees, nil); err != nil {
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
// next when it is the same fix (equal edits: the same ones, as a rule hands
// back a remembered verdict, or equal ones found again, as for module
// code) over the same segments; when a segment its regions overlap
// changed, it is. The rule below hands back one fix on every version, its
// edit reaching from the first statement into the second: while another
// statement is edited its verdict is kept, and once the second statement
// is edited so that the fix would break it, the fix is dropped, as a
// verification without the last version's verdicts finds.
func TestKeptVerdictsFollowTheirSegments(t *testing.T) {
	for _, foundAgain := range []bool{false, true} {
		var remembered []Edit
		rule := &Rule{Code: "GPU998", Run: func(p *Pass) {
			if remembered == nil || foundAgain {
				first, second := p.File.Tree.Statements[0], p.File.Tree.Statements[1]
				remembered = []Edit{{Start: first.Start(), End: second.Start() + len("b = ("), NewText: "a = ("}}
			}
			p.Report(Diagnostic{Start: 0, End: 1, Message: "merge", Fixes: []Fix{{Title: "Merge", Edits: remembered}}})
		}}
		runner := &Runner{Rules: []*Rule{rule}}
		src, tree := mergeProgram(t)
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
			had := res.verdicts[hashEdits(remembered)]
			src, tree = replaced(t, src, tree, step.old, step.new)
			res = runner.AnalyzeTree(res, "v.py", src, tree, nil)
			again := runner.AnalyzeTree(nil, "v.py", src, tree, nil) // verified afresh
			if !reflect.DeepEqual(res.Diagnostics, again.Diagnostics) {
				t.Fatalf("found again %v, after %q: %+v, verified afresh %+v", foundAgain, step.new, res.Diagnostics, again.Diagnostics)
			}
			if fixed := len(res.Diagnostics[0].Fixes) == 1; fixed != step.fixed {
				t.Errorf("found again %v, after %q: fix offered %v, want %v", foundAgain, step.new, fixed, step.fixed)
			}
			now := res.verdicts[hashEdits(remembered)]
			if kept := len(now.regions) > 0 && &now.regions[0] == &had.regions[0]; kept != step.kept {
				t.Errorf("found again %v, after %q: the last version's verdict kept %v, want %v", foundAgain, step.new, kept, step.kept)
			}
		}
	}
}

// mergeProgram is the program of the kept-verdict tests, parsed for
// editing: two statements a fix merges, then ten functions to edit.
func mergeProgram(t *testing.T) ([]byte, *pyast.Tree) {
	t.Helper()
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
	return src, tree
}

// replaced replaces the first old of src with new, as the server applies
// a change: the text, and its tree parsed incrementally from tree.
func replaced(t *testing.T, src []byte, tree *pyast.Tree, old, new string) ([]byte, *pyast.Tree) {
	t.Helper()
	at := bytes.Index(src, []byte(old))
	if at < 0 {
		t.Fatalf("no %q to replace", old)
	}
	ed := pyast.NewEditor(tree, src)
	ed.Replace(at, at+len(old), new)
	next, err := ed.Parse(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ed.Text(), next
}

// A verdict outlives versions that do not find its fix: a finding kept
// rather than found again (a script's module-level finding while the
// keystrokes are in a function), found again later with the same edits,
// is not verified again. Verdicts over a segment gone are let go once
// another is made.
func TestVerdictsOutliveVersionsThatDoNotFindTheirFix(t *testing.T) {
	report := true
	rule := &Rule{Code: "GPU998", Run: func(p *Pass) {
		if !report {
			return
		}
		first, second := p.File.Tree.Statements[0], p.File.Tree.Statements[1]
		// The first statement's text in the edits: another after it changes.
		edits := []Edit{{Start: first.Start(), End: second.Start() + len("b = ("), NewText: p.File.Text(first) + "\na = ("}}
		p.Report(Diagnostic{Start: 0, End: 1, Message: "merge", Fixes: []Fix{{Title: "Merge", Edits: edits}}})
	}}
	runner := &Runner{Rules: []*Rule{rule}}
	src, tree := mergeProgram(t)
	res := runner.AnalyzeTree(nil, "v.py", src, tree, nil)
	// The verdict on the fix: one, over the segments of the version.
	verdictOf := func(res *Result) (found keptVerdict, ok bool) {
		for _, v := range res.verdicts {
			if len(v.edits) == 1 && strings.HasSuffix(v.edits[0].NewText, "a = (") {
				if ok {
					t.Error("two verdicts on the fix: one over a segment gone")
				}
				found, ok = v, true
			}
		}
		return found, ok
	}
	first, _ := verdictOf(res)
	for _, step := range []struct {
		old, new string
		report   bool
		kept     bool // the first version's verdict is there
	}{
		{"return 3", "return 33", false, true},
		{"return 4", "return 44", false, true},
		{"return 5", "return 55", true, true}, // found again: not verified again
		{"a = 1", "a = 10", true, false},      // its segment edited
		{"return 6", "return 66", false, false},
	} {
		src, tree = replaced(t, src, tree, step.old, step.new)
		report = step.report
		res = runner.AnalyzeTree(res, "v.py", src, tree, nil)
		v, ok := verdictOf(res)
		if kept := ok && &v.regions[0] == &first.regions[0]; kept != step.kept {
			t.Errorf("after %q: the first verdict kept %v, want %v", step.new, kept, step.kept)
		}
		if step.report && len(res.Diagnostics[0].Fixes) != 1 {
			t.Errorf("after %q: the fix is not offered", step.new)
		}
	}
}

// A fix verified statement by statement (verifyAlone) is accepted only
// where the region's parse accepts it too, for edits of every shape
// (indentation, line continuations, brackets and strings left open, line
// breaks of every kind, whole lines taken out and put in as fixes do) in
// the rules' test programs and in statements written to be hard to take
// out alone, laid out for editing or not; and it leaves to the region's
// parse a share of them, those it cannot judge.
func TestStatementsVerifiedAloneAgreeWithTheirRegion(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("rules", "testdata", "*", "*.py"))
	sources := []string{
		"class A:\n    def f(self):\n        s = '''\nno indent\n'''\n        return s\n\n    @property\n    def g(self):\n        return 1  # one\n",
		"def f(x):\n\tif x:\n\t\ty = x \\\n\t\t\t+ 1\n\t\treturn y\r\n\treturn (x,\n  2)\n",
		"def f(x):\n    match x:\n        case 1:\n            return 2\n        case _:\n            pass\n    a = 1; b = 2\n    if a: b = 3\n",
		"def f():\r\n    for i in range(3):\r\n        g(i)\r\n    return 1\r\n",
		"def f():\n    x = [1,\n# comment at the margin\n         2]\n    try:\n        pass\n    except E:\n        pass\n    finally:\n        y = 1\n",
		"def f():\n    x = (\n    def g():\n        return 1\n",
	}
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, string(src))
	}
	accepted, declined, declinedValid := checkAloneAgainstRegion(t, sources, 400, rand.New(rand.NewSource(2)))
	if accepted < 1500 || declinedValid < 1000 {
		t.Errorf("%d edit sets accepted alone, %d left to the region (%d of them valid)", accepted, declined, declinedValid)
	}
}

// TestStatementsVerifiedAloneOnRealCode is the same check on real files,
// those of the projects the ecosystem check downloads (see
// TestIncrementalMatchesFreshOnRealCode in the rules: CI sets
// $VRAMLINT_REAL_SOURCES after that check; the test skips without it).
func TestStatementsVerifiedAloneOnRealCode(t *testing.T) {
	_, paths := realsources.Paths(t)
	rng := rand.New(rand.NewSource(12))
	rng.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
	var sources []string
	for _, p := range paths {
		if src, err := os.ReadFile(p); err == nil && len(src) < 60<<10 {
			sources = append(sources, string(src))
		}
		if len(sources) == 150 {
			break
		}
	}
	accepted, declined, declinedValid := checkAloneAgainstRegion(t, sources, 100, rng)
	if len(sources) < 100 || accepted < 2000 {
		t.Errorf("%d files, %d edit sets accepted alone, %d left to the region (%d of them valid)", len(sources), accepted, declined, declinedValid)
	}
}

// checkAloneAgainstRegion makes n random fixes in each source (one to two
// edits within one region) and fails t where verifyAlone accepts one the
// region's parse rejects. It returns how many it accepted and left to the
// region, and how many of those the region accepts.
func checkAloneAgainstRegion(t *testing.T, sources []string, n int, rng *rand.Rand) (accepted, declined, declinedValid int) {
	t.Helper()
	texts := []string{"", "", "", "x", "x", ".item()", "\n", "\n    ", "\n        y = 1", "    ", "\t", "\\", "\\\n", "(", ")", "]", "'''", "'", "f'{", ":", ":\n", "else:", "#", "\r", "\r\n", ".item()", "return", "\n\n", "数"}
	lines := []string{"x = 1\n", "pass\n", "return y\n", "else:\n", "for b in c:\n", "y = (\n", "z\n", "\n", "torch.cuda.empty_cache()\n", "x = 1", "# note\n"}
	for i, src := range sources {
		for _, forEditing := range []bool{false, true} {
			parse := pyast.Parse
			if forEditing {
				parse = pyast.ParseForEditing
			}
			tree, err := parse(context.Background(), []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			f := semantic.NewFile("t.py", []byte(src), tree)
			for range n {
				var edits []Edit
				at := 0
				for k := 1 + rng.Intn(2); k > 0 && at < len(f.Src); k-- {
					start := at + rng.Intn(len(f.Src)-at)
					end := min(len(f.Src), start+rng.Intn(2)*rng.Intn(6))
					text := texts[rng.Intn(len(texts))]
					if rng.Intn(3) == 0 {
						// Whole lines, as fixes write them: one taken out,
						// or one put in before a line, indented anyhow.
						start = bytes.LastIndexByte(f.Src[:start], '\n') + 1
						end = start
						if rng.Intn(2) == 0 {
							end = min(len(f.Src), start+bytes.IndexByte(f.Src[start:], '\n')+1)
						}
						text = ""
						if start == end || rng.Intn(2) == 0 {
							text = strings.Repeat(" ", rng.Intn(13)) + lines[rng.Intn(len(lines))]
						}
					}
					edits = append(edits, Edit{start, end, text})
					at = end + 1
				}
				regions := fixRegions(f, edits)
				if len(regions) != 1 {
					continue
				}
				var trees regionTrees
				local := make([]Edit, len(edits))
				for k, e := range edits {
					local[k] = Edit{e.Start - regions[0].start, e.End - regions[0].start, e.NewText}
				}
				inRegion := verifyRegion(f.Src, regions[0], local, &trees, nil)
				trees.close()
				switch {
				case !verifyAlone(f, edits):
					declined++
					if inRegion == nil {
						declinedValid++
					}
				case inRegion != nil:
					t.Errorf("source %d (laid out: %v): edits %+v accepted alone, but the region's parse says %v", i, forEditing, edits, inRegion)
				default:
					accepted++
				}
			}
		}
	}
	t.Logf("%d edit sets accepted alone, %d left to the region (%d of them valid)", accepted, declined, declinedValid)
	return accepted, declined, declinedValid
}

// verifyAlone takes the fixes rules write (a call wrapped, a line taken
// out of a loop and put after it, a line put at the top of a loop) on the
// lines they edit, and leaves to the region's parse the edits that read
// differently alone than in the file: each trap below is accepted by a
// parse of the edited lines without the check that catches it.
func TestVerifyAloneTakesFixesAndLeavesTraps(t *testing.T) {
	const train = "def train(loader):\n    for epoch in range(3):\n        for x, y in loader:\n            loss = step(x, y)\n            history.append(loss)\n            torch.cuda.empty_cache()\n    return history\n"
	at := func(src, s string) int {
		i := strings.Index(src, s)
		if i < 0 {
			t.Fatalf("%q not in the program", s)
		}
		return i
	}
	emptyCache := at(train, "            torch.cuda.empty_cache()\n")
	afterLoops := at(train, "    return history")
	cases := []struct {
		name, src string
		edits     []Edit
		alone     bool
	}{
		{"a call wrapped", train, []Edit{{Start: at(train, "loss)\n") + 4, End: at(train, "loss)\n") + 4, NewText: ".detach()"}}, true},
		{"a line moved out of the loops", train, []Edit{
			{Start: emptyCache, End: afterLoops, NewText: ""},
			{Start: afterLoops, End: afterLoops, NewText: "        torch.cuda.empty_cache()\n"},
		}, true}, // both in the lines of the inner loop, whose column the moved line has
		{"a line taken out of the loop", train, []Edit{{Start: emptyCache, End: afterLoops, NewText: ""}}, true},
		{"a line put at the top of the loop", train, []Edit{{Start: at(train, "            loss ="), End: at(train, "            loss ="), NewText: "            x = x.cuda(non_blocking=True)\n"}}, true},
		// Traps.
		{"a decorated definition made something else", "class A:\n    @property\n    def g(self):\n        return 1\n", []Edit{{Start: 31, End: 31, NewText: "#"}}, false},
		{"else between two levels", "def f(a, b):\n    if a:\n        if b:\n            g()\n        h()\n", []Edit{{Start: 59, End: 59, NewText: "      else:\n"}}, false},
		{"a line joined to the next", "def f():\n    x = 1\n    return x\n", []Edit{{Start: 15, End: 19, NewText: ""}}, false},
		{"text put before the next line", "def f():\n    x = 1\n    return x\n", []Edit{{Start: 19, End: 19, NewText: "y"}}, false},
		{"a line continued into the next", "def f():\n    x = 1\n    return x\n", []Edit{{Start: 18, End: 18, NewText: " \\"}}, false},
		{"a lone carriage return", "def f():\n    x = 1\n    return x\n", []Edit{{Start: 18, End: 18, NewText: "\ry = 2"}}, false},
	}
	for _, c := range cases {
		tree, err := pyast.Parse(context.Background(), []byte(c.src))
		if err != nil {
			t.Fatal(err)
		}
		f := semantic.NewFile("t.py", []byte(c.src), tree)
		if got := verifyAlone(f, c.edits); got != c.alone {
			after, _ := ApplyEdits(f.Src, c.edits)
			t.Errorf("%s: verifyAlone = %v, want %v; the edited program:\n%s", c.name, got, c.alone, after)
		}
	}
}

// ParsesCleanly holds Python's rules on indentation and keywords that
// tree-sitter lets pass.
func TestParsesCleanlyChecksIndentation(t *testing.T) {
	for src, want := range map[string]bool{
		"if a:\n    if b:\n        g()\n  else:\n    h()\n":       false, // else between two levels
		"if a:\n    g()\n  h()\n":                                 false, // a block's lines at two columns
		"try:\n    g()\n  except E:\n    pass\n":                  false,
		"if a:\n    if b:\n        g()\n    else:\n        h()\n": true,
		"if a: g(); h()\nelse:\n    k()\n":                        true,
		"x = [1,\n  2]\ny = 3\n":                                  true,
		"def f():\n    s = '''\nmargin\n'''\n    return s\n":      true,
		"x = (1\n": false,
		// A second else after a for loop's: tree-sitter reads `else: c`
		// as an annotated assignment to a name else.
		"for i in x:\n    a\nelse:\n    b\nelse:\n    c\n": false,
		"else = 1\n":            false,
		"match = 1\ncase = 2\n": true, // soft keywords are names
	} {
		if got := pyast.ParsesCleanly([]byte(src)); got != want {
			t.Errorf("ParsesCleanly(%q) = %v, want %v", src, got, want)
		}
	}
}

// The "if 1:" lines in front of a statement verified alone stand for
// every statement that holds it, the top-level one included, also where
// the root is an ERROR (a file whose error took in the rest of it).
func TestBlocksAroundAStatementReachTheTopLevel(t *testing.T) {
	broken, err := os.ReadFile(filepath.Join("pyast", "testdata", "swallowing_error.py"))
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range [][]byte{broken, []byte("def train0(epochs=3):\n    history = []\n    for epoch in range(epochs):\n        history = []\n")} {
		tree, err := pyast.ParseForEditing(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		f := semantic.NewFile("t.py", src, tree)
		at := f.Tree.Virtual(bytes.Index(src, []byte("    history = []")) + 4)
		var stmt *pyast.Node
		f.Tree.Walk(f.Tree.Root, func(n *pyast.Node) bool {
			if n.Start() == at && n.Kind() == "expression_statement" {
				stmt = n
			}
			return stmt == nil
		})
		if stmt == nil {
			t.Fatalf("no statement at %d (root %s)", at, f.Tree.Root.Kind())
		}
		_, blocks, ok := alone(f.Src, stmt)
		if got := string(blocks); !ok || got != "if 1:\n" {
			t.Errorf("root %s: blocks around `history = []` in train0: %q (alone: %v), want one line", f.Tree.Root.Kind(), got, ok)
		}
	}
}

// Fixes are verified side by side, and their regions' trees are shared:
// the check of the blocks around a fix's edits walks one of them, and must
// not race with another fix's walk or copy of it.
func TestSharedRegionsAreVerifiedSideBySide(t *testing.T) {
	src := []byte("for b in loader:\n    step(b)\n    torch.cuda.empty_cache()\n    log(b)\n")
	r := region{0, len(src)}
	at := strings.Index(string(src), "    log")
	var trees regionTrees
	defer trees.close()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 200 {
				// A line put at column 1, 2 or 3 of a block at 4: every
				// verification walks the region's tree.
				column := 1 + (w+i)%3
				edits := []Edit{{Start: at, End: at + 4, NewText: strings.Repeat(" ", column)}}
				if err := verifyRegion(src, r, edits, &trees, nil); err == nil {
					t.Errorf("a line at column %d of a block at 4 was taken", column)
				}
			}
		})
	}
	wg.Wait()
}

// A fix in a large statement being edited, when the lines it edits do not
// parse alone, is verified on the tree the statement keeps (see
// keptSegment), not on a parse of it: the verdict is the one a parse of
// the statement gives. Random edits of classes of thousands of lines,
// whole and with a syntax error left mid-typing, as an editor's buffer
// has them after a keystroke.
func TestKeptTreesVerifyAsAParseDoes(t *testing.T) {
	var class strings.Builder
	class.WriteString("import torch\n\n\nclass Big:\n")
	for i := range 300 {
		fmt.Fprintf(&class, "    def m%d(self, loader):\n        losses = []\n        for x in loader:\n            loss = self.model(x).sum()\n            losses.append(loss)\n        return losses\n\n", i)
	}
	class.WriteString("\ndef after():\n    return 1\n")
	whole := class.String()
	at := strings.Index(whole, "    def m150(")
	sources := []string{
		whole,
		whole[:at] + "        y = foo(a, " + whole[at:],                       // a bracket left open
		whole[:at] + "    def typed(self, x):\n        return x" + whole[at:], // a line typed before a method
		whole[:at] + "        s = '''\n" + whole[at:],                         // a string left open
	}
	var files []*semantic.File
	for _, src := range sources {
		// Parsed for editing, then edited once (m3 renamed n3): the class
		// keeps its tree.
		tree, err := pyast.ParseForEditing(context.Background(), []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		ed := pyast.NewEditor(tree, []byte(src))
		mark := strings.Index(src, "def m3(")
		ed.Replace(mark+4, mark+5, "n")
		if tree, err = ed.Parse(context.Background()); err != nil {
			t.Fatal(err)
		}
		files = append(files, semantic.NewFile("t.py", ed.Text(), tree))
	}
	compared, valid := checkKeptAgainstParse(t, files, 100, rand.New(rand.NewSource(5)))
	if compared < 300 || valid < compared/4 || valid > compared*3/4 {
		t.Errorf("%d edits compared on a kept tree, %d of them valid: want most of 400, some valid and some not", compared, valid)
	}
}

// TestKeptTreesVerifyAsAParseDoesOnRealCode is the same check on the
// large statements of real files, those of the projects the ecosystem
// check downloads, as an open keeps their trees (the test skips without
// $VRAMLINT_REAL_SOURCES, which CI sets after that check).
func TestKeptTreesVerifyAsAParseDoesOnRealCode(t *testing.T) {
	_, paths := realsources.Paths(t)
	rng := rand.New(rand.NewSource(13))
	rng.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
	var files []*semantic.File
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil || len(src) < 32<<10 || len(src) > 400<<10 {
			continue
		}
		tree, err := pyast.ParseForEditing(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		tree.KeepSplitTrees(context.Background()) // as the server does at the pause after an open
		if slices.ContainsFunc(tree.Segments, (*pyast.Segment).KeepsTree) {
			files = append(files, semantic.NewFile("t.py", src, tree))
		}
		if len(files) == 20 {
			break
		}
	}
	compared, valid := checkKeptAgainstParse(t, files, 25, rng)
	if len(files) < 10 || compared < 250 || valid == 0 || valid == compared {
		t.Errorf("%d files, %d edits compared on a kept tree, %d of them valid", len(files), compared, valid)
	}
}

// checkKeptAgainstParse makes n random edits in the statements of each
// file's segments that keep their trees, and fails t where verifying one
// on the kept tree (see keptSegment) says otherwise than a parse of the
// statement. It returns how many it compared and how many the parse
// accepts.
func checkKeptAgainstParse(t *testing.T, files []*semantic.File, n int, rng *rand.Rand) (compared, valid int) {
	t.Helper()
	texts := []string{"", "x", ".item()", "\n", "\n    ", "\n        y = 1", "    ", "(", ")", "'''", "'", "f'{", ":", "#", "\\", "\r\n", "数", "losses.append(loss.item())\n"}
	for i, f := range files {
		var kept []*pyast.Segment
		for _, seg := range f.Tree.Segments {
			if seg.KeepsTree() {
				kept = append(kept, seg)
			}
		}
		if len(kept) == 0 {
			t.Fatalf("file %d: no segment keeps its tree", i)
		}
		for range n {
			seg := kept[rng.Intn(len(kept))]
			from, to := seg.Nodes[0].Start(), seg.Nodes[len(seg.Nodes)-1].End()
			start := from + rng.Intn(to-from)
			end := min(start+rng.Intn(2)*rng.Intn(8), to)
			edits := []Edit{{start, end, texts[rng.Intn(len(texts))]}}
			regions := fixRegions(f, edits)
			if len(regions) != 1 || keptSegment(f, regions[0]) == nil {
				continue
			}
			r := regions[0]
			local := []Edit{{start - r.start, end - r.start, edits[0].NewText}}
			var onTree, parsed regionTrees
			onKept, onParse := verifyRegion(f.Src, r, local, &onTree, keptSegment(f, r)), verifyRegion(f.Src, r, local, &parsed, nil)
			if region := onTree.m[r]; region == nil || &region.Text()[0] != &keptSegment(f, r).Text()[0] {
				t.Fatalf("file %d: the kept tree was not used", i)
			}
			onTree.close()
			parsed.close()
			compared++
			if onParse == nil {
				valid++
			}
			if (onKept == nil) != (onParse == nil) {
				t.Errorf("file %d: %+v: on the kept tree %v, on a parse %v", i, edits, onKept, onParse)
			}
		}
	}
	t.Logf("%d files, %d edits compared on a kept tree, %d of them valid", len(files), compared, valid)
	return compared, valid
}

// A finding typed into a class of thousands of lines, on a line the
// typing has left broken (the method below it starts on the same line):
// its fix's lines do not parse alone, and the class, which keeps its tree
// while it is edited, is not parsed again to verify it (that took 80 ms a
// keystroke in PyTorch's distributed_test.py). The fix is offered as when
// the class is parsed.
func TestAFixInALargeStatementIsVerifiedOnItsTree(t *testing.T) {
	var b strings.Builder
	b.WriteString("import torch\n\n\nclass Big:\n")
	for i := range 300 {
		fmt.Fprintf(&b, "    def m%d(self, loader):\n        losses = []\n        for x in loader:\n            losses.append(x)\n        return losses\n\n", i)
	}
	clean := []byte(b.String())
	at := bytes.Index(clean, []byte("    def m150("))
	typed := "    def typed(self, loader):\n        kept = []\n        for x in loader:\n            kept.append(out)"
	kept := &Rule{Code: "GPU999", Local: true, Run: func(p *Pass) {
		for _, call := range p.CandidateCalls(nil, "append") {
			if arg := p.File.Arg(call, "", 0); p.File.Text(arg) == "out" {
				p.Report(Diagnostic{Start: call.Start(), End: call.End(), Message: "kept with its history",
					Fixes: []Fix{{Title: "Store out.item()", Edits: []Edit{{Start: arg.End(), End: arg.End(), NewText: ".item()"}}}}})
			}
		}
	}}
	runner := &Runner{Rules: []*Rule{kept}}
	fixesOf := func(res *Result) int {
		if len(res.Diagnostics) != 1 {
			t.Fatalf("%d diagnostics, want 1", len(res.Diagnostics))
		}
		return len(res.Diagnostics[0].Fixes)
	}

	// Parsed whole, as check does: the class is parsed to verify the fix.
	broken := append(append(append([]byte{}, clean[:at]...), typed...), clean[at:]...)
	whole, err := pyast.Parse(context.Background(), broken)
	if err != nil {
		t.Fatal(err)
	}
	before := regionsParsed.Load()
	if fixes := fixesOf(runner.AnalyzeTree(nil, "a.py", broken, whole, nil)); fixes != 1 || regionsParsed.Load() == before {
		t.Fatalf("parsed whole: %d fixes, %d regions parsed; the test needs the class parsed to verify one fix", fixes, regionsParsed.Load()-before)
	}

	// Typed into a buffer: the class keeps its tree, which verifies it.
	tree, err := pyast.ParseForEditing(context.Background(), clean)
	if err != nil {
		t.Fatal(err)
	}
	ed := pyast.NewEditor(tree, clean)
	ed.Replace(at, at, typed)
	if tree, err = ed.Parse(context.Background()); err != nil {
		t.Fatal(err)
	}
	before = regionsParsed.Load()
	if fixes := fixesOf(runner.AnalyzeTree(nil, "a.py", ed.Text(), tree, nil)); fixes != 1 || regionsParsed.Load() != before {
		t.Errorf("typed into a buffer: %d fixes, %d regions parsed; want the fix, verified on the class's tree", fixes, regionsParsed.Load()-before)
	}
}
