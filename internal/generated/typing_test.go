package generated

import (
	"strings"
	"testing"
)

// What a typing session types: the built-in function or the text given,
// indented as the method it goes before when it types inside a class.
func TestTypedTextIsIndentedAsTheMethodItGoesBefore(t *testing.T) {
	text := "import torch\n\n\nclass Net:\n\tdef a(self):\n\t\treturn 1\n\n\tdef b(self):\n\t\treturn 2\n"
	if got, err := TypedText("", text, "middle"); err != nil || got != TypedFunction {
		t.Errorf("middle: %q, %v; want the built-in function", got, err)
	}
	got, err := TypedText("def f(x):\n    return x\n", text, "method")
	if err != nil {
		t.Fatal(err)
	}
	if want := "\tdef f(x):\n\t    return x\n\n"; got != want {
		t.Errorf("method: %q, want %q", got, want)
	}
	at, err := TypingAt(text, "method")
	if err != nil || !strings.HasPrefix(text[at:], "\tdef ") {
		t.Errorf("typed at %d (%v): %q, want before a method", at, err, text[at:])
	}
	if _, err := TypedText("", "x = 1\n", "method"); err == nil {
		t.Error("a file without a method: no error")
	}
}
