package rules

import (
	"sort"
	"strings"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/semantic"
)

// readsWholeFile tells the runner when what is said about name, held in
// scope and stored or accumulated at stmt, reads beyond stmt's top-level
// statement: for an attribute (self.losses), usedAsTensor and
// ReachesBackward look at every use of it in the file; and for a
// module-level name a function uses, builtinHolder looks at the
// module's assignments. (Module-level candidates are marked by the Pass.)
func readsWholeFile(pass *analysis.Pass, stmt *pyast.Node, name string, scope *pyast.Node) {
	if strings.Contains(name, ".") || !scope.Is("module") && !pass.File.AssignedIn(name, scope) {
		pass.ReadsOutside(stmt)
	}
}

// usedAsTensor reports whether the value held in name is later used in a
// way only tensors support: passed to a torch function (torch.stack(losses),
// torch.log(total)), or given a tensor method or attribute. For a container
// (elements true) that is an element's method, losses[-1].backward(); for a
// total, total.item(). Then `.item()`, which turns the values into Python
// floats, would break that code; `.detach()` does not. The entries of a
// keyed history are asked as "history[]" (see elementsName).
func usedAsTensor(f *semantic.File, name string, scope *pyast.Node, elements bool) bool {
	if strings.Contains(name, ".") {
		scope = f.Tree.Root
	}
	question := "used as tensors"
	if elements {
		question = "elements used as tensors"
	}
	// The names used so, found once per scope: at module level the scope
	// is the whole file, and every candidate asks.
	return semantic.NamesIn(f, question, scope, func(root *pyast.Node, add func(string)) {
		pyast.Walk(root, func(n *pyast.Node) bool {
			switch {
			case n.Is("call") && strings.HasPrefix(f.Callee(n), "torch."):
				pyast.Walk(n.Child("arguments"), func(a *pyast.Node) bool {
					if a.Is("identifier", "attribute") {
						add(f.Text(a))
					} else if a.Is("subscript") {
						add(f.Text(unkeyed(a)) + "[]") // torch.stack(history["loss"])
					}
					return true
				})
			case n.Is("attribute"):
				obj := n.Child("object")
				if elements {
					// (sum(losses) / len(losses)).item(): the sum of
					// tensors is one, of floats a float.
					aggregated(f, obj, add)
					if obj.Is("subscript") {
						// losses[-1].item(), history["loss"][-1].item();
						// not history["loss"].append, a list's method.
						elementsOf(f, obj.Child("value"), add)
					}
					return true
				}
				if obj.Is("identifier", "attribute") {
					add(f.Text(obj))
				}
			}
			return true
		})
	}).Has(name)
}

// aggregated adds the containers whose elements e combines with
// Python's builtins into one value of their type: `sum(xs)`, `max(xs)`,
// `min(xs)`, in parentheses or arithmetic (`sum(xs) / len(xs)`).
func aggregated(f *semantic.File, e *pyast.Node, add func(string)) {
	switch {
	case e.Is("parenthesized_expression"):
		aggregated(f, e.FirstNamed(), add)
	case e.Is("binary_operator"):
		aggregated(f, e.Child("left"), add)
		aggregated(f, e.Child("right"), add)
	case e.Is("unary_operator"):
		aggregated(f, e.Child("argument"), add)
	case e.Is("call") && e.Child("function").Is("identifier"):
		switch f.Text(e.Child("function")) {
		case "sum", "max", "min":
			elementsOf(f, f.Arg(e, "", 0), add)
		}
	}
}

// elementsOf adds the container c, whose elements are used: its
// name, or for an entry of a keyed history (`history["loss"]`) the
// holder's name and "[]".
func elementsOf(f *semantic.File, c *pyast.Node, add func(string)) {
	switch {
	case c.Is("identifier", "attribute"):
		add(f.Text(c))
	case c.Is("subscript"):
		add(f.Text(unkeyed(c)) + "[]")
	}
}

// elementsName is the name usedAsTensor knows the stored values of
// container by: its own, or for an entry of a keyed history the holder's
// and "[]" (the entries of one holder are answered together).
func elementsName(f *semantic.File, container *pyast.Node) string {
	if holder := holderOf(container); holder != container {
		return f.Text(holder) + "[]"
	}
	return f.Text(container)
}

// unkeyed is what e is an entry or a slice of (`history` for
// `history["loss"]` and `xs[-10:]`), or e itself: the uses of an entry are
// counted as the holder's, the way the checks ask of it (see holderOf).
func unkeyed(e *pyast.Node) *pyast.Node {
	for e.Is("subscript") {
		e = e.Child("value")
	}
	return e
}

