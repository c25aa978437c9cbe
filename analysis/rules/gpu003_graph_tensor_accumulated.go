package rules

import (
	"strings"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/semantic"
)

// GraphTensorAccumulated reports a running total that adds up tensors with
// autograd history across loop iterations.
var GraphTensorAccumulated = &analysis.Rule{
	Code:            "GPU003",
	Name:            "graph-tensor-accumulated",
	Summary:         "A running total adds up losses with their autograd history across iterations",
	DefaultSeverity: analysis.SeverityWarning,
	SeverityWhen: "info when the step's `backward()` runs through the loss (before the sum or after it, in the " +
		"same iteration, or in the step method): the activations are freed, and what the total keeps is every " +
		"step's graph nodes, in host memory",
	Fixable: analysis.FixAlways,
	Doc: analysis.Doc{
		What: "Finds `total += loss` and `total = total + loss` in a loop that runs training or evaluation " +
			"steps (see GPU002), where `loss` carries autograd history (as GPU002 tells it, a value the loop calls " +
			"`.backward()` on included, whatever computed it), `total` is initialised outside the " +
			"loop, and autograd is on (GPU004 lists what turns it off, the callers of a function in " +
			"the project's other files included). A total that is reset under a condition inside the loop (`if i % 100 " +
			"== 0: total = 0`) is still reported, with the bound in the message. The same outside a loop in a " +
			"method that runs a training step, `self.running_loss += loss` where the method calls `loss.backward()` " +
			"or is a LightningModule's `training_step` that returns `loss`: " +
			"the total lives on the object, so a step called once per batch adds up every batch's loss (reported " +
			"unless the total reaches a backward pass anywhere in the file, the method returns it or sets it " +
			"afresh on every call, or autograd is off where the method is called). And `losses.update(loss, n)` in such " +
			"a loop, of a value the step's backward pass runs through, where the meter is bound outside the loop to an " +
			"instance of a class (also in a tuple assignment: `batch_time, losses = AverageMeter(), AverageMeter()`) " +
			"whose `update(self, val, ...)` " +
			"adds `val` as it is to an attribute (`self.sum += val * n`, the ImageNet example's `AverageMeter`, copied " +
			"into many projects, and timm's), in this file or another of the project: not when the method converts " +
			"the value first (`val = val.item()`) or the class backpropagates the sum itself (gradient accumulation " +
			"behind a class), nor for classes it cannot see (a metric's `update` may detach). " +
			"Deliberately not reported: " +
			"gradient accumulation, where the total reaches `.backward()` (or `accelerator.backward()`); " +
			"residual streams (`h = h + layer(h)`) and loss terms summed in `forward` or a loss function; " +
			"`outputs += [h]` (a list extend: GPU002's); a loss computed from detached predictions; a total reset on " +
			"every iteration; the elements without history of a tuple a helper returns (`loss, acc = " +
			"step(batch)`, then `n_acc += acc` where `acc` is an argmax accuracy); gradients whose " +
			"`create_graph` is an option (`create_graph=self.create_graph`: SmoothGrad's average); and the sum " +
			"a batched helper returns.",
		Why: "Adding a tensor that requires grad makes the total a tensor with its own `grad_fn`, whose " +
			"graph links the graphs of every iteration so far. Nothing of it can be freed while the total " +
			"lives, so memory grows with every step (the PyTorch FAQ's first example of \"accumulating " +
			"history across your training loop\"). When the step's `backward()` runs through the loss, the " +
			"activations are freed and no GPU memory stays: what stays is every step's `grad_fn` nodes, in host " +
			"memory, a slower leak in proportion to the model's operations (about 5.6 KB a step for a five-layer " +
			"MLP, 400 KB for a 12-layer transformer: 4 GB of host memory over 10,000 steps; " +
			"docs/GPU-MEASUREMENTS.md). Add " +
			"`loss.item()` (a float; it waits for the GPU) or `loss.detach()` (stays on the device, no wait) " +
			"instead.",
		Example: `import torch

model = torch.nn.Linear(8, 1)
criterion = torch.nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
total_loss = 0.0
for step in range(100):
    x, y = torch.randn(4, 8), torch.randn(4, 1)
    loss = criterion(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    total_loss += loss
print(total_loss / 100)`,
		UseInstead: `import torch

model = torch.nn.Linear(8, 1)
criterion = torch.nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
total_loss = 0.0
for step in range(100):
    x, y = torch.randn(4, 8), torch.randn(4, 1)
    loss = criterion(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    total_loss += loss.item()
print(total_loss / 100)`,
		FixSafety: "Offered only when the added value is known to be one tensor (also when the loop calls its " +
			"`backward()` without a gradient, which autograd allows on a scalar only, and nothing but arithmetic " +
			"on itself assigns it between the sum and the backward). Adding `loss.detach()` " +
			"keeps the total's values, type and device and only drops the graph; it is safe when the total is " +
			"a local name that goes nowhere but printing, logging and conversions (not returned, not stored on " +
			"an object or in a container, not read by another function), and unsafe otherwise, since a caller " +
			"might backpropagate through it. Adding `loss.item()` (preferred when offered) is unsafe: the " +
			"total becomes a Python float (and `.item()` waits for the GPU); it is not offered for a scalar " +
			"used later as a tensor (`total.item()`, `torch.log(total)`) or returned to a caller. For a meter's " +
			"update both are unsafe (the meter may be read wherever it goes), and `.item()` is not offered when " +
			"its fields are used as tensors (`losses.avg.item()`) or it is returned.",
	},
	Run:   runGraphTensorAccumulated,
	Local: true,
}

