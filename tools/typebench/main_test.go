package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vramlint/vramlint/internal/generated"
)

// The in-process typing session types every key of the text where
// lspbench's would, and reports each one.
func TestTypeInProcessTypesEveryKey(t *testing.T) {
	text := "import torch\n\n\nclass Net:\n    def __init__(self):\n        self.w = 1\n\n    def forward(self, x):\n        return x * self.w\n\n\nx = 1\n"
	typed := generated.AsMethod("def fit(self, xs):\n    seen = []\n    for x in xs:\n        seen.append(self.forward(x))\n", "    ")
	r, err := typeInProcess("/bench/net.py", text, typed, "method")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("typing in-process: %d keys, p50 ", len([]rune(typed))); !strings.HasPrefix(r.summary(), want) {
		t.Errorf("got %q, want it to start %q", r.summary(), want)
	}
	// A line a key, the last with the typed text's last line so far.
	keys := strings.Split(strings.TrimSuffix(r.keyLines(typed), "\n"), "\n")
	if len(keys) != len([]rune(typed)) {
		t.Fatalf("%d key lines for %d keys", len(keys), len([]rune(typed)))
	}
	lines := strings.Split(strings.TrimSuffix(typed, "\n"), "\n")
	if want := fmt.Sprintf("%q", lines[len(lines)-1]); !strings.HasPrefix(keys[len(keys)-2], fmt.Sprintf("%d\t", len(keys)-1)) || !strings.HasSuffix(keys[len(keys)-2], "\t"+want) {
		t.Errorf("the key before the last line break: %q, want its number and %s", keys[len(keys)-2], want)
	}
	if _, err := typeInProcess("/bench/net.py", "x = 1\n", typed, "method"); err == nil {
		t.Error("a file without a method: no error")
	}
}
