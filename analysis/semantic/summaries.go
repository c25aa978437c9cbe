package semantic

import (
	"maps"
	"regexp"
	"strings"

	"github.com/vramlint/vramlint/analysis/pyast"
)

// Function summaries: what a function or method defined in this file does,
// as seen from a call to it. `loss = model.training_step(batch)` carries
// history when training_step returns a loss computed with autograd on;
// `df = infer_model(...)` does not when infer_model returns a DataFrame
// built under no_grad, whatever its name says.
//
// A summary is computed from the function's own body, with calls inside it
// judged without summaries (one level deep): that keeps the answers
// independent of the order in which rules ask, and recursion harmless.

// Summary describes a function defined in this file.
type Summary struct {
	Def *pyast.Node // the function_definition (nil: another file's, see SummaryOfCall)
	Behaviour

	name      string
	asked     asked // what its taint and its calls read
	signature askedSignature
}

// Behaviour is what a function does, as seen from a call to it: what a
// Summary finds in its body, and what other files learn of it (see
// FunctionFacts). Comparable: a summary that changes any of it changes
// the answers of its callers (see sameSummaries).
type Behaviour struct {
	// ReturnsGraph: some value it returns carries autograd history.
	ReturnsGraph bool
	// Trains: it runs a backward pass or an optimizer step.
	Trains bool
	// RunsModel: it calls a model with autograd on; RunsModelInLoop: inside
	// a loop of its own (it runs a whole evaluation, not one step).
	RunsModel, RunsModelInLoop bool
	// CallsModel: it calls a model, with autograd on or off (a rollout
	// helper that runs the policy under no_grad itself).
	CallsModel bool
	// ReturnsModule: it builds the nn.Module it returns (see
	// returnsModule). In the summary so that a change of it changes the
	// answers about names bound to its calls (see carryOver).
	ReturnsModule bool
	// Returned says, for a function whose every return statement returns
	// a tuple of the same length (`return loss, acc`), which elements carry
	// history, so that `loss, acc = step(b)` taints only loss.
	Returned TupleGraph
	// TrainsInLoop: it runs a backward pass or an optimizer step inside a
	// loop of its own (a whole training run or epoch, not one step).
	TrainsInLoop bool
	// Differentiates: it takes derivatives (see Differentiates): its
	// forward passes need autograd, in an evaluation loop or not.
	Differentiates bool
	// FreezesParameters: it turns gradients off for parameters
	// (`p.requires_grad = False`, `m.requires_grad_(False)`); as a context
	// manager, the model in its body records no graph of its weights.
	FreezesParameters bool
	// SumsFirstArgument: a method that adds its first argument, as it is,
	// into an attribute of its object (a meter's update; see
	// sumsFirstArgument).
	SumsFirstArgument bool
	// StoredArguments: the arguments (bit i: the i-th after self) a method
	// appends, as they are, to a list or dict on its object (see
	// storedParameters).
	StoredArguments uint64
}

// SummaryOfCall returns the summary of the function call calls, when the
// file defines it: a plain function by name, a method of the caller's class
// (self.m), or a method of the class the receiver is an instance of.
//
// A function of another module of the project has a summary too, without
// Def (its definition is in the other file's model).
func (f *File) SummaryOfCall(call *pyast.Node) *Summary {
	if def := f.resolveCall(call); def != nil {
		return f.summary(def)
	}
	if facts, ok := f.projectCall(call); ok {
		return &Summary{Behaviour: facts.Behaviour}
	}
	return nil
}

// ForwardSummaryOfCall returns the summary of the forward method that
// call runs when its callee is an instance of a class of this file
// (`field = ForceField()`, then `field(x)`), or nil.
func (f *File) ForwardSummaryOfCall(call *pyast.Node) *Summary {
	if !f.hasMethod("forward") {
		return nil
	}
	fn := call.Child("function")
	if !fn.Is("identifier", "attribute") {
		return nil
	}
	if def := f.methodOf(f.classOfInstance(fn, 0), "forward", 0); def != nil {
		return f.summary(def)
	}
	return nil
}

// TupleGraph describes the tuples a function returns: Len elements (0:
// not always a tuple of one length), element i carrying history when bit
// i of Graph is set.
type TupleGraph struct {
	Len   uint8
	Graph uint64
}

// Element reports whether element i of an n-tuple the function returns
// carries history; ok is false when its returns are not all n-tuples.
func (g TupleGraph) Element(i, n int) (graph, ok bool) {
	if n < 2 || int(g.Len) != n || i >= n {
		return false, false
	}
	return g.Graph&(1<<i) != 0, true
}

