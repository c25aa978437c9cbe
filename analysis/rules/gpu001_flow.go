package rules

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"

	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/semantic"
)

// This file follows a DataLoader from where it is built to the loops that
// consume its batches, for GPU001's fix: after the fix the worker code
// returns CPU tensors, so every loop over the loader must move its batch,
// wherever that loop is. A loader passed to a function defined in this
// file is followed into it (its parameter is the same loader there); a use
// that cannot be followed (a call into a library trainer, a return, a new
// binding, next(iter(loader))) is an escape: batches may be consumed where
// the fix cannot see, so the fix must not be applied.

// maxCallDepth bounds how deep calls, returns and renamings are followed.
const maxCallDepth = 6

// iterWrappers are the calls a for loop may wrap a loader in; its batches
// still come out of the loop.
var iterWrappers = map[string]bool{"enumerate": true, "tqdm": true, "tqdm.tqdm": true, "tqdm.auto.tqdm": true, "iter": true}

// loaderFlow is where one loader's batches go.
type loaderFlow struct {
	loops   []*pyast.Node // the for loops over it, in any function
	escapes []lineText    // uses that cannot be followed, described
	// reads records the code the flow was followed through (nil: not
	// recorded), see semantic.RememberReading.
	reads *semantic.Reads
}

// lineText is a text that may cite a line of the file: before, the line
// (counted from 1) of offset at, after; at < 0 cites none. GPU001's
// verdicts keep their texts so, since a verdict carries over to versions
// where lines above have come or gone.
type lineText struct {
	before string
	at     int
	after  string
}

func plainText(s string) lineText { return lineText{before: s, at: -1} }

// String tells the text as it reads in f.
func (t lineText) String(f *semantic.File) string {
	if t.at < 0 {
		return t.before + t.after
	}
	return t.before + strconv.Itoa(f.Mapper.LineOf(t.at)+1) + t.after
}

// within returns the text with before and after around it.
func (t lineText) within(before, after string) lineText {
	return lineText{before: before + t.before, at: t.at, after: t.after + after}
}

// followLoader finds the loops over a loader and the uses that escape,
// recording what it reads in reads (nil for none).
func followLoader(f *semantic.File, loader *semantic.DataLoader, reads *semantic.Reads) loaderFlow {
	flow := loaderFlow{reads: reads}
	seen := map[string]bool{}
	reads.Code(loader.Call)
	if loader.Var == "" {
		flow.use(f, loader.Call, 0, seen)
	} else {
		for _, n := range occurrences(f, loader.Var, semantic.Scope(loader.Call), loader.Call, reads) {
			flow.use(f, n, 0, seen)
		}
	}
	slices.SortFunc(flow.loops, func(a, b *pyast.Node) int { return a.Start() - b.Start() })
	flow.loops = slices.Compact(flow.loops)
	return flow
}

// use classifies one use n of the loader (a name, an attribute or the
// DataLoader call itself).
func (flow *loaderFlow) use(f *semantic.File, n *pyast.Node, depth int, seen map[string]bool) {
	if depth > maxCallDepth {
		flow.escapes = append(flow.escapes, lineText{"it passes through too many calls to follow, at line ", n.Start(), ""})
		return
	}
	p := n.Parent()
	switch {
	case p == nil:
	case p.Is("for_statement") && p.Child("right") == n:
		flow.loops = append(flow.loops, p)
		return
	case p.Is("attribute") && p.Child("object") == n:
		return // loader.dataset, loader.batch_size: no batch leaves
	case p.Is("assignment") && p.Child("right") == n && p.Child("left").Is("identifier"):
		// dl = loader: the same loader under another name.
		for _, m := range occurrences(f, f.Text(p.Child("left")), semantic.Scope(p), n, flow.reads) {
			flow.use(f, m, depth+1, seen)
		}
		return
	case p.Is("return_statement"):
		// def make_loader(): return DataLoader(...): the loader is what
		// every call of the builder gives.
		fn := semantic.Scope(n)
		if !fn.Is("function_definition") || f.EnclosingClass(fn) != nil {
			break
		}
		name := f.Text(fn.Child("name"))
		// Which functions have that name, and the calls of it, anywhere.
		flow.reads.Name(name)
		if len(f.Functions[name]) != 1 {
			break
		}
		key := fmt.Sprintf("return:%d", fn.Start())
		if seen[key] {
			return
		}
		seen[key] = true
		called := false
		for _, call := range f.Calls() {
			if fc := call.Child("function"); fc.Is("identifier") && f.Text(fc) == name {
				called = true
				flow.use(f, call, depth+1, seen)
			}
		}
		if !called {
			flow.escapes = append(flow.escapes, plainText("it is returned from `"+name+"`, which this file does not call"))
		}
		return
	case p.Is("argument_list") || p.Is("keyword_argument") && p.Child("value") == n:
		call := p.Parent()
		keyword := ""
		if p.Is("keyword_argument") {
			keyword, call = f.Text(p.Child("name")), p.Parent().Parent()
		}
		callee := f.Text(call.Child("function"))
		switch {
		case callee == "len":
			return
		case iterWrappers[callee]:
			// Only as the iterable of a for loop: for i, b in enumerate(loader).
			outer := call
			for outer.Parent() != nil && outer.Parent().Is("argument_list") && iterWrappers[f.Text(outer.Parent().Parent().Child("function"))] {
				outer = outer.Parent().Parent()
			}
			if outer.Parent() != nil && outer.Parent().Is("for_statement") && outer.Parent().Child("right") == outer {
				flow.loops = append(flow.loops, outer.Parent())
				return
			}
			flow.escapes = append(flow.escapes, lineText{"it is passed to `" + callee + "` on line ", n.Start(), ""})
			return
		}
		def, param := calledParameter(f, call, n, keyword, flow.reads)
		if def == nil {
			flow.escapes = append(flow.escapes, lineText{"it is passed to `" + callee + "` on line ", n.Start(), ""})
			return
		}
		key := fmt.Sprintf("%d:%s", def.Start(), param)
		if seen[key] {
			return
		}
		seen[key] = true
		for _, m := range occurrences(f, param, def, nil, flow.reads) {
			flow.use(f, m, depth+1, seen)
		}
		return
	}
	flow.escapes = append(flow.escapes, lineText{"it is used on line ", n.Start(), ""})
}

