package report

import (
	"bytes"
	"strings"
	"testing"
)

// A file on which a rule failed was checked only in part: the summary must
// say so rather than "All checks passed!".
func TestRuleFailureIsNotAPass(t *testing.T) {
	for _, in := range []Input{
		{RuleFailures: 1},
		{RuleFailures: 2, Unchecked: 1},
		{RuleFailures: 1, Fixed: 3},
	} {
		var out bytes.Buffer
		if err := Write(&out, "text", in); err != nil {
			t.Fatal(err)
		}
		text := out.String()
		if strings.Contains(text, "All checks passed") || !strings.Contains(text, "checked only in part") {
			t.Errorf("%+v: summary %q", in, text)
		}
	}
	var out bytes.Buffer
	if err := Write(&out, "text", Input{}); err != nil || out.String() != "All checks passed!\n" {
		t.Errorf("clean summary %q, %v", out.String(), err)
	}
}
