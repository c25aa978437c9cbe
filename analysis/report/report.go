// Package report writes check results as text, JSON, SARIF or GitHub
// workflow annotations.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/workspace"
)

// Formats are the names --output-format accepts.
var Formats = []string{"text", "json", "sarif", "github"}

// Input is what a report describes.
type Input struct {
	Files   []workspace.FileResult
	Rules   []*analysis.Rule
	Version string
	// Unchecked counts the paths that could not be checked.
	Unchecked int
	// RuleFailures counts the files on which a rule failed, so they were
	// checked only in part.
	RuleFailures int
	// Fixed counts the diagnostics fixed by --fix (the files' results hold
	// what remains).
	Fixed int
}

// Write writes in in the named format.
func Write(w io.Writer, format string, in Input) error {
	switch format {
	case "text":
		return writeText(w, in)
	case "json":
		return writeJSON(w, in)
	case "sarif":
		return writeSARIF(w, in)
	case "github":
		return writeGitHub(w, in)
	}
	return fmt.Errorf("unknown output format %q (want %s)", format, strings.Join(Formats, ", "))
}

// item is one diagnostic with the file it belongs to.
type item struct {
	path string
	res  *analysis.Result
	d    analysis.Diagnostic
}

// related returns the path to show for a related place and the mapper of
// its file: the diagnostic's own, or that of another file of the project
// (shown relative to the working folder when the diagnostic's path is).
func (it item) related(rel analysis.Related) (string, *analysis.Mapper) {
	if rel.Path == "" {
		return it.path, it.res.Mapper()
	}
	return ShownAs(it.path, rel.Path), analysis.NewMapper(it.res.Others[rel.Path])
}

// ShownAs is how to name another file that a finding or a fix of the file
// at path points into: relative to the working folder when path is (the
// workspace index names files by their absolute paths).
func ShownAs(path, other string) string {
	if filepath.IsAbs(path) {
		return other
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, other); err == nil {
			return rel
		}
	}
	return other
}

func items(in Input) []item {
	var out []item
	for _, f := range in.Files {
		if f.Result == nil {
			continue
		}
		for _, d := range f.Result.Diagnostics {
			out = append(out, item{path: f.Path, res: f.Result, d: d})
		}
	}
	return out
}

// span is a 1-based start and end line/column.
type span struct{ startLine, startCol, endLine, endCol int }

func spanOf(m *analysis.Mapper, start, end int, enc analysis.Encoding) span {
	s, e := m.Position(start, enc), m.Position(end, enc)
	return span{s.Line + 1, s.Column + 1, e.Line + 1, e.Column + 1}
}

// FixSummary counts the diagnostics --fix can fix (they have a safe fix)
// and those only --unsafe-fixes can (their best fix is unsafe).
func FixSummary(in Input) (safe, unsafe int) {
	has := func(d analysis.Diagnostic, a analysis.Applicability) bool {
		return slices.ContainsFunc(d.Fixes, func(f analysis.Fix) bool { return f.Applicability == a })
	}
	for _, it := range items(in) {
		switch {
		case has(it.d, analysis.Safe):
			safe++
		case has(it.d, analysis.Unsafe):
			unsafe++
		}
	}
	return safe, unsafe
}