// accumulation returns the accumulator and the added value of `acc += v`
// or `acc = acc + v`, or nils.
func accumulation(f *semantic.File, a *pyast.Node) (acc, value *pyast.Node) {
	left, right := a.Child("left"), a.Child("right")
	if !left.Is("identifier", "attribute") || right == nil {
		return nil, nil
	}
	if a.Kind() == "augmented_assignment" {
		if f.Text(a.Child("operator")) == "+=" {
			return left, right
		}
		return nil, nil
	}
	if right.Is("binary_operator") && f.Text(right.Child("operator")) == "+" {
		l, r := right.Child("left"), right.Child("right")
		switch f.Text(left) {
		case f.Text(l):
			return left, r
		case f.Text(r):
			return left, l
		}
	}
	return nil, nil
}

func runGraphTensorAccumulated(pass *analysis.Pass) {
	f := pass.File
	updates := func(n *pyast.Node) bool {
		meter, _ := meterUpdate(f, n)
		return meter != nil
	}
	for _, call := range pass.CandidateCalls(updates, "update") {
		meter, value := meterUpdate(f, call)
		reportMeterUpdate(pass, call, meter, value)
	}
	// An accumulation in a loop (the step loop) is what the rest needs.
	accumulates := func(a *pyast.Node) bool {
		acc, _ := accumulation(f, a)
		return acc != nil && (analysis.InLoop(a) || stepMethodOf(f, a, acc) != nil)
	}
	for _, a := range pass.CandidateAssignments(accumulates) {
		acc, value := accumulation(f, a)
		if semantic.NeverTainted(f, value) {
			continue // `total += loss.item()`: nothing to ask of the loop or the taint
		}
		// Growth matters across the iterations of a training or evaluation
		// loop; a residual stream summed over layers in forward, or loss
		// terms summed in a loss function, live one step.
		loop := f.InnermostStepLoop(a)
		if loop == nil {
			if method := stepMethodOf(f, a, acc); method != nil && !f.InNoGrad(a) {
				reportAcrossCalls(pass, a, acc, value, method)
			}
			continue
		}
		if f.InNoGrad(a) {
			continue
		}
		scope := semantic.Scope(a)
		name := f.Text(acc)
		readsWholeFile(pass, a, name, scope)
		taint := f.TaintOf(scope)
		// `outputs += [h]` extends a list; only a tensor adds up history.
		// `loss.backward()` with no gradient in the loop proves loss one
		// scalar tensor with history, whatever the call that made it
		// returns elsewhere (`model.compute_loss(batch)`, a helper of
		// another module).
		backed := backwardOfScalar(f, value, loop, a)
		if containerValue(f, value) || acc.Is("identifier") && containerValue(f, lastBinding(f, name, scope, a)) ||
			!taint.Tainted(value) && !backed || f.ReachesBackward(name, scope) {
			continue
		}
		if f.StepLoopKind(loop) == semantic.ModelLoop && returned(f, name, scope) {
			continue // a batched helper's sum: whoever calls it decides
		}
		reset := resetIn(f, name, loop.Child("body"), a)
		if reset != nil && !conditional(reset, loop) {
			continue // reset every iteration: the total lives one iteration
		}
		if f.CalledUnderNoGradAcrossFiles(a) {
			continue // the last question: it may read the project's other files
		}
		// .detach() keeps the values; it is safe only when nothing the
		// total flows into could need its graph.
		safety := analysis.Unsafe
		if totalStaysLocal(f, acc, scope) {
			safety = analysis.Safe
		}
		fixes, advice, tail := totalAdvice(f, value, name, backed || isTensor(pass, taint, value, a), backed || taint.IsScalarLoss(value),
			usedAsTensor(f, name, scope, false), returned(f, name, scope), safety, totalWording)
		// The step's backward pass, before the sum or after it, frees the
		// activations: what the total links is the graphs' nodes.
		freed := freedInStep(f, value, loop, a)
		// Then the total keeps no GPU memory, only every step's graph
		// nodes in host memory (measured: docs/GPU-MEASUREMENTS.md), as
		// GPU002's stored losses the step backpropagates: an info.
		severity := analysis.SeverityWarning
		detail := "`" + name + "` becomes a tensor whose graph links every iteration's graph and keeps them all alive"
		if freed {
			severity = analysis.SeverityInfo
			detail = "The step's `backward()` frees the activations, but `" + name + "` becomes a tensor whose " +
				"`grad_fn` chain links every iteration's graph nodes and keeps them alive in host memory"
		}
		if reset != nil {
			detail += " until " + analysis.Code(f.Text(reset)) + " resets it" + resetBound(f, reset, loop, "iterations")
		}
		pass.Report(analysis.Diagnostic{
			Start: a.Start(), End: a.End(),
			Severity: severity,
			Fixes:    fixes,
			Message:  keepsEveryGraph(f, a, value, name, advice, "iteration's"),
			Detail:   detail + tail,
		})
	}
}

