package analysis

import (
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/semantic"
)

var (
	// `# noqa`, `# noqa: GPU001`, `# noqa: GPU001, GPU005` (flake8/ruff style).
	lineNoqa = regexp.MustCompile(`(?i)#\s*noqa(?:\s*:\s*([A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?`)
	// `# vramlint: noqa` or `# vramlint: noqa: GPU005` anywhere in a file.
	fileNoqa = regexp.MustCompile(`(?i)#\s*vramlint\s*:\s*noqa(?:\s*:\s*([A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?`)
	codeList = regexp.MustCompile(`[A-Za-z]+[0-9]+`)
)

// suppressions are the noqa comments of one file.
type suppressions struct {
	fileAll   bool
	fileCodes map[string]bool
	lines     map[int]codeSet // line -> codes (nil set: all codes)
}

type codeSet map[string]bool

func parseSuppressions(f *semantic.File) *suppressions {
	s := &suppressions{fileCodes: map[string]bool{}, lines: map[int]codeSet{}}
	for _, c := range f.NoqaComments() { // most comments need no regular expression
		text := f.Text(c)
		if m := fileNoqa.FindStringSubmatch(text); m != nil {
			if m[1] == "" {
				s.fileAll = true
			}
			for _, code := range codeList.FindAllString(m[1], -1) {
				s.fileCodes[strings.ToUpper(code)] = true
			}
			continue
		}
		m := lineNoqa.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		line := f.Mapper.LineOf(c.Start())
		if m[1] == "" {
			s.lines[line] = nil
			continue
		}
		set, seen := s.lines[line]
		if seen && set == nil {
			continue // a bare noqa already covers everything
		}
		if set == nil {
			set = codeSet{}
			s.lines[line] = set
		}
		for _, code := range codeList.FindAllString(m[1], -1) {
			set[strings.ToUpper(code)] = true
		}
	}
	return s
}

func (s *suppressions) file(code string) bool { return s.fileAll || s.fileCodes[code] }

// at reports whether code is suppressed on the line of offset off of f's
// text. Most files have no noqa comment: then no line is looked up (every
// finding of every rule asks, on every version).
func (s *suppressions) at(f *semantic.File, off int, code string) bool {
	if len(s.lines) == 0 {
		return false
	}
	set, ok := s.lines[f.Mapper.LineOf(off)]
	return ok && (set == nil || set[code])
}

// NoqaCodes returns the codes a `# noqa:` comment in text names, where the
// comment's code list ends within text, and whether text holds a noqa
// comment at all (a bare noqa: no codes, ok true).
func NoqaCodes(text string) (codes []string, listEnd int, ok bool) {
	m := lineNoqa.FindStringSubmatchIndex(text)
	if m == nil || fileNoqa.MatchString(text) {
		return nil, 0, false
	}
	if m[2] < 0 {
		return nil, m[1], true
	}
	return codeList.FindAllString(text[m[2]:m[3]], -1), m[3], true
}

// NoqaCodeAt returns the rule code written at byte offset off of a
// `# noqa: ...` comment's text, or "".
func NoqaCodeAt(text string, off int) string {
	m := lineNoqa.FindStringSubmatchIndex(text)
	if m == nil || m[2] < 0 || off < m[2] || off > m[3] {
		return ""
	}
	for _, loc := range codeList.FindAllStringIndex(text[m[2]:m[3]], -1) {
		if m[2]+loc[0] <= off && off <= m[2]+loc[1] {
			return strings.ToUpper(text[m[2]+loc[0] : m[2]+loc[1]])
		}
	}
	return ""
}

// NoqaEdit returns the edit that adds the diagnostic's code to a
// `# noqa: ...` comment at the end of its line, or adds such a comment. A
// bare `# noqa` already covers every code: then there is nothing to add.
// The diagnostic's offsets and the edit's are the source's.
func (res *Result) NoqaEdit(diag Diagnostic) (Edit, bool) {
	if res.file == nil {
		return res.compact.noqaEdit(res.Diagnostics, diag)
	}
	f := res.file
	at := func(off int) Edit {
		return Edit{Start: f.ToSource(off), End: f.ToSource(off)}
	}
	line := f.Mapper.LineOf(f.FromSource(diag.Start))
	lineStart, lineEnd := f.Mapper.LineStart(line), f.Mapper.LineEnd(line)
	// Only a comment that mentions noqa can hold codes (see NoqaCodes);
	// they are in source order.
	noqa := f.NoqaComments()
	for _, c := range noqa[sort.Search(len(noqa), func(i int) bool { return noqa[i].Start() >= lineStart }):] {
		if c.Start() >= lineEnd {
			break
		}
		text := f.Text(c)
		codes, listEnd, ok := NoqaCodes(text)
		switch {
		case !ok:
			continue
		case len(codes) == 0:
			return Edit{}, false
		case slices.Contains(codes, diag.Code):
			return Edit{}, false
		}
		e := at(c.Start() + listEnd)
		e.NewText = ", " + diag.Code
		return e, true
	}
	// The line's end may lie inside a multi-line string: a comment there
	// would become part of the string.
	if stringAcross(f.Tree, lineEnd) {
		return Edit{}, false
	}
	e := at(lineEnd)
	e.NewText = "  # noqa: " + diag.Code
	return e, true
}

// NoqaCodeAt returns the rule code under the source offset off inside a
// `# noqa: ...` comment, and the comment's range; "" when there is none.
func (res *Result) NoqaCodeAt(off int) (code string, start, end int) {
	if res.file == nil {
		if res.compact != nil {
			for _, c := range res.compact.comments {
				if c[0] <= off && off <= c[1] {
					if code = NoqaCodeAt(string(res.Src[c[0]:c[1]]), off-c[0]); code != "" {
						return code, c[0], c[1]
					}
				}
			}
		}
		return "", 0, 0
	}
	f := res.file
	for _, c := range f.Comments() {
		if cs, ce := f.ToSource(c.Start()), f.ToSource(c.End()); cs <= off && off <= ce {
			if code = NoqaCodeAt(f.Text(c), off-cs); code != "" {
				return code, cs, ce
			}
		}
	}
	return "", 0, 0
}

// noqaEdit answers NoqaEdit for a compacted result, from the answers
// Compact kept.
func (c *compacted) noqaEdit(diags []Diagnostic, diag Diagnostic) (Edit, bool) {
	if c == nil {
		return Edit{}, false
	}
	for i, d := range diags {
		if d.Code == diag.Code && d.Start == diag.Start && d.End == diag.End && d.Message == diag.Message {
			return c.noqa[i].edit, c.noqa[i].ok
		}
	}
	return Edit{}, false
}

// stringAcross reports whether off lies inside a string of t, past its
// first character and before its last. It looks only into the nodes that
// hold off: a finding's line in a block of thousands of statements (or a
// file of thousands) is not a walk past all of them.
func stringAcross(t *pyast.Tree, off int) bool {
	stmts := t.Statements
	for i := sort.Search(len(stmts), func(i int) bool { return stmts[i].End() >= off }); i < len(stmts) && stmts[i].Start() <= off; i++ {
		if stringWithin(stmts[i], off) {
			return true
		}
	}
	return false
}

// stringWithin is stringAcross for n and the nodes in it.
func stringWithin(n *pyast.Node, off int) bool {
	if n.Is("string") && n.Start() < off && off < n.End() {
		return true
	}
	for c := n.FirstChild(); c != nil && c.Start() <= off; c = c.NextSibling() {
		if c.End() >= off && stringWithin(c, off) {
			return true
		}
	}
	return false
}