// builtinHolder reports whether the container a store keeps its values in
// is a builtin one at stmt (see containerBindings): a list, dict, set or
// deque; for a keyed entry (`history["loss"]`), a dict made of such
// containers only (see holdsContainers). An object of another class
// (d2l's Accumulator, a metric) may convert what it is given.
func builtinHolder(f *semantic.File, container, scope, stmt *pyast.Node) bool {
	holder := holderOf(container)
	made := containerValue
	if holder != container {
		made = holdsContainers
	}
	binds := containerBindings(f, holder, scope, stmt)
	for _, b := range binds {
		if !made(f, b) {
			return false
		}
	}
	return len(binds) > 0
}

// containerBindings returns the values name may refer to at stmt: for a
// local name, its last binding in scope before stmt (`history, preds =
// [], []` too); for an attribute (self.losses), every binding the methods
// of its class (and of the classes related to it) make.
func containerBindings(f *semantic.File, holder, scope, stmt *pyast.Node) []*pyast.Node {
	name := f.Text(holder)
	if strings.Contains(name, ".") {
		return f.AttributeBindings(name, stmt)
	}
	if last := lastBinding(f, name, scope, stmt); last != nil {
		return []*pyast.Node{last}
	}
	// A function's parameter is what its caller passes, whatever the module
	// binds to the name.
	if !scope.Is("module") && !f.AssignedIn(name, scope) && !f.LocalName(holder) {
		// A module-level list the function appends to.
		if last := lastBinding(f, name, f.Tree.Root, stmt); last != nil {
			return []*pyast.Node{last}
		}
	}
	return nil
}

// setAfreshIn reports whether body binds the container's holder anew
// (`losses = []`), or, for a keyed entry, any entry of its holder
// (`history["loss"] = []`): then it lives no longer than body.
func setAfreshIn(f *semantic.File, container, body *pyast.Node) bool {
	holder := holderOf(container)
	name := f.Text(holder)
	if f.AssignedIn(name, body) {
		return true
	}
	if holder == container {
		return false
	}
	for _, a := range f.AssignmentsIn(body) {
		if left := a.Child("left"); a.Kind() == "assignment" && left.Is("subscript") && f.Text(left.Child("value")) == name {
			return true
		}
	}
	return false
}

// holdsContainers reports whether e builds a dict whose entries are builtin
// containers (see containerValue): `{"loss": [], "acc": []}`,
// `dict(loss=[])`, `{k: [] for k in keys}`, `defaultdict(list)`. Not a list
// of lists (`[[] for _ in range(batch_size)]`): beam searches keep their
// hypotheses so, scores with history included on purpose when a caller
// trains on them (self-critical sequence training).
func holdsContainers(f *semantic.File, e *pyast.Node) bool {
	switch {
	case e.Is("dictionary"):
		entries := 0
		for _, c := range e.NamedChildren() {
			if c.Is("comment") {
				continue
			}
			if !c.Is("pair") || !containerValue(f, c.Child("value")) {
				return false
			}
			entries++
		}
		return entries > 0
	case e.Is("dictionary_comprehension"):
		body := e.Child("body")
		return body.Is("pair") && containerValue(f, body.Child("value"))
	case e.Is("call"):
		switch f.LastName(e.Child("function")) {
		case "defaultdict":
			factory := f.Arg(e, "default_factory", 0)
			if factory.Is("lambda") {
				return containerValue(f, factory.Child("body"))
			}
			switch f.Text(factory) {
			case "list", "set", "dict", "deque":
				return true
			}
		case "dict":
			args := e.Child("arguments").NamedChildren()
			for _, a := range args {
				if !a.Is("keyword_argument") || !containerValue(f, a.Child("value")) {
					return false
				}
			}
			return len(args) > 0
		}
	}
	return false
}

// containerValue reports whether e builds a list, dict, set or deque (a
// tuple is kept too: `outputs += (h,)` extends it).
func containerValue(f *semantic.File, e *pyast.Node) bool {
	switch {
	case e.Is("list", "tuple", "dictionary", "set", "list_comprehension", "dictionary_comprehension", "set_comprehension"):
		return true
	case e.Is("call"):
		switch f.LastName(e.Child("function")) {
		case "list", "dict", "set", "tuple", "deque", "defaultdict", "OrderedDict":
			return true
		}
	}
	return false
}

