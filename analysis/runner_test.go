package analysis

import (
	"math/rand"
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
