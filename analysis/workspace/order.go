package workspace

import (
	"bytes"
	"strings"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/semantic"
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
	indexes := make([]*Index, len(files))
	modules := make([]string, len(files))
	packages := make([]bool, len(files))
	for i, f := range files {
		if ix := p.For(f); ix != nil {
			indexes[i] = ix
			modules[i], packages[i] = ix.Module(f)
			if modules[i] != "" {
				at[module{ix, modules[i]}] = i
			}
		}
	}
	// Reading the files is most of the work (PyTorch's 1,141: 90 ms of
	// CPU): on every core.
	imports := make([][]string, len(files))
	semantic.InParallel(len(files), func(i int) {
		if indexes[i] != nil {
			imports[i] = importedModules(files[i], modules[i], packages[i])
		}
	})
	order := make([]int, 0, len(files))
	seen := make([]bool, len(files))
	var visit func(i int)
	visit = func(i int) {
		seen[i] = true
		for _, imported := range imports[i] {
			if j, ok := at[module{indexes[i], imported}]; ok && !seen[j] {
				visit(j)
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
	// Line by line, without splitting the text: most lines import nothing.
	rest := src
	nextLine := func() []byte {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		return bytes.TrimSpace(line)
	}
	for len(rest) > 0 {
		trimmed := nextLine()
		if !bytes.HasPrefix(trimmed, []byte("import ")) && !bytes.HasPrefix(trimmed, []byte("from ")) {
			continue
		}
		line := string(trimmed)
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
			for strings.Contains(names, "(") && !strings.Contains(names, ")") && len(rest) > 0 {
				names += " " + string(nextLine())
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
