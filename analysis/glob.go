package analysis

import (
	"path"
	"regexp"
	"strings"
	"sync"
)

var globCache sync.Map // pattern -> *regexp.Regexp

// CompileGlob compiles a gitignore-style glob: `*` and `?` stay within one
// path segment, `**` spans segments, `[...]` is a character class.
func CompileGlob(pattern string) *regexp.Regexp {
	if re, ok := globCache.Load(pattern); ok {
		return re.(*regexp.Regexp)
	}
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch {
		case c == '*' && strings.HasPrefix(pattern[i:], "**/"):
			b.WriteString("(?:.*/)?")
			i += 2
		case c == '*' && strings.HasPrefix(pattern[i:], "**"):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			end := strings.IndexByte(pattern[i+1:], ']')
			if end < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := pattern[i+1 : i+1+end]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += end + 1
		case c == '\\' && i+1 < len(pattern):
			i++
			b.WriteString(regexp.QuoteMeta(pattern[i : i+1]))
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		re = regexp.MustCompile(`^` + regexp.QuoteMeta(pattern) + `$`)
	}
	globCache.Store(pattern, re)
	return re
}

// MatchGlob reports whether the slash-separated relative path rel, or one
// of its parent directories, matches pattern. A pattern without a slash
// also matches any single path segment, as in .gitignore and ruff's
// exclude: `build` excludes `a/build/x.py`.
func MatchGlob(pattern, rel string) bool {
	pattern = strings.TrimPrefix(strings.TrimSuffix(pattern, "/"), "./")
	rel = strings.TrimPrefix(rel, "./")
	re := CompileGlob(strings.TrimPrefix(pattern, "/"))
	anchored := strings.Contains(strings.TrimSuffix(pattern, "/"), "/")
	for p := rel; p != "." && p != "/" && p != ""; p = path.Dir(p) {
		if re.MatchString(p) || !anchored && re.MatchString(path.Base(p)) {
			return true
		}
	}
	return false
}
