package analysis

import (
	"context"
	"strings"
	"testing"

	"github.com/vramlint/vramlint/analysis/semantic"
)

var testLines = semantic.NewFact("test-lines", func(f *semantic.File) int { return f.Mapper.LineCount() })

// A rule reads the facts it declares; one that reads a fact it did not
// declare fails, and the failure is reported, not hidden.
func TestFactsMustBeDeclared(t *testing.T) {
	report := func(pass *Pass) {
		n := FactOf(pass, testLines)
		pass.Report(Diagnostic{Start: 0, End: 1, Message: strings.Repeat("x", n)})
	}
	declared := &Rule{Code: "GPU990", Name: "declared", Requires: []semantic.AnyFact{testLines}, Run: report}
	undeclared := &Rule{Code: "GPU991", Name: "undeclared", Run: report}
	runner := &Runner{Rules: []*Rule{declared, undeclared}}
	res, err := runner.Run(context.Background(), "t.py", []byte("import torch\nx = 1\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Diagnostics) != 1 || res.Diagnostics[0].Code != "GPU990" || res.Diagnostics[0].Message != "xxx" {
		t.Errorf("diagnostics: %+v", res.Diagnostics)
	}
	if len(res.RuleErrors) != 1 || !strings.Contains(res.RuleErrors[0].Error(), "without declaring it") {
		t.Errorf("rule errors: %v", res.RuleErrors)
	}
}