// writeText prints diagnostics the way ruff does: location, code, message,
// the source line with a caret, the fix, then a summary.
func writeText(w io.Writer, in Input) error {
	all := items(in)
	for _, it := range all {
		m := it.res.Mapper()
		sp := spanOf(m, it.d.Start, it.d.End, analysis.CodePoints)
		fmt.Fprintf(w, "%s:%d:%d: %s [%s] %s\n", it.path, sp.startLine, sp.startCol, it.d.Code, it.d.Severity, it.d.Message)
		line := sp.startLine - 1
		text := m.Line(line)
		gutter := fmt.Sprint(sp.startLine)
		pad := strings.Repeat(" ", len(gutter))
		fmt.Fprintf(w, "%s |\n%s | %s\n", pad, gutter, text)
		// The caret line repeats the line's tabs so the caret lines up.
		var caret strings.Builder
		prefix := string(text[:min(it.d.Start-m.LineStart(line), len(text))])
		for _, r := range prefix {
			if r == '\t' {
				caret.WriteByte('\t')
			} else {
				caret.WriteByte(' ')
			}
		}
		width := sp.endCol - sp.startCol
		if sp.endLine != sp.startLine {
			width = len([]rune(string(text))) - (sp.startCol - 1)
		}
		caret.WriteString(strings.Repeat("^", max(width, 1)))
		fmt.Fprintf(w, "%s | %s\n", pad, caret.String())
		if it.d.Detail != "" {
			fmt.Fprintf(w, "%s = why: %s\n", pad, it.d.Detail)
		}
		// Places in other files explain a finding this file alone does not
		// show (the DataLoader in train.py that runs this Dataset).
		for _, rel := range it.d.Related {
			if rel.Path != "" {
				path, rm := it.related(rel)
				rs := spanOf(rm, rel.Start, rel.End, analysis.CodePoints)
				fmt.Fprintf(w, "%s = see: %s:%d:%d: %s\n", pad, path, rs.startLine, rs.startCol, rel.Message)
			}
		}
		if len(it.d.Fixes) > 0 {
			fix := it.d.Fixes[0] // the preferred fix
			also := ""
			for _, o := range fix.Others {
				path, _ := it.related(analysis.Related{Path: o.Path})
				also += ", " + path
			}
			if also != "" {
				also = " (also edits " + also[2:] + ")"
			}
			fmt.Fprintf(w, "%s = fix (%s): %s%s\n", pad, fix.Applicability, fix.Title, also)
		}
		fmt.Fprintln(w)
	}
	n := len(all)
	switch {
	case in.Fixed > 0:
		fmt.Fprintf(w, "Found %d %s (%d fixed, %d remaining).\n", n+in.Fixed, Plural(n+in.Fixed, "problem", "problems"), in.Fixed, n)
		if in.Unchecked > 0 {
			fmt.Fprintf(w, "%d %s could not be checked or written (see above).\n", in.Unchecked, Plural(in.Unchecked, "path", "paths"))
		}
		writeRuleFailures(w, in)
		return nil
	case n == 0 && in.Unchecked > 0:
		fmt.Fprintf(w, "No problems found, but %d %s could not be checked (see above).\n", in.Unchecked, Plural(in.Unchecked, "path", "paths"))
		writeRuleFailures(w, in)
		return nil
	case n == 0 && in.RuleFailures > 0:
		fmt.Fprint(w, "No problems found, but ")
		writeRuleFailures(w, in)
		return nil
	case n == 0:
		fmt.Fprintln(w, "All checks passed!")
		return nil
	}
	noun := Plural(n, "problem", "problems")
	safe, unsafe := FixSummary(in)
	var fixable []string
	if safe > 0 {
		fixable = append(fixable, fmt.Sprintf("%d fixable with --fix", safe))
	}
	if unsafe > 0 {
		fixable = append(fixable, fmt.Sprintf("%d fixable with --unsafe-fixes", unsafe))
	}
	if len(fixable) > 0 {
		fmt.Fprintf(w, "Found %d %s (%s).\n", n, noun, strings.Join(fixable, ", "))
	} else {
		fmt.Fprintf(w, "Found %d %s.\n", n, noun)
	}
	if in.Unchecked > 0 {
		fmt.Fprintf(w, "%d %s could not be checked (see above).\n", in.Unchecked, Plural(in.Unchecked, "path", "paths"))
	}
	writeRuleFailures(w, in)
	return nil
}

// writeRuleFailures says how many files a rule failed on: their checks
// are incomplete, so the summary must not read as a clean pass.
func writeRuleFailures(w io.Writer, in Input) {
	if in.RuleFailures > 0 {
		fmt.Fprintf(w, "%d %s checked only in part: a rule failed (see above).\n", in.RuleFailures, Plural(in.RuleFailures, "file was", "files were"))
	}
}

// Plural picks the word for n things.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

type jsonPosition struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

type jsonFix struct {
	Title  string `json:"title"`
	Safety string `json:"safety"`
}

type jsonRelated struct {
	File    string       `json:"file"`
	Message string       `json:"message"`
	Start   jsonPosition `json:"start"`
	End     jsonPosition `json:"end"`
}

type jsonDiagnostic struct {
	Code     string        `json:"code"`
	Name     string        `json:"name"`
	Message  string        `json:"message"`
	Detail   string        `json:"detail"`
	Severity string        `json:"severity"`
	File     string        `json:"file"`
	Start    jsonPosition  `json:"start"`
	End      jsonPosition  `json:"end"`
	Fix      *jsonFix      `json:"fix"`
	Fixes    []jsonFix     `json:"fixes"`
	Related  []jsonRelated `json:"related"`
	URL      string        `json:"url"`
}

