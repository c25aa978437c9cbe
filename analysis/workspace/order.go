package workspace

import (
	"bytes"
	"strings"

	"github.com/vramlint/vramlint/analysis"
)

// ImportOrder returns the positions of files in the order `check`
// analyses them: each after the files of its project it imports, as far
// as its import statements tell, and otherwise in the order given. A
// file's analysis asks about what it imports (a class's bases, what a
// module defines); asked before the imported file is analysed (and so
// summarised), the index parses that file to summarise it, and check then
// parses it again for its own analysis. The order changes no answer, only
// how often a file is parsed.
func (p *Projects) ImportOrder(files []string) []int {
	type module struct {
		ix   *Index
		name string
	}
	at := map[module]int{}
	for i, f := range files {
		if ix := p.For(f); ix != nil {
			if name, _ := ix.Module(f); name != "" {
				at[module{ix, name}] = i
			}
		}
	}
	order := make([]int, 0, len(files))
	seen := make([]bool, len(files))
	var visit func(i int)
	visit = func(i int) {
		seen[i] = true
		if ix := p.For(files[i]); ix != nil {
			name, pkg := ix.Module(files[i])
			for _, imported := range importedModules(files[i], name, pkg) {
				if j, ok := at[module{ix, imported}]; ok && !seen[j] {
					visit(j)
				}
			}
		}
		order = append(order, i)
	}
	for i := range files {
		if !seen[i] {
			visit(i)
		}
	}
	return order
}

// importedModules lists the modules the file at path (the module name,
// a package's __init__.py when pkg) may import, read from its import
// statements line by line: `import a.b` gives a and a.b, `from a import
// b` a and a.b (b may be a module), relative imports are made absolute.
// Nothing when the file cannot be read.
func importedModules(path, name string, pkg bool) []string {
	src, err := analysis.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []string
	add := func(m string) {
		for m != "" {
			out = append(out, m)
			i := strings.LastIndexByte(m, '.')
			if i < 0 {
				break
			}
			m = m[:i]
		}
	}
	lines := bytes.Split(src, []byte{'\n'})
	for k := 0; k < len(lines); k++ {
		line := strings.TrimSpace(string(lines[k]))
		switch {
		case strings.HasPrefix(line, "import "):
			for _, part := range strings.Split(strings.TrimPrefix(line, "import "), ",") {
				add(firstWord(part))
			}
		case strings.HasPrefix(line, "from "):
			from, names, ok := strings.Cut(strings.TrimPrefix(line, "from "), " import ")
			if !ok {
				continue
			}
			// A parenthesised list may run over several lines.
			for strings.Contains(names, "(") && !strings.Contains(names, ")") && k+1 < len(lines) {
				k++
				names += " " + strings.TrimSpace(string(lines[k]))
			}
			base := absoluteModule(strings.TrimSpace(from), name, pkg)
			if base == "" {
				continue
			}
			add(base)
			for _, n := range strings.Split(strings.Trim(strings.TrimSpace(names), "()"), ",") {
				if w := firstWord(n); w != "" && w != "*" {
					out = append(out, base+"."+w)
				}
			}
		}
	}
	return out
}

// firstWord is the first space-separated word of s, without a comment.
func firstWord(s string) string {
	s, _, _ = strings.Cut(s, "#")
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

// absoluteModule makes the module of a `from` import absolute, seen from
// module name (a package's __init__.py when pkg); "" when it reaches
// above the project's roots.
func absoluteModule(from, name string, pkg bool) string {
	dots := len(from) - len(strings.TrimLeft(from, "."))
	if dots == 0 {
		return from
	}
	parent := func(m string) string {
		if i := strings.LastIndexByte(m, '.'); i >= 0 {
			return m[:i]
		}
		return ""
	}
	base := name // the package the first dot names
	if !pkg {
		base = parent(name)
	}
	for range dots - 1 {
		if base == "" {
			return ""
		}
		base = parent(base)
	}
	switch rest := from[dots:]; {
	case base == "":
		return rest
	case rest == "":
		return base
	default:
		return base + "." + rest
	}
}
