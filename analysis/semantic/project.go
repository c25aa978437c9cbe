package semantic

import (
	"slices"
	"strconv"
	"strings"

	"github.com/vramlint/vramlint/analysis/pyast"
)

// Project is what a file's model can see of the rest of its workspace: the
// workspace's own modules, found by Python's import rules. Third-party
// packages are not part of it. A file analysed alone has none.
type Project interface {
	// Module names the module the file at path is (`pkg.data`), and says
	// whether it is a package's __init__.py; "" when it is outside the
	// project's import roots.
	Module(path string) (name string, pkg bool)
	// Resolve finds where a qualified name seen from the file at path is
	// defined in the project, following re-exports (`from .data import
	// BaseDS` in an __init__.py): the defining file and the name at its
	// top level. ok is false for names outside the project.
	Resolve(from, qualified string) (path, name string, ok bool)
	// ClassBases returns the qualified bases (as seen from the defining
	// file) of the class defined at the top level of path under name.
	ClassBases(path, name string) (bases []string, ok bool)
	// LoadersUsing lists the DataLoaders in other files of the project that
	// run what the file at path defines at its top level, by name: built
	// over an instance of the class, or with the function as collate_fn.
	LoadersUsing(path string) map[string][]RemoteLoader
	// Model returns the model of another file of the project (the open
	// buffer's when it is open), or nil when it cannot be read.
	Model(path string) *File
	// FunctionFacts is what a function of the project does, as seen from
	// a call to it in the file at from (qualified as that file sees it:
	// `pkg.metrics.batch_error`, or `pkg.model.Net.objective` for a method):
	// the summary of its body in its own file. ok is false when the name
	// is not a top-level function, or a method of a top-level class, of the
	// project.
	FunctionFacts(from, qualified string) (facts FunctionFacts, ok bool)
	// CallersUnderNoGrad counts the calls, in the project's other files,
	// of the function defined at the top level of path under name, and
	// says whether every one of them runs with autograd off as its own
	// file sees it (a no-grad `with`, a decorator, that file's callers).
	// calls is -1 when the answer is not known yet (the server reads the
	// other files in the background): what depends on it is withheld, and
	// the project moves the file's Generation on if the answer, once
	// known, would have it reported.
	CallersUnderNoGrad(path, name string) (calls int, underNoGrad bool)
	// MethodCallersUnderNoGrad is CallersUnderNoGrad for a method: the
	// calls, in the project's other files, of any method of that name
	// (`x.name(...)`, whatever x is).
	MethodCallersUnderNoGrad(path, name string) (calls int, underNoGrad bool)
	// Generation changes whenever the summary of a file other than path
	// changes: answers that read other files are remembered per generation.
	Generation(path string) uint64
}

// RemoteLoader is a DataLoader in another file of the project.
type RemoteLoader struct {
	Path       string
	Start, End int // the call, as offsets into that file's source
	// Workers is the literal num_workers (Known false when it is not one).
	Workers      int
	WorkersKnown bool
	WorkersText  string
	Pinned       bool
	// Line is the call's first line, from 0.
	Line int
}

// ModuleInfo says which file a model is for and where it sits in its
// project.
type ModuleInfo struct {
	Path    string
	Project Project // nil: the file alone
}

// moduleName is the file's module and package for relative imports.
// It is asked once per model (each relative import reads it).
func (f *File) moduleName() (module, pkg string) {
	f.module.Do(func() {
		if f.Project == nil {
			return
		}
		module, isPkg := f.Project.Module(f.Path)
		f.module.name, f.module.pkg = module, ""
		if isPkg {
			f.module.pkg = module
		} else if i := strings.LastIndexByte(module, '.'); i >= 0 {
			f.module.pkg = module[:i]
		}
	})
	return f.module.name, f.module.pkg
}

