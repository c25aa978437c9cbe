package analysis

import (
	"cmp"
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vramlint/vramlint/analysis/pyast"
)

func TestCheckSource(t *testing.T) {
	if err := CheckSource([]byte("x = 1\n")); err != nil {
		t.Error(err)
	}
	if err := CheckSource([]byte("x\x00y")); err == nil || !strings.Contains(err.Error(), "binary") {
		t.Errorf("NUL byte: %v", err)
	}
	if err := CheckSource([]byte("ok\nbad \xff here")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("invalid UTF-8: %v", err)
	}
	if err := CheckSource(make([]byte, MaxFileSize+1)); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("huge file: %v", err)
	}
}

// CheckEdited, which looks only at what an edit wrote, agrees with
// CheckSource on the whole text after edits that split characters, write
// invalid bytes or NULs, and join the halves of a character again.
func TestCheckEditedAgreesWithCheckSource(t *testing.T) {
	pieces := []string{"a", "é", "😀", "中", "\n", "\x00", "\xff", "\xc3", "\xa9", "\xf0\x9f", "\x98\x80", ""}
	rng := rand.New(rand.NewSource(11))
	invalid := 0
	for range 3000 {
		src := []byte(strings.Repeat("x = 'é😀中'\n", 3))
		if CheckSource(src) != nil {
			t.Fatal("the starting text must pass")
		}
		ed := pyast.NewEditor(nil, src)
		for range 1 + rng.Intn(3) {
			n := len(ed.Text())
			start := rng.Intn(n + 1)
			end := min(n, start+rng.Intn(4))
			ed.Replace(start, end, pieces[rng.Intn(len(pieces))]+pieces[rng.Intn(len(pieces))])
		}
		lo, hi, _ := ed.Changed()
		got, want := CheckEdited(ed.Text(), lo, hi), CheckSource(ed.Text())
		if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
			t.Fatalf("%q changed in [%d, %d): CheckEdited says %v, CheckSource %v", ed.Text(), lo, hi, got, want)
		}
		if want != nil {
			invalid++
		}
	}
	if invalid < 300 {
		t.Fatalf("only %d of the edited texts were invalid: the test no longer tests much", invalid)
	}
}

// A local rule's kept findings come out at the source offsets a fresh
// analysis gives, when their related place and fix lie in another
// statement (which moves apart from theirs) as well as in their own, while
// lines are added and removed before, between and after them.
func TestKeptFindingsFollowTheSource(t *testing.T) {
	anchored := &Rule{Code: "GPU999", Local: true, Run: func(p *Pass) {
		anchor := p.File.Tree.Statements[0]
		for _, call := range p.CandidateCalls(nil, "mark") {
			p.Report(Diagnostic{Start: call.Start(), End: call.End(), Message: "a mark",
				Related: []Related{{Start: anchor.Start(), End: anchor.End(), Message: "the anchor"}},
				Fixes: []Fix{
					{Title: "Mark the anchor", Edits: []Edit{{Start: anchor.End(), End: anchor.End(), NewText: " + 0"}}},
					{Title: "Unmark", Edits: []Edit{{Start: call.Start(), End: call.End(), NewText: "pass"}}},
				}})
		}
	}}
	runner := &Runner{Rules: []*Rule{anchored}}
	var b strings.Builder
	b.WriteString("anchor = 1\n\n")
	for i := range 12 {
		b.WriteString("def f" + strings.Repeat("x", i) + "():\n    mark()\n\n")
	}
	src := []byte(b.String())
	tree, err := pyast.ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	res := runner.AnalyzeTree(nil, "a.py", src, tree, nil)
	rng := rand.New(rand.NewSource(3))
	kept := 0
	for i := range 60 {
		// A blank line or a comment line at the start of a line, or one
		// taken away again.
		lines := strings.SplitAfter(string(src), "\n")
		at := 0
		for _, l := range lines[:1+rng.Intn(len(lines)-1)] {
			at += len(l)
		}
		ed := pyast.NewEditor(tree, src)
		if i%3 == 2 && at+1 <= len(src) && src[at] == '\n' {
			ed.Replace(at, at+1, "")
		} else {
			ed.Replace(at, at, []string{"\n", "# note\n"}[rng.Intn(2)])
		}
		next, err := ed.Parse(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		src, tree = ed.Text(), next
		res = runner.AnalyzeTree(res, "a.py", src, tree, nil)
		kept += res.Reused()
		freshTree, err := pyast.ParseForEditing(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		fresh := runner.AnalyzeTree(nil, "a.py", src, freshTree, nil)
		if !reflect.DeepEqual(res.Diagnostics, fresh.Diagnostics) {
			t.Fatalf("edit %d: kept findings\n%+v\nwant\n%+v", i, res.Diagnostics, fresh.Diagnostics)
		}
	}
	if kept == 0 {
		t.Fatal("no finding was kept: the test proves nothing")
	}
}

// TestDiagnosticsAreSortedByStartThenCodeStably compares sortedDiagnostics
// with a stable sort of the diagnostics themselves, on findings with many
// ties (the same start and code: their order is the rules'), with codes
// that come in another order than they sort, and with what its numbering
// cannot hold (more codes than it ranks, a start past 4 GB), which the
// comparing sort orders.
func TestDiagnosticsAreSortedByStartThenCodeStably(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for _, tc := range []struct {
		name      string
		n, starts int
		codes     int
		farStarts bool // some starts past what the numbering holds
		numbered  bool // whether diagnosticOrder numbers them
	}{
		{"few findings", 5, 3, 2, false, true},
		{"many ties", 2000, 40, 4, false, true},
		{"spread", 3000, 1 << 20, 9, false, true},
		{"more codes than ranks", 1500, 200, 400, false, false},
		{"a start past 4 GB", 50, 10, 3, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Codes whose order of first appearance is not their sorted order.
			codes := make([]string, tc.codes)
			for i := range codes {
				codes[i] = fmt.Sprintf("GPU%03d", (i*7919)%1000)
			}
			ds := make([]Diagnostic, tc.n)
			for i := range ds {
				ds[i] = Diagnostic{Code: codes[rng.Intn(len(codes))], Start: rng.Intn(tc.starts), End: i} // End: the original index
				if tc.farStarts && i%2 == 0 {
					ds[i].Start += 1 << 33
				}
			}
			if _, numbered := diagnosticOrder(ds); numbered != tc.numbered {
				t.Fatalf("numbered: %v, want %v", numbered, tc.numbered)
			}
			want := slices.Clone(ds)
			slices.SortStableFunc(want, func(a, b Diagnostic) int {
				return cmp.Or(cmp.Compare(a.Start, b.Start), strings.Compare(a.Code, b.Code))
			})
			got := sortedDiagnostics(slices.Clone(ds))
			for i := range want {
				if got[i].Start != want[i].Start || got[i].Code != want[i].Code || got[i].End != want[i].End {
					t.Fatalf("diagnostic %d: got %s at %d (index %d), want %s at %d (index %d)", i,
						got[i].Code, got[i].Start, got[i].End, want[i].Code, want[i].Start, want[i].End)
				}
			}
		})
	}
}