// lastBinding returns the value last bound to the local name in scope
// before stmt, by a plain or an element-wise tuple assignment, or nil.
func lastBinding(f *semantic.File, name string, scope, stmt *pyast.Node) *pyast.Node {
	// The scope's bindings by name, in source order, found once: at
	// module level the scope is the whole file, and every candidate asks.
	bindings := semantic.OfVersion(f, "plain bindings", scope, func() map[string][]binding {
		bindings := map[string][]binding{}
		for _, a := range f.AssignmentsIn(scope) {
			left, right := a.Child("left"), a.Child("right")
			if a.Kind() != "assignment" || right == nil || !semantic.InScope(a, scope) {
				continue
			}
			targets, values := semantic.AssignedPairs(left, right)
			for i, t := range targets {
				if t.Is("identifier") {
					bindings[f.Text(t)] = append(bindings[f.Text(t)], binding{a.Start(), values[i]})
				}
			}
		}
		return bindings
	})[name]
	// The last one of an assignment that starts before stmt.
	i := sort.Search(len(bindings), func(i int) bool { return bindings[i].at >= stmt.Start() })
	if i == 0 {
		return nil
	}
	return bindings[i-1].value
}

// binding is a value assigned to a name by the assignment at offset at.
type binding struct {
	at    int
	value *pyast.Node
}

// returned reports whether the value of name flows into a return or yield
// of scope: mentioned there, or in the value of an assignment of the scope
// to a name that is, through at most four such assignments (`out =
// torch.cat(outs); return out`, or a field of a result object:
// `res.scores = torch.cat(outs); return res`). A dotted name counts only
// where a return mentions it. Module code returns nothing (a return or
// yield there does not compile).
func returned(f *semantic.File, name string, scope *pyast.Node) bool {
	if scope.Is("module") {
		return false
	}
	hops, ok := returnedNames(f, scope)[name]
	return ok && (hops == 0 || !strings.Contains(name, "."))
}

// maxReturnHops is how many assignments returned follows from a name to
// a return.
const maxReturnHops = 4

// returnedNames maps each name of scope whose value flows into a return or
// yield to the fewest assignments it goes through to get there (see
// returned). Found once per scope and version, backwards from the
// returns: every accumulation and container of a function asks, and
// following each candidate's name forwards walked the function once per
// assignment it passed (quadratic in the function, more with branches).
func returnedNames(f *semantic.File, scope *pyast.Node) map[string]int {
	return semantic.OfVersion(f, "returned names", scope, func() map[string]int {
		hops := map[string]int{}
		mentioned := func(e *pyast.Node, each func(string)) {
			pyast.Walk(e, func(n *pyast.Node) bool {
				if n.Is("identifier", "attribute") {
					each(f.Text(n))
				}
				return true
			})
		}
		f.Tree.Walk(scope, func(n *pyast.Node) bool {
			switch {
			case n != scope && n.Is("function_definition", "lambda", "class_definition"):
				return false
			case n.Is("return_statement", "yield"):
				mentioned(n, func(name string) { hops[name] = 0 })
				return false
			}
			return true
		})
		// Each assignment's target and the names its value mentions (the
		// target's own excluded: `x = x + 1` adds no way out).
		type flow struct {
			target string
			from   []string
		}
		var flows []flow
		for _, a := range f.AssignmentsIn(scope) {
			if !semantic.InScope(a, scope) {
				continue // only the scope's own: for the module, AssignmentsIn is every assignment of the file
			}
			r, l := a.Child("right"), a.Child("left")
			if l.Is("attribute") && l.Child("object").Is("identifier") && f.Text(l.Child("object")) != "self" {
				l = l.Child("object")
			}
			if r == nil || !l.Is("identifier") {
				continue
			}
			fl := flow{target: f.Text(l)}
			mentioned(r, func(name string) {
				if name != fl.target {
					fl.from = append(fl.from, name)
				}
			})
			flows = append(flows, fl)
		}
		for level := 0; level < maxReturnHops; level++ {
			grew := false
			for _, fl := range flows {
				if h, ok := hops[fl.target]; !ok || h != level {
					continue
				}
				for _, name := range fl.from {
					if _, ok := hops[name]; !ok {
						hops[name] = level + 1
						grew = true
					}
				}
			}
			if !grew {
				break
			}
		}
		return hops
	})
}

// wrapFix is a fix that calls method on the expression e.
func wrapFix(f *semantic.File, verb string, e *pyast.Node, method string, safety analysis.Applicability) analysis.Fix {
	return analysis.Fix{
		Title:         verb + " `" + withMethod(f, e, "."+method) + "`",
		Applicability: safety,
		Edits:         analysis.WrapMethod(e, method),
	}
}

