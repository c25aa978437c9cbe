package workspace

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/vramlint/vramlint/analysis"
)

// gitignore is the rules of one .gitignore file.
type gitignore struct {
	dir   string // the folder holding the file
	rules []ignoreRule
}

type ignoreRule struct {
	re       *regexp.Regexp
	negate   bool
	dirOnly  bool
	anchored bool // matched against the path relative to dir, not the base name
}

func loadGitignore(dir string) *gitignore {
	data, err := os.ReadFile(filepath.Join(dir, ".gitignore"))
	if err != nil {
		return nil
	}
	g := &gitignore{dir: dir}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var r ignoreRule
		if strings.HasPrefix(line, "!") {
			r.negate, line = true, line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly, line = true, strings.TrimRight(line, "/")
		}
		r.anchored = strings.Contains(line, "/")
		r.re = analysis.CompileGlob(strings.TrimPrefix(line, "/"))
		g.rules = append(g.rules, r)
	}
	return g
}

// ignoredBy reports whether the stack of .gitignore files (outermost
// first) ignores path. The last matching rule wins, as in git.
func ignoredBy(stack []*gitignore, path string, isDir bool) bool {
	ignored := false
	for _, g := range stack {
		rel, err := filepath.Rel(g.dir, path)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		rel = filepath.ToSlash(rel)
		base := filepath.Base(path)
		for _, r := range g.rules {
			if r.dirOnly && !isDir {
				continue
			}
			subject := base
			if r.anchored {
				subject = rel
			}
			if r.re.MatchString(subject) {
				ignored = !r.negate
			}
		}
	}
	return ignored
}
