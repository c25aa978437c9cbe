// Package analysistest runs rules over Python fixtures annotated with the
// diagnostics they must produce.
//
// A fixture line that must be reported ends with a comment
//
//	# want: GPU001
//	# want: GPU001, GPU005
//	# want: GPU001 "regexp the message must match"
//	# want: GPU003(info) "the diagnostic's severity must be info"
//
// Every diagnostic must be wanted on its start line, and every want met.
package analysistest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vramlint/vramlint/analysis"
)

var (
	wantComment = regexp.MustCompile(`#\s*want:\s*((?:GPU[0-9]{3}(?:\([a-z]+\))?[\s,]*)+)(?:"((?:[^"\\]|\\.)*)")?`)
	wantedCode  = regexp.MustCompile(`(GPU[0-9]{3})(?:\(([a-z]+)\))?`)
)

type want struct {
	line     int // 1-based
	code     string
	severity string // empty: any
	msg      *regexp.Regexp
}

// Wants reads the expectations of a fixture.
func Wants(src []byte) ([]want, error) {
	var out []want
	mapper := analysis.NewMapper(src) // lines end at "\n", "\r\n" or "\r"
	for i := range mapper.LineCount() {
		m := wantComment.FindStringSubmatch(string(mapper.Line(i)))
		if m == nil {
			continue
		}
		var msg *regexp.Regexp
		if m[2] != "" {
			var err error
			if msg, err = regexp.Compile(m[2]); err != nil {
				return nil, fmt.Errorf("line %d: %v", i+1, err)
			}
		}
		for _, c := range wantedCode.FindAllStringSubmatch(m[1], -1) {
			if _, err := analysis.ParseSeverity(c[2]); c[2] != "" && err != nil {
				return nil, fmt.Errorf("line %d: %v", i+1, err)
			}
			out = append(out, want{line: i + 1, code: c[1], severity: c[2], msg: msg})
		}
	}
	return out, nil
}

// Run checks every *.py fixture in dir against rules and returns the
// results by file name, for further checks (such as fix goldens).
func Run(t *testing.T, dir string, rules ...*analysis.Rule) map[string]*analysis.Result {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.py"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in %s (%v)", dir, err)
	}
	results := map[string]*analysis.Result{}
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		res := Check(t, file, src, rules...)
		results[filepath.Base(file)] = res
	}
	return results
}

// Check runs rules over one fixture's source and compares with its wants.
func Check(t *testing.T, name string, src []byte, rules ...*analysis.Rule) *analysis.Result {
	t.Helper()
	runner := &analysis.Runner{Rules: rules}
	res, err := runner.Run(context.Background(), name, src, nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for _, e := range res.RuleErrors {
		t.Errorf("%s: %v", name, e)
	}
	wants, err := Wants(src)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	met := make([]bool, len(wants))
	for _, d := range res.Diagnostics {
		line := res.Mapper().LineOf(d.Start) + 1
		checkWording(t, name, line, d, rules)
		// A want's text may match the message or the detail.
		text := d.Message + " " + d.Detail
		matched := false
		for i, w := range wants {
			if !met[i] && w.line == line && w.code == d.Code && (w.severity == "" || w.severity == d.Severity.String()) &&
				(w.msg == nil || w.msg.MatchString(text)) {
				met[i], matched = true, true
				break
			}
		}
		if !matched {
			t.Errorf("%s:%d: unexpected %s (%s): %s", name, line, d.Code, d.Severity, d.Message)
		}
	}
	for i, w := range wants {
		if !met[i] {
			msg := ""
			if w.msg != nil {
				msg = fmt.Sprintf(" matching %q", w.msg)
			}
			t.Errorf("%s:%d: wanted %s%s, not reported", name, w.line, w.code, msg)
		}
	}
	return res
}

// checkWording holds every diagnostic to what editors can show: a message
// of one line and at most analysis.MaxMessageLength code points, an
// explanation in the detail, and a severity the rule's policy names.
func checkWording(t *testing.T, name string, line int, d analysis.Diagnostic, rules []*analysis.Rule) {
	t.Helper()
	if n := utf8.RuneCountInString(d.Message); n > analysis.MaxMessageLength || strings.Contains(d.Message, "\n") {
		t.Errorf("%s:%d: %s message has %d code points (at most %d, one line): %s", name, line, d.Code, n, analysis.MaxMessageLength, d.Message)
	}
	if d.Detail == "" {
		t.Errorf("%s:%d: %s has no detail", name, line, d.Code)
	}
	rule := analysis.FindRule(rules, d.Code)
	if rule != nil && d.Severity != rule.DefaultSeverity && !strings.Contains(rule.SeverityWhen, d.Severity.String()+" when") {
		t.Errorf("%s:%d: %s reported as %s, which the rule's SeverityWhen (%q) does not name", name, line, d.Code, d.Severity, rule.SeverityWhen)
	}
}

// Sources returns the text of every file matching pattern (the rule
// fixtures, to seed fuzz targets).
func Sources(tb testing.TB, pattern string) [][]byte {
	tb.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		tb.Fatalf("no sources match %s (%v)", pattern, err)
	}
	var out [][]byte
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, src)
	}
	return out
}

// Analyze runs runner over src, failing t when the analysis errs or a rule
// fails.
func Analyze(t testing.TB, runner *analysis.Runner, src []byte) *analysis.Result {
	t.Helper()
	res, err := runner.Run(context.Background(), "fuzz.py", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.RuleErrors {
		t.Fatal(e)
	}
	return res
}