// withMethod is e's text with a method call after it (".item()"), in
// parentheses when e is not a primary expression: `(s * n).item()`, not
// `s * n.item()`.
func withMethod(f *semantic.File, e *pyast.Node, call string) string {
	if !analysis.Primary(e) {
		return "(" + f.Text(e) + ")" + call
	}
	return f.Text(e) + call
}

// freedInStep reports whether the step's backward pass frees the
// activations of value's graph: `<value>.backward()` before stmt, a
// backward through the name value is computed from (`loss_reg` in
// `loss_reg.mean()`) anywhere in the loop's body, before the store or
// after it, or a step function of the file that runs the backward pass on
// what it returns (`losses.append(run_fwd_bwd(model, x, y))`).
func freedInStep(f *semantic.File, value, loop, stmt *pyast.Node) bool {
	if backwardBefore(f, value, loop, stmt) {
		return true
	}
	if value.Is("call") {
		if s := f.SummaryOfCall(value); s != nil && s.Trains && !s.TrainsInLoop {
			return true
		}
	}
	root := value
	for root.Is("call") && semantic.Receiver(root) != nil {
		root = semantic.Receiver(root)
	}
	return root.Is("identifier") && f.FreedByBackward(f.Text(root), loop.Child("body"))
}

// backwardOfScalar reports whether the loop calls `<value>.backward()`
// with no gradient (no positional argument, no `gradient=`) on the value
// stmt uses (nothing assigns it in between, before or after stmt):
// autograd allows that on a scalar only, so value is one tensor holding
// one number.
func backwardOfScalar(f *semantic.File, value, loop, stmt *pyast.Node) bool {
	for _, call := range f.CallsIn(loop) {
		if f.MethodName(call) != "backward" || f.Text(semantic.Receiver(call)) != f.Text(value) ||
			assignedBetween(f, value, loop, min(call.Start(), stmt.Start()), max(call.Start(), stmt.Start())) {
			continue
		}
		withGradient := false
		for _, a := range call.Child("arguments").NamedChildren() {
			withGradient = withGradient || !a.Is("keyword_argument", "comment") || f.Text(a.Child("name")) == "gradient"
		}
		if !withGradient {
			return true
		}
	}
	return false
}

// assignedBetween reports whether an assignment in loop that starts
// between the offsets from and to binds value's text (`out = out.sum()`
// between `total += out` and `out.backward()`). Arithmetic on the value
// itself (`loss = loss / n`, `loss *= w`) does not count: broadcasting
// never shrinks a tensor, so when the result is one number, so was it.
func assignedBetween(f *semantic.File, value, loop *pyast.Node, from, to int) bool {
	// Where the loop's assignments bind each name, found once per loop
	// and version (a loop body of thousands of `total += loss` asked this
	// of each, and each range held most of them).
	rebinds := semantic.OfVersion(f, "rebinding assignments", loop, func() map[string][]int {
		out := map[string][]int{}
		for _, a := range f.AssignmentsIn(loop) {
			pyast.Walk(a.Child("left"), func(n *pyast.Node) bool {
				if n.Is("identifier", "attribute") {
					if name := f.Text(n); !arithmeticOnItself(f, a, name) {
						if starts := out[name]; len(starts) == 0 || starts[len(starts)-1] != a.Start() {
							out[name] = append(starts, a.Start())
						}
					}
				}
				return true
			})
		}
		return out
	})
	starts := rebinds[f.Text(value)]
	i := sort.SearchInts(starts, from+1)
	return i < len(starts) && starts[i] < to
}

// arithmeticOnItself reports whether a rebinds name to arithmetic on
// itself: `name op= e` or `name = name op e` (or `e op name`).
func arithmeticOnItself(f *semantic.File, a *pyast.Node, name string) bool {
	if f.Text(a.Child("left")) != name {
		return false
	}
	arithmetic := func(op string) bool {
		switch strings.TrimSuffix(op, "=") {
		case "+", "-", "*", "/", "//", "%", "**":
			return true
		}
		return false
	}
	if a.Is("augmented_assignment") {
		return arithmetic(f.Text(a.Child("operator")))
	}
	right := a.Child("right")
	return right.Is("binary_operator") && arithmetic(f.Text(right.Child("operator"))) &&
		(f.Text(right.Child("left")) == name || f.Text(right.Child("right")) == name)
}

// backwardBefore reports whether, in loop, `<value>.backward()` runs
// before stmt.
func backwardBefore(f *semantic.File, value, loop, stmt *pyast.Node) bool {
	for _, call := range f.CallsIn(loop) {
		if call.Start() < stmt.Start() && f.MethodName(call) == "backward" && f.Text(semantic.Receiver(call)) == f.Text(value) {
			return true
		}
	}
	return false
}