// meterUpdate returns the meter and the value of `meter.update(v, ...)`
// in a loop, or nils.
func meterUpdate(f *semantic.File, call *pyast.Node) (meter, value *pyast.Node) {
	meter = semantic.Receiver(call)
	value = f.Arg(call, "val", 0)
	if f.MethodName(call) != "update" || !meter.Is("identifier", "attribute") || value == nil ||
		value.Is("keyword_argument", "list_splat", "dictionary_splat") || !analysis.InLoop(call) {
		return nil, nil
	}
	return meter, value
}

// meterFields are the attributes through which code reads a running
// meter's values (`losses.avg`).
var meterFields = []string{"val", "avg", "sum", "mean", "total", "value", "count"}

// reportMeterUpdate reports `losses.update(loss, n)` in a step loop, where
// the meter (bound outside the loop) is of a class whose update adds the
// value as it is to a running sum (see semantic.File.SumsArgument): the
// sum becomes a tensor linking every iteration's graph, as `total +=
// loss` would.
func reportMeterUpdate(pass *analysis.Pass, call, meter, value *pyast.Node) {
	f := pass.File
	if semantic.NeverTainted(f, value) {
		return
	}
	loop := f.InnermostStepLoop(call)
	if loop == nil || f.InNoGrad(call) {
		return
	}
	scope := semantic.Scope(call)
	name := f.Text(meter)
	taint := f.TaintOf(scope)
	backed := backwardOfScalar(f, value, loop, call)
	// Whether the meter's update sums what it gets is part of its
	// summary: an edit of it re-runs this on the calls of its name. Only
	// a meter's calls read more (an attribute's uses across the file):
	// marking every update call as reading outside its statement would
	// re-run them all on every keystroke. (What a call in the value
	// returns, the fixes' isTensor tells the runner itself.)
	if !taint.Tainted(value) && !backed || f.AssignedIn(name, loop.Child("body")) || !f.SumsArgument(call) {
		return
	}
	readsWholeFile(pass, call, name, scope)
	// `(window.sum / window.count).backward()` reaches a backward pass
	// through the meter's name. And only a value the step's backward pass
	// runs through: a graph already backpropagated cannot be again, so the
	// meter does not sum it for a later backward.
	if !freedInStep(f, value, loop, call) || f.ReachesBackward(name, scope) || f.CalledUnderNoGradAcrossFiles(call) {
		return
	}
	usedLater := returned(f, name, scope)
	for _, field := range meterFields {
		usedLater = usedLater || usedAsTensor(f, name+"."+field, scope, false)
	}
	// The meter may be read anywhere it is passed: both fixes are unsafe.
	fixes, advice, tail := totalAdvice(f, value, name, backed || isTensor(pass, taint, value, call), backed || taint.IsScalarLoss(value),
		usedLater, false, analysis.Unsafe, meterWording)
	detail := "`" + name + ".update()` adds the value it is given to a running sum: the step's `backward()` frees " +
		"the activations, but the sum becomes a tensor whose `grad_fn` chain links every iteration's graph nodes " +
		"and keeps them alive in host memory"
	pass.Report(analysis.Diagnostic{
		Start: call.Start(), End: call.End(),
		Severity: analysis.SeverityInfo, // the step backpropagates the value: nodes only, as above
		Fixes:    fixes,
		Message: analysis.ShortestFit(
			analysis.Code(name)+" sums "+analysis.Code(f.Text(value))+" with its history, keeping every iteration's graph alive; pass "+
				analysis.Code(withMethod(f, value, advice)),
			analysis.Code(name)+" sums "+analysis.Code(f.Text(value))+" with its history; pass its `"+advice+"`",
			analysis.Code(name)+" sums a tensor with its history; pass its `"+advice+"`"),
		Detail: detail + tail,
	})
}