// resolveCall finds the definition a call runs, or nil.
func (f *File) resolveCall(call *pyast.Node) *pyast.Node {
	fn := call.Child("function")
	switch {
	case fn.Is("identifier"):
		defs := f.Functions[f.Text(fn)]
		if len(defs) == 0 {
			return nil // no such function
		}
		for _, b := range f.BindingsOf(fn) {
			// A name bound to a value, unless the value is the function
			// compiled (`update = torch.compile(update)`).
			if arg := compiledArg(f, b); arg == nil || f.Text(arg) != f.Text(fn) {
				return nil
			}
		}
		// A bare name calls a function, not a method of some class.
		for i := len(defs) - 1; i >= 0; i-- {
			if !isMethod(defs[i]) {
				return defs[i]
			}
		}
	case fn.Is("attribute"):
		name := f.Text(fn.Child("attribute"))
		if !f.hasMethod(name) {
			return nil // the cheap test: most method calls are not on classes of this file
		}
		recv := fn.Child("object")
		var c *Class
		if recv.Is("identifier") && (f.Text(recv) == "self" || f.Text(recv) == "cls") {
			c = f.EnclosingClass(call)
		} else {
			c = f.classOfInstance(recv, 0)
		}
		return f.methodOf(c, name, 0)
	}
	return nil
}

// compiledArg returns the name e compiles (`update` in
// `torch.compile(update)` or `torch.jit.script(update)`), or nil.
func compiledArg(f *File, e *pyast.Node) *pyast.Node {
	if !e.Is("call") {
		return nil
	}
	switch f.QualifiedName(e.Child("function")) {
	case "torch.compile", "torch.jit.script":
		if arg := f.Arg(e, "model", 0); arg.Is("identifier") {
			return arg
		}
	}
	return nil
}

// hasMethod reports whether some class of this file defines a method of
// that name. The names are gathered from every class once a version (two
// goroutines may both gather them: the same map), and a version with the
// structure of the one before takes that one's (see NewModelFrom): at
// 50,000 lines gathering them was 0.6 ms of each keystroke.
func (f *File) hasMethod(name string) bool {
	names := f.methodNames.Load()
	if names == nil {
		m := map[string]bool{}
		for _, c := range f.Classes {
			for method := range c.Methods {
				m[method] = true
			}
		}
		f.methodNames.CompareAndSwap(nil, &m)
		names = f.methodNames.Load()
	}
	return (*names)[name]
}

// isMethod reports whether def is defined directly in a class body.
func isMethod(def *pyast.Node) bool {
	p := def.Parent()
	if p.Is("decorated_definition") {
		p = p.Parent()
	}
	return p.Is("block") && p.Parent().Is("class_definition")
}

// methodOf finds a method by name in c or the classes of this file it
// derives from.
func (f *File) methodOf(c *Class, name string, depth int) *pyast.Node {
	if c == nil || depth > 8 {
		return nil
	}
	if m := c.Methods[name]; m != nil {
		return m
	}
	for _, b := range c.Bases {
		if b.Is("identifier") {
			if m := f.methodOf(f.Classes[f.Text(b)], name, depth+1); m != nil {
				return m
			}
		}
	}
	return nil
}

// summary computes (once per file) what def does.
func (f *File) summary(def *pyast.Node) *Summary {
	return rememberShared(f, &f.memos.summaries, def, func() *Summary { return f.summarise(def) })
}

