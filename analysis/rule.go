package analysis

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/vramlint/vramlint/analysis/semantic"
)

// Doc is a rule's documentation, kept in the rule's own file. The headings
// follow ruff's rule pages.
type Doc struct {
	What       string // What it does
	Why        string // Why is this bad?
	Example    string // a complete Python program that triggers the rule
	UseInstead string // the same program written so that it does not
	FixSafety  string // what the fixes change and whether they are safe
}

// FixAvailability says whether a rule's diagnostics come with fixes.
type FixAvailability int

// Fix availabilities.
const (
	FixNone FixAvailability = iota
	FixSometimes
	FixAlways
)

func (f FixAvailability) String() string {
	return [...]string{"none", "sometimes", "always"}[f]
}

// Rule is one check: its identity, its documentation and its Run function.
type Rule struct {
	Code            string // GPU + 3 digits
	Name            string // kebab-case, names the anti-pattern
	Summary         string // one line
	DefaultSeverity Severity
	// SeverityWhen says when a finding is reported louder or quieter than
	// DefaultSeverity, naming the severity ("error when ..."); empty when
	// every finding has the default. Docs, `vramlint rules` and hover show it.
	SeverityWhen string
	Fixable      FixAvailability
	Doc          Doc
	// Requires lists the declared facts the rule uses (see semantic.Fact),
	// read through FactOf. Each is computed once per file version, on the
	// first rule's first use (a fact only a fix needs costs nothing on
	// files without findings), and shared by the rules that declare it.
	Requires []semantic.AnyFact
	// Run reports the rule's diagnostics for one file through pass.Report.
	Run func(pass *Pass)
	// Local says that the rule's findings in a top-level statement depend
	// on that statement and on what the model answers about the rest of
	// the file (see semantic.File.Reanalysed), never on other statements'
	// code read directly; and that Run looks for them through the Pass's
	// CandidateCalls, CandidateAssignments and EachCandidateLoopCall. While a buffer is edited,
	// the runner then runs it only over the statements an edit touched,
	// and keeps its verified findings everywhere else.
	Local bool
}

// FactOf returns a fact the running rule declared in Requires. Asking
// for an undeclared fact is a bug in the rule: it panics, and the rule's
// failure is reported (see Result.RuleErrors).
func FactOf[T any](pass *Pass, fact *semantic.Fact[T]) T {
	if !slices.ContainsFunc(pass.Rule.Requires, func(r semantic.AnyFact) bool { return r == semantic.AnyFact(fact) }) {
		panic(fmt.Sprintf("%s uses the fact %s without declaring it in Requires", pass.Rule.Code, fact.Name()))
	}
	return fact.Of(pass.File)
}

// FindRule returns the rule with the given code in rules, or nil.
func FindRule(rules []*Rule, code string) *Rule {
	for _, r := range rules {
		if r.Code == code {
			return r
		}
	}
	return nil
}

// DocURL is where the rule's documentation lives on the web.
func (r *Rule) DocURL() string {
	return "https://github.com/vramlint/vramlint/blob/main/docs/rules/" + r.Code + ".md"
}

// SeverityText is the rule's severity policy in words: the default, and
// when a finding differs from it.
func (r *Rule) SeverityText() string {
	if r.SeverityWhen == "" {
		return r.DefaultSeverity.String()
	}
	return r.DefaultSeverity.String() + "; " + r.SeverityWhen
}

// Markdown renders the rule's documentation.
func (r *Rule) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s %s\n\n%s\n\n", r.Code, r.Name, r.Summary)
	fmt.Fprintf(&b, "Severity: %s. Fix: %s.\n\n", r.SeverityText(), r.Fixable)
	fmt.Fprintf(&b, "## What it does\n\n%s\n\n", strings.TrimSpace(r.Doc.What))
	fmt.Fprintf(&b, "## Why is this bad?\n\n%s\n\n", strings.TrimSpace(r.Doc.Why))
	fmt.Fprintf(&b, "## Example\n\n```python\n%s\n```\n\n", strings.TrimSpace(r.Doc.Example))
	fmt.Fprintf(&b, "Use instead:\n\n```python\n%s\n```\n\n", strings.TrimSpace(r.Doc.UseInstead))
	fmt.Fprintf(&b, "## Fix safety\n\n%s\n", strings.TrimSpace(r.Doc.FixSafety))
	return b.String()
}

var (
	codePattern = regexp.MustCompile(`^GPU[0-9]{3}$`)
	namePattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
)

// Validate checks the rule's identity and that its documentation is complete.
func (r *Rule) Validate() error {
	switch {
	case !codePattern.MatchString(r.Code):
		return fmt.Errorf("rule code %q is not GPU + 3 digits", r.Code)
	case !namePattern.MatchString(r.Name):
		return fmt.Errorf("%s: name %q is not kebab-case", r.Code, r.Name)
	case r.Run == nil:
		return fmt.Errorf("%s: no Run function", r.Code)
	case r.DefaultSeverity == SeverityDefault:
		return fmt.Errorf("%s: no default severity", r.Code)
	case r.Summary == "" || r.Doc.What == "" || r.Doc.Why == "" || r.Doc.Example == "" ||
		r.Doc.UseInstead == "" || r.Doc.FixSafety == "":
		return fmt.Errorf("%s: documentation is incomplete", r.Code)
	}
	return nil
}
