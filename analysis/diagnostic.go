package analysis

import (
	"fmt"
	"strings"
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
	// DisplayOnly fixes are shown but never applied automatically.
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

// Fix is one way to resolve a diagnostic: a verb-phrase title and the edits
// that carry it out, all against the same source.
type Fix struct {
	Title         string
	Applicability Applicability
	Edits         []Edit
}

// Related points at another place that explains a diagnostic, such as the
// DataLoader whose worker processes run a Dataset.
type Related struct {
	Start, End int
	Message    string
}

// Diagnostic is one finding, located by byte offsets into the source.
type Diagnostic struct {
	Code    string
	Start   int
	End     int
	Message string
	// Severity is the effective severity once the runner has applied the
	// rule's default and the configuration. A rule may set it to escalate.
	Severity Severity
	Related  []Related
	Fixes    []Fix
}
