package codeactions

import (
	"math/rand"
	"runtime"
	"strings"
	"testing"
)

// lcsLength is the length of a longest common subsequence, by the
// quadratic table: the oracle for a shortest diff.
func lcsLength(a, b []string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(prev[j+1], cur[j])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// The diff turns a into b, and is a shortest one.
func TestDiffIsShortest(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for round := range 3000 {
		size := 25
		if round%10 == 0 {
			size = 300
		}
		gen := func() []string {
			out := make([]string, rng.Intn(size))
			for i := range out {
				out[i] = string(rune('a'+rng.Intn(4))) + "\n"
			}
			return out
		}
		a, b := gen(), gen()
		ops := diffLines(a, b)
		var gotA, gotB []string
		changes := 0
		for _, op := range ops {
			if op.kind != '+' {
				gotA = append(gotA, op.text)
			}
			if op.kind != '-' {
				gotB = append(gotB, op.text)
			}
			if op.kind != ' ' {
				changes++
			}
		}
		if strings.Join(gotA, "") != strings.Join(a, "") || strings.Join(gotB, "") != strings.Join(b, "") {
			t.Fatalf("round %d: the ops do not turn %q into %q", round, a, b)
		}
		if want := len(a) + len(b) - 2*lcsLength(a, b); changes != want {
			t.Fatalf("round %d: %d changed lines, the shortest diff has %d: %q -> %q", round, changes, want, a, b)
		}
	}
}

// A fix at the first and the last line of a long file: the diff needs
// memory in proportion to the file, not to its square.
func TestDiffOfDistantChangesIsLinearInSpace(t *testing.T) {
	var old strings.Builder
	for i := range 12000 {
		old.WriteString("x = " + strings.Repeat("y", i%7) + "\n")
	}
	src := old.String()
	fixed := "# first\n" + src[strings.IndexByte(src, '\n')+1:len(src)-2] + "2\n"
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	diff := UnifiedDiff("big.py", []byte(src), []byte(fixed))
	runtime.ReadMemStats(&after)
	if strings.Count(diff, "@@ -") != 2 {
		t.Errorf("want two hunks:\n%s", diff)
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 64<<20 {
		t.Errorf("the diff allocated %d MB", allocated>>20)
	}
}

// Old Mac line endings split into lines too.
func TestDiffSplitsAtEveryLineBreak(t *testing.T) {
	if got := splitLines("a\rb\r\nc\nd"); strings.Join(got, "|") != "a\r|b\r\n|c\n|d" {
		t.Errorf("%q", got)
	}
}