// stepMethodOf returns the method holding stmt, a statement outside any
// loop that accumulates or stores into target, when target is an
// attribute of the method's object (`self.running_loss += loss`,
// `self.outputs.append(loss)`): the total or the container outlives the
// call, so a method called once a step adds up every step's value, as a
// loop would. Nil otherwise (and for __init__, which runs once). Read
// from the syntax alone: it is part of the rules' shape.
func stepMethodOf(f *semantic.File, stmt, target *pyast.Node) *pyast.Node {
	fn := semantic.EnclosingFunction(stmt)
	if fn == nil || !fn.Is("function_definition") || analysis.InLoop(stmt) || !target.Is("attribute") {
		return nil
	}
	def := fn
	if def.Parent().Is("decorated_definition") {
		def = def.Parent()
	}
	if !def.Parent().Is("block") || !def.Parent().Parent().Is("class_definition") || f.Text(fn.Child("name")) == "__init__" {
		return nil
	}
	params := fn.Child("parameters").NamedChildren()
	obj := target.Child("object")
	if len(params) == 0 || !params[0].Is("identifier") || !obj.Is("identifier") || f.Text(obj) != f.Text(params[0]) {
		return nil
	}
	return fn
}

// reportAcrossCalls reports `self.total += loss` in method, a training
// step: the method runs `loss.backward()` (with no gradient, so loss is
// one tensor with history) each time it is called, or is a
// LightningModule's training_step that returns loss to Lightning's
// backward pass, and the total it adds to lives on the object between the
// calls. Not reported when the total reaches a backward pass anywhere in
// the file (a loss summed over calls and backpropagated later), when the
// method returns it, when the method sets it afresh on every call, or
// when autograd is off where the method is called.
func reportAcrossCalls(pass *analysis.Pass, a, acc, value, method *pyast.Node) {
	f := pass.File
	name := f.Text(acc)
	readsWholeFile(pass, a, name, method)
	body := method.Child("body")
	// The method runs the backward pass on the value, or it is a
	// LightningModule's training_step that returns it to Lightning's:
	// either way one tensor with history (what a step returns as it is
	// may be a dict, but not one added to a total).
	lightning := false
	if !backwardOfScalar(f, value, body, a) {
		lightning, _ = lightningTrainingStep(f, method, value, a)
		if !lightning {
			return
		}
	}
	if f.ReachesBackward(name, method) || returned(f, name, method) {
		return
	}
	reset := resetIn(f, name, body, a)
	if reset != nil && !conditional(reset, method) {
		return // set afresh on every call
	}
	if f.CalledUnderNoGradAcrossFiles(a) {
		return
	}
	// One scalar tensor (see above); a total on an object may be read
	// anywhere, so .detach() is unsafe too.
	fixes, advice, tail := totalAdvice(f, value, name, true, true, usedAsTensor(f, name, method, false), false, analysis.Unsafe, totalWording)
	step := "`" + f.Text(method.Child("name")) + "` runs `" + f.Text(value) + ".backward()` each time it is called"
	if lightning {
		step = "Lightning runs `training_step` on every batch and backpropagates the loss it returns"
	}
	detail := step + ", and `" + name + "` outlives the call: it becomes a tensor whose `grad_fn` chain links the graph " +
		"nodes of every call so far and keeps them alive in host memory"
	if reset != nil {
		detail += " until " + analysis.Code(f.Text(reset)) + " resets it" + resetBound(f, reset, method, "calls")
	}
	pass.Report(analysis.Diagnostic{
		Start: a.Start(), End: a.End(),
		Severity: analysis.SeverityInfo, // the step backpropagates the value: nodes only, as above
		Fixes:    fixes,
		Message:  keepsEveryGraph(f, a, value, name, advice, "call's"),
		Detail:   detail + tail,
	})
}