// writeJSON writes one array of diagnostics; columns count code points.
func writeJSON(w io.Writer, in Input) error {
	out := []jsonDiagnostic{}
	for _, it := range items(in) {
		m := it.res.Mapper()
		sp := spanOf(m, it.d.Start, it.d.End, analysis.CodePoints)
		jd := jsonDiagnostic{
			Code: it.d.Code, Message: it.d.Message, Detail: it.d.Detail, Severity: it.d.Severity.String(), File: it.path,
			Start: jsonPosition{sp.startLine, sp.startCol}, End: jsonPosition{sp.endLine, sp.endCol},
			Fixes: []jsonFix{}, Related: []jsonRelated{},
		}
		if r := analysis.FindRule(in.Rules, it.d.Code); r != nil {
			jd.Name, jd.URL = r.Name, r.DocURL()
		}
		if len(it.d.Fixes) > 0 {
			jd.Fix = &jsonFix{it.d.Fixes[0].Title, it.d.Fixes[0].Applicability.String()}
		}
		for _, f := range it.d.Fixes {
			jd.Fixes = append(jd.Fixes, jsonFix{f.Title, f.Applicability.String()})
		}
		for _, rel := range it.d.Related {
			path, rm := it.related(rel)
			rs := spanOf(rm, rel.Start, rel.End, analysis.CodePoints)
			jd.Related = append(jd.Related, jsonRelated{path, rel.Message, jsonPosition{rs.startLine, rs.startCol}, jsonPosition{rs.endLine, rs.endCol}})
		}
		out = append(out, jd)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// sarifLevel maps a severity to a SARIF result level.
func sarifLevel(s analysis.Severity) string {
	switch s {
	case analysis.SeverityError:
		return "error"
	case analysis.SeverityWarning:
		return "warning"
	}
	return "note"
}

// withDetail is the message followed by the explanation, for outputs
// read at leisure (code scanning alerts, workflow annotations).
func withDetail(d analysis.Diagnostic) string {
	if d.Detail == "" {
		return d.Message
	}
	return d.Message + "\n\n" + d.Detail
}

// writeSARIF writes SARIF 2.1.0 with rule metadata, as GitHub code
// scanning accepts it. Columns count UTF-16 code units, SARIF's default.
func writeSARIF(w io.Writer, in Input) error {
	type obj = map[string]any
	rules := []any{}
	index := map[string]int{}
	for i, r := range in.Rules {
		index[r.Code] = i
		rules = append(rules, obj{
			"id":                   r.Code,
			"name":                 r.Name,
			"shortDescription":     obj{"text": r.Summary},
			"fullDescription":      obj{"text": strings.TrimSpace(r.Doc.What)},
			"helpUri":              r.DocURL(),
			"help":                 obj{"text": strings.TrimSpace(r.Doc.Why), "markdown": r.Markdown()},
			"defaultConfiguration": obj{"level": sarifLevel(r.DefaultSeverity)},
			"properties":           obj{"tags": []string{"pytorch", "gpu-memory"}},
		})
	}
	results := []any{}
	for _, it := range items(in) {
		m := it.res.Mapper()
		region := func(m *analysis.Mapper, start, end int) obj {
			sp := spanOf(m, start, end, analysis.UTF16)
			return obj{"startLine": sp.startLine, "startColumn": sp.startCol, "endLine": sp.endLine, "endColumn": sp.endCol}
		}
		artifactOf := func(path string) obj {
			artifact := obj{"uri": filepath.ToSlash(filepath.Clean(path))}
			if !filepath.IsAbs(path) {
				artifact["uriBaseId"] = "%SRCROOT%"
			}
			return artifact
		}
		artifact := artifactOf(it.path)
		res := obj{
			"ruleId":    it.d.Code,
			"level":     sarifLevel(it.d.Severity),
			"message":   obj{"text": withDetail(it.d)},
			"locations": []any{obj{"physicalLocation": obj{"artifactLocation": artifact, "region": region(m, it.d.Start, it.d.End)}}},
		}
		if i, ok := index[it.d.Code]; ok {
			res["ruleIndex"] = i
		}
		var related []any
		for i, rel := range it.d.Related {
			path, rm := it.related(rel)
			related = append(related, obj{
				"id":               i,
				"message":          obj{"text": rel.Message},
				"physicalLocation": obj{"artifactLocation": artifactOf(path), "region": region(rm, rel.Start, rel.End)},
			})
		}
		if related != nil {
			res["relatedLocations"] = related
		}
		results = append(results, res)
	}
	doc := obj{
		"$schema": "https://json.schemastore.org/sarif-2.1.0.json",
		"version": "2.1.0",
		"runs": []any{obj{
			"tool": obj{"driver": obj{
				"name":           "vramlint",
				"version":        in.Version,
				"informationUri": "https://github.com/vramlint/vramlint",
				"rules":          rules,
			}},
			"columnKind": "utf16CodeUnits",
			"results":    results,
		}},
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

var (
	ghData     = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	ghProperty = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
)

// writeGitHub writes GitHub Actions workflow commands, one per diagnostic.
func writeGitHub(w io.Writer, in Input) error {
	for _, it := range items(in) {
		sp := spanOf(it.res.Mapper(), it.d.Start, it.d.End, analysis.CodePoints)
		level := "notice"
		switch it.d.Severity {
		case analysis.SeverityError:
			level = "error"
		case analysis.SeverityWarning:
			level = "warning"
		}
		title := it.d.Code
		if r := analysis.FindRule(in.Rules, it.d.Code); r != nil {
			title += " " + r.Name
		}
		fmt.Fprintf(w, "::%s title=%s,file=%s,line=%d,col=%d,endLine=%d,endColumn=%d::%s\n",
			level, ghProperty.Replace(title), ghProperty.Replace(filepath.ToSlash(it.path)),
			sp.startLine, sp.startCol, sp.endLine, sp.endCol, ghData.Replace(it.d.Code+" "+withDetail(it.d)))
	}
	return nil
}