// calledParameter resolves a call to a plain function defined in this
// file (one definition of that name) and returns it with the name of the
// parameter that receives arg; nil when it cannot be told. It records
// the lookup of the function, and its code, in reads.
func calledParameter(f *semantic.File, call, arg *pyast.Node, keyword string, reads *semantic.Reads) (*pyast.Node, string) {
	fn := call.Child("function")
	if !fn.Is("identifier") {
		return nil, "" // methods and library calls are not followed
	}
	reads.Name(f.Text(fn)) // a definition added under that name changes the answer
	defs := f.Functions[f.Text(fn)]
	if len(defs) != 1 || !defs[0].Is("function_definition") || f.EnclosingClass(defs[0]) != nil {
		return nil, ""
	}
	def := defs[0]
	reads.Code(def)
	params := parameterNames(f, def)
	if params == nil {
		return nil, ""
	}
	if keyword != "" {
		if slices.Contains(params, keyword) {
			return def, keyword
		}
		return nil, ""
	}
	pos := 0
	for _, a := range call.Child("arguments").NamedChildren() {
		switch {
		case a.Is("keyword_argument"):
			continue
		case a.Is("list_splat", "dictionary_splat"):
			return nil, ""
		case a == arg:
			if pos < len(params) {
				return def, params[pos]
			}
			return nil, ""
		}
		pos++
	}
	return nil, ""
}

// parameterNames lists a function's positional parameters by name; nil
// when it takes *args or **kwargs, which the flow does not follow.
func parameterNames(f *semantic.File, def *pyast.Node) []string {
	names := []string{}
	for _, p := range def.Child("parameters").NamedChildren() {
		switch {
		case p.Is("identifier"):
			names = append(names, f.Text(p))
		case p.Is("typed_parameter") && p.FirstNamed() != nil:
			names = append(names, f.Text(p.FirstNamed()))
		case p.Is("default_parameter", "typed_default_parameter"):
			names = append(names, f.Text(p.Child("name")))
		case p.Is("list_splat_pattern", "dictionary_splat_pattern"):
			return nil
		}
	}
	return names
}

// occurrences lists the uses of name in scope's code and in the functions
// nested in it that do not bind name themselves: identifiers (or, for a
// dotted name, attributes) that are not the assignment of value to name, a
// parameter declaration, or the name part of an attribute or keyword. It
// records what it reads in reads: scope's code, or for the module every
// statement that mentions name.
func occurrences(f *semantic.File, name string, scope, value *pyast.Node, reads *semantic.Reads) []*pyast.Node {
	var out []*pyast.Node
	kind := "identifier"
	if slices.Contains([]byte(name), '.') {
		kind = "attribute"
		// self.loader: anywhere in the class that built it.
		if c := f.EnclosingClass(scope); c != nil {
			scope = c.Node
		}
	}
	switch {
	case scope != f.Tree.Root:
		reads.Code(scope)
	case kind == "identifier":
		reads.Name(name)
	default:
		reads.Whole() // an attribute chain at module level: not told by Name
	}
	visit := func(n *pyast.Node) bool {
		if n != scope && n.Is("function_definition", "lambda") && kind == "identifier" && bindsLocally(f, n, name) {
			return false
		}
		if n.Is("parameters", "lambda_parameters") {
			return false
		}
		if n.Kind() != kind || f.Text(n) != name {
			return true
		}
		p := n.Parent()
		switch {
		case boundByComprehension(f, n, name):
		case p.Is("attribute") && p.Child("attribute") == n:
		case p.Is("keyword_argument") && p.Child("name") == n:
		case p.Is("assignment") && p.Child("left") == n && value != nil && p.Child("right") == value:
		default:
			out = append(out, n)
		}
		return kind == "identifier"
	}
	if scope != f.Tree.Root {
		pyast.Walk(scope, visit)
		return out
	}
	// A module-level loader: walk only the top-level statements whose text
	// mentions the name (a byte search), not every node of a large file on
	// every keystroke.
	needle := []byte(name)
	for _, stmt := range f.Tree.Statements {
		if bytes.Contains(f.Src[stmt.Start():stmt.End()], needle) {
			pyast.Walk(stmt, visit)
		}
	}
	return out
}

// boundByComprehension reports whether n is inside a comprehension that
// binds name itself ([b[0] for b in batch]): another variable.
func boundByComprehension(f *semantic.File, n *pyast.Node, name string) bool {
	for c := n.Parent(); c != nil && !c.Is("function_definition", "lambda", "module"); c = c.Parent() {
		if !c.Is("list_comprehension", "set_comprehension", "dictionary_comprehension", "generator_expression") {
			continue
		}
		for _, clause := range c.NamedChildren() {
			if !clause.Is("for_in_clause") {
				continue
			}
			bound := false
			pyast.Walk(clause.Child("left"), func(m *pyast.Node) bool {
				bound = bound || m.Is("identifier") && f.Text(m) == name
				return !bound
			})
			if bound {
				return true
			}
		}
	}
	return false
}