// wording is how totalAdvice words its fixes' titles and its advice: a
// total's value is accumulated (added), a meter's passed.
type wording struct{ fix, advise string }

var (
	totalWording = wording{fix: "Accumulate", advise: "Add"}
	meterWording = wording{fix: "Pass", advise: "Pass"}
)

// totalAdvice returns the fixes for a total name that adds up value, the
// method the message advises and the detail's closing advice. Fixes only
// when value is known to be one tensor: `.detach()` with detachSafety,
// and first `.item()` (unsafe: a Python float) for one number that stays
// a number. A total used as a tensor later or returned, or a value not
// known to be one number, is told `.detach()`. verbs words both.
func totalAdvice(f *semantic.File, value *pyast.Node, name string, tensor, scalar, usedLater, returnedTotal bool,
	detachSafety analysis.Applicability, verbs wording) (fixes []analysis.Fix, advice, tail string) {
	asNumber := scalar && !usedLater && !returnedTotal
	if tensor {
		fixes = []analysis.Fix{wrapFix(f, verbs.fix, value, "detach()", detachSafety)}
		if asNumber {
			fixes = append([]analysis.Fix{wrapFix(f, verbs.fix, value, "item()", analysis.Unsafe)}, fixes...)
		}
	}
	switch {
	case !scalar:
		return fixes, ".detach()", ". " + verbs.advise + " `" + withMethod(f, value, ".detach()") + "` (a tensor without history), " +
			"or `" + withMethod(f, value, ".item()") + "` if it is one number."
	case !asNumber:
		why := "is used as a tensor later"
		if returnedTotal {
			why = "is returned to callers that may use it as a tensor"
		}
		return fixes, ".detach()", ". " + verbs.advise + " `" + withMethod(f, value, ".detach()") + "` (a tensor without history): `" +
			name + "` " + why + ", where a Python number would not do."
	}
	return fixes, ".item()", ". " + verbs.advise + " `" + withMethod(f, value, ".item()") + "` (a Python number) or `" +
		withMethod(f, value, ".detach()") + "` (a tensor without history)."
}

// keepsEveryGraph is the message for the accumulation a of value into
// the total name: it keeps every iteration's (or call's: each) graph
// alive, and advice says what to add instead; shortened to fit.
func keepsEveryGraph(f *semantic.File, a, value *pyast.Node, name, advice, each string) string {
	keeps := " keeps every " + each + " graph alive; add "
	return analysis.ShortestFit(
		analysis.Code(f.Text(a))+keeps+analysis.Code(withMethod(f, value, advice)),
		analysis.Code(f.Text(a))+keeps+"its `"+advice+"`",
		analysis.Code(name)+keeps+"its `"+advice+"`")
}

