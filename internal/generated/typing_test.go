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
	// On the blank line above the method, as a user types a method: the
	// keys' lines do not go on with the method's own header.
	at, err := TypingAt(text, "method")
	if err != nil || !strings.HasPrefix(text[at:], "\n\tdef b") {
		t.Errorf("typed at %d (%v): %q, want on the blank line above a method", at, err, text[at:])
	}
	// A method right below a decorator or another line of code is passed
	// over.
	packed := "class Net:\n    def a(self):\n        return 1\n    @property\n    def b(self):\n        return 2\n    def c(self):\n        return 3\n\n    def d(self):\n        return 4\n"
	if at, err := TypingAt(packed, "method"); err != nil || !strings.HasPrefix(packed[at:], "\n    def d") {
		t.Errorf("typed at %d (%v): %q, want on the blank line above d", at, err, packed[at:])
	}
	if _, err := TypedText("", "x = 1\n", "method"); err == nil {
		t.Error("a file without a method: no error")
	}
}