func (f *File) summarise(def *pyast.Node) *Summary {
	t := f.plainTaintOf(def)
	s := &Summary{Def: def, name: strings.Clone(f.Text(def.Child("name"))), asked: maps.Clone(t.asked)}
	// What the summary reads besides its taint: its calls, and whether its
	// own callers put it under no_grad.
	s.asked["calls:"+s.name] = true
	for _, c := range f.CallsIn(def) {
		if !InScope(c, def) {
			continue
		}
		s.asked.call(f, c)
		if isBackwardCall(f, c) || isOptimizerStep(f, c) {
			s.Trains = true
			s.TrainsInLoop = s.TrainsInLoop || len(EnclosingLoops(c)) > 0
		}
		// Once the model runs in a loop (CallsModel is set then too), the
		// other calls tell nothing more.
		if !s.RunsModelInLoop && f.IsModelCall(c) {
			s.CallsModel = true
			if !f.InNoGrad(c) {
				s.RunsModel = true
				s.RunsModelInLoop = len(EnclosingLoops(c)) > 0
			}
		}
		s.FreezesParameters = s.FreezesParameters || FreezesParameters(f, c)
		s.Differentiates = s.Differentiates || Differentiates(f, c)
	}
	for _, a := range f.AssignmentsIn(def) {
		s.FreezesParameters = s.FreezesParameters || InScope(a, def) && FreezesParameters(f, a)
	}
	// What a method keeps of its arguments reads its class alone (the
	// def's segment): a change there changes the summary, and so re-runs
	// the rules on the calls of the method's name (see sameSummaries).
	s.SumsFirstArgument = sumsFirstArgument(f, def)
	s.ReturnsModule = f.returnsModule(def)
	s.StoredArguments = storedParameters(f, def)
	s.ReturnsGraph = eachReturn(def, func(v *pyast.Node) bool {
		// ReturnsModule read the bindings of the names returned (`return
		// net`, a model of the module's): a summary kept while `net` was
		// bound anew said it returned the model still.
		s.asked.name(f, f.unwrapModuleChain(v))
		return t.Tainted(v)
	}) > 0
	if s.ReturnsGraph {
		s.Returned = returnedTuples(def, t)
	}
	s.signature = askedSignatureOf(s.asked)
	return s
}

// returnsTensor reports whether def returns one tensor on every return
// statement. It is judged when a fix asks, with the file's current model
// (not remembered in the summary, which carries over to later versions).
func (f *File) returnsTensor(def *pyast.Node, depth int) bool {
	if depth > 12 {
		return false
	}
	t := f.plainTaintOf(def)
	returns := eachReturn(def, func(*pyast.Node) bool { return true })
	return returns > 0 && eachReturn(def, func(v *pyast.Node) bool { return t.isTensor(v, depth+1, func(*pyast.Node) {}) }) == returns
}

// Differentiates reports whether call takes derivatives: a backward pass,
// torch.autograd.grad and torch.autograd.functional's Jacobians and
// Hessians, torch.func's transforms (grad, jacrev, jacfwd, jvp, vjp,
// hessian), or a method named for Jacobians or Hessians (a curvature
// backend's `jacobians(x)`).
func Differentiates(f *File, call *pyast.Node) bool {
	if isBackwardCall(f, call) {
		return true
	}
	q := f.Callee(call)
	switch {
	case strings.HasPrefix(q, "torch.autograd.functional."), strings.HasPrefix(q, "torch.autograd.forward_ad."):
		return true
	case strings.HasPrefix(q, "torch.func.") || strings.HasPrefix(q, "functorch."):
		switch q[strings.LastIndexByte(q, '.')+1:] {
		case "grad", "grad_and_value", "jacrev", "jacfwd", "jvp", "vjp", "hessian", "linearize":
			return true
		}
	}
	name := strings.ToLower(f.LastName(call.Child("function")))
	return strings.Contains(name, "jacobian") || strings.Contains(name, "hessian")
}

// FreezesParameters reports whether n, a call or an assignment, turns
// gradients off for parameters: `p.requires_grad = False` or
// `model.requires_grad_(False)`.
func FreezesParameters(f *File, n *pyast.Node) bool {
	switch n.Kind() {
	case "assignment":
		l := n.Child("left")
		return l.Is("attribute") && f.Text(l.Child("attribute")) == "requires_grad" && f.Text(n.Child("right")) == "False"
	case "call":
		return f.MethodName(n) == "requires_grad_" && f.Text(f.Arg(n, "requires_grad", 0)) == "False"
	}
	return false
}

// returnedTuples finds whether every return statement of def's own body
// returns a tuple of one length, and which of its elements are tainted.
// A generator (a yield anywhere) returns no tuple.
func returnedTuples(def *pyast.Node, t *Taint) TupleGraph {
	var g TupleGraph
	ok := true
	pyast.Walk(def.Child("body"), func(x *pyast.Node) bool {
		if !ok {
			return false
		}
		switch x.Kind() {
		case "function_definition", "lambda", "class_definition":
			return false
		case "yield":
			ok = false
			return false
		case "return_statement":
			v := x.NamedChildren()
			if len(v) != 1 || !v[0].Is("expression_list", "tuple") {
				ok = false
				return false
			}
			elems := v[0].NamedChildren()
			if len(elems) < 2 || len(elems) > 64 || g.Len != 0 && int(g.Len) != len(elems) {
				ok = false
				return false
			}
			g.Len = uint8(len(elems))
			for i, e := range elems {
				if e.Is("list_splat", "parenthesized_list_splat") {
					ok = false
					return false
				}
				if t.Tainted(e) {
					g.Graph |= 1 << i
				}
			}
			return false
		}
		return true
	})
	if !ok {
		return TupleGraph{}
	}
	return g
}