// conditional reports whether stmt runs only under an if inside loop.
func conditional(stmt, loop *pyast.Node) bool {
	for p := stmt.Parent(); p != nil && p != loop; p = p.Parent() {
		if p.Is("if_statement", "elif_clause", "else_clause") {
			return true
		}
	}
	return false
}

// resetBound describes how often a conditional reset runs: every N
// iterations (units) of loop for `if step % N == 0`.
func resetBound(f *semantic.File, reset, loop *pyast.Node, units string) string {
	for p := reset.Parent(); p != nil && p != loop; p = p.Parent() {
		if !p.Is("if_statement", "elif_clause") {
			continue
		}
		bound := ""
		pyast.Walk(p.Child("condition"), func(n *pyast.Node) bool {
			if n.Is("binary_operator") && f.Text(n.Child("operator")) == "%" {
				bound = f.Text(n.Child("right"))
			}
			return bound == ""
		})
		if bound != "" {
			return " every `" + bound + "` " + units
		}
		return " when `" + f.Text(p.Child("condition")) + "`"
	}
	return ""
}

// totalStaysLocal reports whether the total acc is a local name whose
// value reaches nothing that could backpropagate through it: it is not
// returned or yielded, not stored in an attribute, a container or a
// global, and is passed only to printing, logging and conversions.
func totalStaysLocal(f *semantic.File, acc, scope *pyast.Node) bool {
	return acc.Is("identifier") && !escapingNames(f, scope).Has(f.Text(acc))
}

// escapingNames are the names whose values may reach, in scope, something
// that could backpropagate through them (see totalStaysLocal), found once
// per scope: at module level the scope is the whole file, and every
// candidate asks.
func escapingNames(f *semantic.File, scope *pyast.Node) semantic.Names {
	return semantic.NamesIn(f, "escaping names", scope, func(root *pyast.Node, add func(string)) {
		mentioned := func(e *pyast.Node, except string) {
			pyast.Walk(e, func(n *pyast.Node) bool {
				if n.Is("identifier", "attribute") && f.Text(n) != except {
					add(f.Text(n))
				}
				return true
			})
		}
		pyast.Walk(root, func(n *pyast.Node) bool {
			switch n.Kind() {
			case "function_definition", "lambda", "class_definition":
				// Read in another function (a closure, or a function
				// reading a module-level total): unknown use.
				if n != scope {
					mentioned(n, "")
				}
				return n == scope
			case "global_statement", "nonlocal_statement", "return_statement", "yield":
				mentioned(n, "")
				return false
			case "assignment", "augmented_assignment":
				// Flowing into another name or an attribute: unknown use.
				if r := n.Child("right"); r != nil {
					mentioned(r, f.Text(n.Child("left")))
				}
			case "call":
				if args := n.Child("arguments"); args != nil && !loggingCall(f, n) {
					mentioned(args, "")
				}
			}
			return true
		})
	})
}

// loggingCall reports whether call only shows or converts its arguments.
func loggingCall(f *semantic.File, call *pyast.Node) bool {
	if strings.HasPrefix(f.Callee(call), "torch.") {
		return false
	}
	switch f.LastName(call.Child("function")) {
	case "print", "float", "int", "str", "repr", "round", "format", "len", "set_postfix", "set_description",
		"add_scalar", "add_scalars", "log", "log_metrics", "info", "debug", "warning", "write":
		return true
	}
	return false
}

// resetIn returns the statement in body, other than the accumulation
// stmt, that assigns name afresh, or nil.
func resetIn(f *semantic.File, name string, body, stmt *pyast.Node) *pyast.Node {
	for _, a := range f.AssignmentsIn(body) {
		if a != stmt && a.Kind() == "assignment" && f.Text(a.Child("left")) == name {
			if acc, _ := accumulation(f, a); acc == nil {
				return a
			}
		}
	}
	return nil
}