// resolveRelative turns `from ..x import y`'s module part into an absolute
// one, or "" when the file's package is unknown or the dots go above it.
func (f *File) resolveRelative(relative string) string {
	dots := len(relative) - len(strings.TrimLeft(relative, "."))
	rest := relative[dots:]
	module, pkg := f.moduleName()
	if module == "" {
		return "" // alone, or outside the import roots
	}
	parts := []string{}
	if pkg != "" {
		parts = strings.Split(pkg, ".")
	}
	if dots-1 > len(parts) {
		return ""
	}
	parts = parts[:len(parts)-(dots-1)]
	if rest != "" {
		parts = append(parts, rest)
	}
	return strings.Join(parts, ".")
}

// projectStructure is what the remembered answers read of the project:
// the file's module and the other files' summaries.
func (f *File) projectStructure() string {
	if f.Project == nil {
		return ""
	}
	module, _ := f.moduleName()
	return module + "@" + strconv.FormatUint(f.Project.Generation(f.Path), 10)
}

// derivesFromProject follows a base class defined in another file of the
// project, whose own bases are qualified names as that file sees them.
func (f *File) derivesFromProject(from, qualified string, seen map[string]bool, depth int, match func(string) bool) bool {
	if f.Project == nil || depth > 16 {
		return false
	}
	path, name, ok := f.Project.Resolve(from, qualified)
	if !ok || seen[path+"\x00"+name] {
		return false
	}
	seen[path+"\x00"+name] = true
	bases, ok := f.Project.ClassBases(path, name)
	if !ok {
		return false
	}
	for _, b := range bases {
		if match(canonical(b)) || f.derivesFromProject(path, b, seen, depth+1, match) {
			return true
		}
	}
	return false
}

// FunctionFacts are the parts of a Summary other files use.
type FunctionFacts struct {
	Behaviour
	// ReturnsTensor: every return statement returns one tensor (what the
	// .item() and .detach() fixes need to know of a call's value).
	ReturnsTensor bool
}

// factsOf is the FunctionFacts of a definition of f.
func (f *File) factsOf(def *pyast.Node) FunctionFacts {
	s := f.summary(def)
	return FunctionFacts{Behaviour: s.Behaviour, ReturnsTensor: f.returnsTensor(def, 0)}
}

// FactsOf summarises the top-level function name of f, or the method
// "Class.method" of a top-level nn.Module class (found in its bases in f
// too); ok is false when f has none: what FunctionFacts answers for it.
func (f *File) FactsOf(name string) (FunctionFacts, bool) {
	if class, method, ok := strings.Cut(name, "."); ok {
		c := f.Classes[class]
		if c == nil || c.Node.Ancestor("class_definition", "function_definition") != nil {
			return FunctionFacts{}, false
		}
		def := f.methodOf(c, method, 0)
		if def == nil {
			return FunctionFacts{}, false
		}
		// Only a model's methods, and a meter's or recorder's: what the name
		// heuristics judge "runs a model" inside a transform or a data
		// class is too weak a guess to carry to other files. A method
		// that sums its argument into its object does nothing else
		// those heuristics would see. Those two facts are what the def's
		// Summary would say; computed alone, they spare the method's taint
		// (EveryFunctionFacts asks about every method).
		if !f.IsModule(c) {
			sums, stored := sumsFirstArgument(f, def), storedParameters(f, def)
			if !sums && stored == 0 {
				return FunctionFacts{}, false
			}
			return FunctionFacts{Behaviour: Behaviour{SumsFirstArgument: sums, StoredArguments: stored}}, true
		}
		return f.factsOf(def), true
	}
	defs := f.Functions[name]
	for i := len(defs) - 1; i >= 0; i-- {
		if defs[i].Ancestor("class_definition", "function_definition") == nil {
			return f.factsOf(defs[i]), true
		}
	}
	return FunctionFacts{}, false
}

