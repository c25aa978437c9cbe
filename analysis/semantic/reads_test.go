package semantic

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// RememberReading keeps an answer while what it read stays as it was: an
// edit to a statement it neither read nor looked a name up in keeps it; an
// edit to a statement it read, a statement added or removed that
// mentions or defines a name it looked up, a name bound anew that a
// statement it read mentions, or the asker's own check failing, asks
// again.
func TestRememberReadingLastsWhileWhatItReadIsUnchanged(t *testing.T) {
	// Functions of their own, so that no edit below touches half the
	// file (then everything is asked again).
	var padding strings.Builder
	for i := range 12 {
		fmt.Fprintf(&padding, "\n\ndef pad%d():\n    return %d\n", i, i)
	}
	b := newBuffer(t, `import torch

dev = "cuda"


def subject(x):
    return x


def helper(y):
    return y.to(dev)


def unrelated():
    return 1


def user():
    return loader
`+padding.String())
	computed := 0
	holds := true
	ask := func() string {
		t.Helper()
		subject := b.f.Functions["subject"][0]
		return RememberReading(b.f, "test", subject, func(string) bool { return holds }, func(r *Reads) string {
			computed++
			helper := b.f.Functions["helper"][0]
			r.Code(helper)
			r.Name("loader")
			return b.f.Text(helper.Child("body"))
		})
	}
	for _, step := range []struct {
		old, new string
		again    bool // computed again
		holds    bool
	}{
		{"", "", true, true},
		{"return 1", "return 2", false, true},                                       // a statement it did not read
		{"return 2", "return 3\n    # loaders", false, true},                        // a comment mentions no name
		{"return y.to(dev)", "return y.to(dev) + 1", true, true},                    // the statement it read
		{"return 3", "return loader", true, true},                                   // a statement now mentions the name
		{"return loader\n", "return 4\n", true, true},                               // and no longer
		{"def user():\n    return loader\n", "", true, true},                        // a statement that mentioned it removed
		{"def unrelated", "def loader():\n    pass\n\n\ndef unrelated", true, true}, // a definition of the name (no mention)
		{"def loader():\n    pass\n\n\n", "", true, true},                           // removed again
		{`dev = "cuda"`, `dev = "cpu"`, true, true},                                 // a name the statement it read mentions, bound anew
		{"return 4", "return 5", false, true},
		{"return 5", "return 6", true, false}, // the asker's check fails
	} {
		if step.old != "" {
			b.replace(step.old, step.new)
		}
		holds = step.holds
		before := computed
		got := ask()
		if again := computed > before; again != step.again {
			t.Errorf("after %q: computed again %v, want %v", step.new, again, step.again)
		}
		holds = true
		before = computed
		if ask() != got || computed != before {
			t.Errorf("after %q: the same version computed again", step.new)
		}
		if want := b.f.Text(b.f.Functions["helper"][0].Child("body")); got != want {
			t.Errorf("after %q: answer %q, want %q", step.new, got, want)
		}
	}
}

// An answer that read in a way Reads cannot tell (Whole) is never kept
// for the next version; a nil Reads records nothing; a statement read
// twice is recorded once.
func TestRememberReadingKeepsNoWholeFileAnswer(t *testing.T) {
	b := newBuffer(t, "def a():\n    return 1\n\n\ndef b():\n    return 2\n")
	computed := 0
	ask := func() {
		RememberReading(b.f, "whole", b.f.Functions["a"][0], func(int) bool { return true }, func(r *Reads) int {
			computed++
			r.Whole()
			return 0
		})
	}
	ask()
	b.replace("return 2", "return 3")
	ask()
	if computed != 2 {
		t.Errorf("computed %d times, want 2", computed)
	}
	var nilReads *Reads
	nilReads.Code(b.f.Tree.Root) // records nothing, and does not fail
	nilReads.Name("x")
	nilReads.Whole()
	r := &Reads{f: b.f}
	r.Code(b.f.Functions["b"][0])
	r.Code(b.f.Functions["b"][0].Child("body"))
	if len(r.segments) != 1 || !slices.Contains(r.f.Tree.Segments, r.segments[0]) {
		t.Errorf("recorded %v, want b's segment once", r.segments)
	}
}