// eachReturn counts the return and yield statements of def's own body
// that return a value for which ok holds.
func eachReturn(def *pyast.Node, ok func(value *pyast.Node) bool) int {
	n := 0
	visitReturns(def, func(x *pyast.Node) {
		if v := x.NamedChildren(); len(v) > 0 && ok(v[0]) {
			n++
		}
	})
	return n
}

// visitReturns calls visit for each return statement and yield of def's
// own body, not of the functions, lambdas and classes nested in it.
func visitReturns(def *pyast.Node, visit func(x *pyast.Node)) {
	pyast.Walk(def.Child("body"), func(x *pyast.Node) bool {
		switch x.Kind() {
		case "function_definition", "lambda", "class_definition":
			return false
		case "return_statement", "yield":
			visit(x)
			return false
		}
		return true
	})
}

// plainTaintOf is the taint of scope judged without function summaries
// (see Summary).
func (f *File) plainTaintOf(scope *pyast.Node) *Taint {
	return f.taintOf(&f.memos.plainTaint, &f.memos.plainTaintFacts, scope, true)
}

// conventionalStepMethods return a loss (or outputs) computed by the model
// by the conventions of PyTorch Lightning and of most training code.
var conventionalStepMethods = map[string]bool{
	"training_step": true, "train_step": true, "validation_step": true, "test_step": true,
	"shared_step": true, "compute_loss": true, "get_loss": true, "forward_loss": true, "loss": true,
}

// likelihoodMethod: a model's negative log-likelihood, a loss by another
// name (the PyTorch tutorial's BiLSTM-CRF `model.neg_log_likelihood(x,
// tags)`, `flow.nll(x)`). Not `loglikelihood`: lm-eval's models answer
// requests with it, in Python numbers; nor an ELBO (Pyro's `loss` is a
// float).
var likelihoodMethod = regexp.MustCompile(`(?i)(^|_)(nll|(neg|negative)_?log_?likelihood)$`)

// ConventionalStepCall reports whether call, which resolves to nothing in
// this file, runs a model step by convention: `model.training_step(b)`,
// `self.model.loss(x, y)`, `model.neg_log_likelihood(x, y)`.
func ConventionalStepCall(f *File, call *pyast.Node) bool {
	m := f.MethodName(call)
	if m == "" || !(conventionalStepMethods[m] || strings.HasSuffix(m, "_loss") || likelihoodMethod.MatchString(m)) {
		return false
	}
	return f.NamesModule(Receiver(call)) && hasForwardInput(call)
}

// isBackwardCall reports whether call runs a backward pass: x.backward(),
// torch.autograd.grad/backward, accelerator.backward(loss),
// self.manual_backward(loss).
func isBackwardCall(f *File, call *pyast.Node) bool {
	if m := f.MethodName(call); m == "backward" || m == "manual_backward" {
		return true
	}
	switch f.Callee(call) {
	case "torch.autograd.grad", "torch.autograd.backward":
		return true
	}
	return false
}

var optimizerName = regexp.MustCompile(`(?i)(^|_)(opt|optim|optimizer|optimiser)s?(_|$)|optimi[sz]er$|(^|_)scaler$`)

// isOptimizerStep reports whether call is an optimizer (or grad scaler)
// step: opt.step(), self.optimizer.step(), scaler.step(opt).
func isOptimizerStep(f *File, call *pyast.Node) bool {
	if f.MethodName(call) != "step" {
		return false
	}
	recv := f.LastName(Receiver(call))
	return optimizerName.MatchString(recv) || f.constructsOptimizerName(Receiver(call))
}

// constructsOptimizerName reports whether e names an object bound to a
// torch.optim optimizer in this file.
func (f *File) constructsOptimizerName(e *pyast.Node) bool {
	if !e.Is("identifier", "attribute") {
		return false
	}
	for _, b := range f.BindingsOf(e) {
		if b.Is("call") && strings.HasPrefix(f.Callee(b), "torch.optim.") && !strings.HasPrefix(f.Callee(b), "torch.optim.lr_scheduler.") {
			return true
		}
	}
	return false
}