// EveryFunctionFacts calls yield with the facts of every name FactsOf
// has facts of: each top-level function, and each method of a top-level
// class, its own or one it inherits from a class of f. The workspace index
// keeps them all with a file read from disk, so that no question about
// the file's functions parses it again (see workspace.Index).
func (f *File) EveryFunctionFacts(yield func(name string, facts FunctionFacts)) {
	for name, defs := range f.Functions {
		if !slices.ContainsFunc(defs, func(d *pyast.Node) bool { return d.Ancestor("class_definition", "function_definition") == nil }) {
			continue
		}
		if facts, ok := f.FactsOf(name); ok {
			yield(name, facts)
		}
	}
	for name, c := range f.Classes {
		if c.Node.Ancestor("class_definition", "function_definition") != nil {
			continue
		}
		methods := map[string]bool{}
		f.inheritedMethods(c, 0, methods)
		for method := range methods {
			if facts, ok := f.FactsOf(name + "." + method); ok {
				yield(name+"."+method, facts)
			}
		}
	}
}

// inheritedMethods adds to names the methods methodOf finds for c: its
// own, and those of its bases defined in f, as deep as methodOf looks.
func (f *File) inheritedMethods(c *Class, depth int, names map[string]bool) {
	if c == nil || depth > 8 {
		return
	}
	for name := range c.Methods {
		names[name] = true
	}
	for _, b := range c.Bases {
		if b.Is("identifier") {
			f.inheritedMethods(f.Classes[f.Text(b)], depth+1, names)
		}
	}
}

// AskProjectFacts asks the project (see Project.FunctionFacts) for the
// facts of every call of f to a function of another file of the project,
// as the judgements of later versions may: an edit of a class attribute,
// or a name bound anew, judges calls of the class that no rule had asked
// about, and the workspace index reads and parses a file the first time
// one of its functions is asked for (60-90 ms a file in tensordict's
// package). The index keeps what it found while those files stay the
// same; asked off the path to diagnostics, once a buffer is opened, the
// keystrokes after do not pay for it. Each function is asked once, in the
// order of their names, so that the functions of one module come one after
// another: the index keeps the models of a few files only (less than a
// megabyte of their sources), and asked in the order of its calls,
// tensordict's base.py went from module to module, each parsed again for
// every return to it (22 parses of 10 files, half a second of CPU).
func (f *File) AskProjectFacts() {
	if f.Project == nil {
		return
	}
	var asked []string
	for _, ix := range f.indexes {
		for _, c := range ix.calls {
			if q := f.projectQualified(c); q != "" {
				asked = append(asked, q)
			}
		}
	}
	slices.Sort(asked)
	for _, q := range slices.Compact(asked) {
		f.Project.FunctionFacts(f.Path, q)
	}
}

// projectCall answers for a call of a function defined in another file of
// the project (`from .metrics import batch_error`, `metrics.batch_error`):
// its facts, or ok false.
func (f *File) projectCall(call *pyast.Node) (FunctionFacts, bool) {
	if f.Project == nil {
		return FunctionFacts{}, false
	}
	q := f.projectQualified(call)
	if q == "" {
		return FunctionFacts{}, false
	}
	return f.Project.FunctionFacts(f.Path, q)
}

// projectQualified is the name a call's callee may have among the
// project's functions, as f sees it (see Project.FunctionFacts); "" when
// it cannot be one.
func (f *File) projectQualified(call *pyast.Node) string {
	fn := call.Child("function")
	if !fn.Is("identifier", "attribute") {
		return ""
	}
	q := f.QualifiedName(fn)
	switch {
	case q == "" && fn.Is("attribute"):
		// A method of an instance of an imported class: `self.model =
		// Net()` with Net in model.py, then `self.model.objective(x)`.
		if t := f.typeOfInstance(fn.Child("object"), 0); t != "" {
			q = t + "." + f.Text(fn.Child("attribute"))
		}
	case q == "" && fn.Is("identifier"):
		// Calling an instance runs its forward: `scorer(x)`.
		if t := f.typeOfInstance(fn, 0); t != "" {
			q = t + ".forward"
		}
	}
	if strings.HasPrefix(q, "torch.") {
		return ""
	}
	return q
}
