package analysis

import (
	"fmt"
	"iter"
	"strings"
	"unicode/utf8"
)

// Severity is how loudly a diagnostic is shown.
type Severity int

// Severities, from loudest; the zero value means "the rule's default".
const (
	SeverityDefault Severity = iota
	SeverityError
	SeverityWarning
	SeverityInfo
	SeverityHint
)

var severityNames = map[Severity]string{
	SeverityError: "error", SeverityWarning: "warning", SeverityInfo: "info", SeverityHint: "hint",
}

func (s Severity) String() string {
	if n, ok := severityNames[s]; ok {
		return n
	}
	return "default"
}

// ParseSeverity reads "error", "warning", "info" or "hint".
func ParseSeverity(s string) (Severity, error) {
	for sev, name := range severityNames {
		if strings.EqualFold(s, name) {
			return sev, nil
		}
	}
	return SeverityDefault, fmt.Errorf("unknown severity %q (want error, warning, info or hint)", s)
}

// Applicability says when a fix may be applied without asking.
type Applicability int

const (
	// Safe fixes preserve behaviour; `check --fix` and fixAll apply them.
	Safe Applicability = iota
	// Unsafe fixes change types or move code between functions; they are
	// applied only on request.
	Unsafe
	// DisplayOnly fixes are advice with no edits: `check` and hover show
	// the title, editors offer no action, --fix never applies them. A rule
	// gives one where an edit would leave the program broken.
	DisplayOnly
)

func (a Applicability) String() string {
	switch a {
	case Unsafe:
		return "unsafe"
	case DisplayOnly:
		return "display-only"
	}
	return "safe"
}

// Edit replaces the bytes [Start, End) of the source with NewText.
type Edit struct {
	Start, End int
	NewText    string
}

// MaxMessageLength is the most code points a diagnostic's Message may
// have: more and the Problems panel, virtual text and Flymake cut it.
const MaxMessageLength = 100

// Code quotes source text in a message: on one line, whitespace collapsed,
// and cut with "…" past 40 code points, so a long expression cannot push
// the advice out of a one-line message.
func Code(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > 40 {
		text = string(r[:39]) + "…"
	}
	return "`" + text + "`"
}

// ShortestFit returns the first message that fits in MaxMessageLength code
// points, or the last one: rules list the most specific wording first and
// end with one that always fits.
func ShortestFit(messages ...string) string {
	for _, m := range messages {
		if utf8.RuneCountInString(m) <= MaxMessageLength {
			return m
		}
	}
	return messages[len(messages)-1]
}

// Fix is one way to resolve a diagnostic: a verb-phrase title and the edits
// that carry it out, all against the same source.
type Fix struct {
	Title         string
	Applicability Applicability
	Edits         []Edit
	// Others are the edits the fix makes to other files of the project
	// (moving a Dataset's transfer into a loop in another module), by
	// path; each against that file's source in Result.Others.
	Others []FileEdits
}

// EditsKey identifies what a fix does: diagnostics that share a fix (the
// moves of one __getitem__) have the same key.
func (f Fix) EditsKey() string { return fmt.Sprint(f.Edits, f.Others) }

// FileEdits are a fix's edits to another file.
type FileEdits struct {
	Path  string
	Edits []Edit
}

// Related points at another place that explains a diagnostic, such as the
// DataLoader whose worker processes run a Dataset.
type Related struct {
	// Path is the other file the place is in; "" for the file itself. Its
	// offsets are into that file's source in Result.Others.
	Path       string
	Start, End int
	Message    string
}

// Diagnostic is one finding, located by byte offsets into the source.
type Diagnostic struct {
	Code  string
	Start int
	End   int
	// Message says in one short sentence (MaxMessageLength at most) what
	// is wrong and what to do: editors show it in one line and cut it.
	Message string
	// Detail explains this finding: what happens at run time, and why the
	// suggested change helps. Hover, `check`'s text output and JSON show it.
	Detail string
	// Severity is the effective severity once the runner has applied the
	// rule's default and the configuration. A rule may set it to escalate.
	Severity Severity
	Related  []Related
	// Fixes come safe first, then unsafe, then display-only; within a
	// safety level in the rule's order. The first is the preferred one.
	Fixes []Fix
}

// Ranges yields the byte ranges, start and end, that d has in its own
// file: its own, its related places there, and its fixes' edits.
func (d Diagnostic) Ranges() iter.Seq2[int, int] {
	return func(yield func(start, end int) bool) {
		if !yield(d.Start, d.End) {
			return
		}
		for _, r := range d.Related {
			if r.Path == "" && !yield(r.Start, r.End) {
				return
			}
		}
		for _, fix := range d.Fixes {
			for _, e := range fix.Edits {
				if !yield(e.Start, e.End) {
					return
				}
			}
		}
	}
}

// ReachesOtherFiles reports whether a related place or a fix of d is in
// another file.
func (d Diagnostic) ReachesOtherFiles() bool {
	for _, r := range d.Related {
		if r.Path != "" {
			return true
		}
	}
	for _, fix := range d.Fixes {
		if len(fix.Others) > 0 {
			return true
		}
	}
	return false
}
