package rules

import (
	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/semantic"
)

// GraphTensorInContainer reports tensors that carry autograd history stored
// in a container that outlives the loop iteration.
var GraphTensorInContainer = &analysis.Rule{
	Code:            "GPU002",
	Name:            "graph-tensor-in-container",
	Summary:         "A tensor with autograd history is kept in a list, dict or set across loop iterations",
	DefaultSeverity: analysis.SeverityWarning,
	SeverityWhen: "info when the stored value is a loss the step's `backward()` runs through (before the " +
		"store or after it, in the same iteration): the graph's activations are freed and only its nodes and a " +
		"small block a step stay",
	Fixable: analysis.FixSometimes,
	Doc: analysis.Doc{
		What: "Finds `xs.append(t)`, `xs.extend(...)`, `xs.insert(i, t)`, `xs += [t]`, `s.add(t)` and `d[k] = t` " +
			"inside a loop that runs training or evaluation steps, and the same into an entry of a dict of lists " +
			"(`history[\"train_loss\"].append(t)`, the dict built as `{\"loss\": [], ...}`, `defaultdict(list)` " +
			"or `{k: [] for k in keys}`; not a list of lists, the shape of a beam search's hypotheses, nor in a loop " +
			"that only feeds a model, such as a generation's decoding steps), where `t` carries autograd history (it comes from a " +
			"model (one built with `.requires_grad_(False)` only when its input carries history), a criterion, a loss function, a method or helper of the file that returns one, a model's loss " +
			"method by convention (`model.compute_loss(b)`, `model.loss(x, y)`, `*_loss`, `neg_log_likelihood`, `nll`), or " +
			"arithmetic, indexing, `.cpu()` or `.to()` on such a value; or whatever computed it, when the loop calls " +
			"`t.backward()` without a gradient on the same binding: only a scalar with history allows that), the container is a list, dict, set or " +
			"deque created outside that loop, and autograd is on (GPU004 lists what turns it off, the callers " +
			"of a function in the project's other files included). The same outside a loop in a method that runs a " +
			"training step, for a container on the object (`self.outputs.append(loss)`), which lives across the " +
			"calls as a loop's list lives across iterations: a method that calls `loss.backward()` on the stored value, " +
			"or a LightningModule's `training_step` that returns it (or returns it as a dict's \"loss\") to Lightning's " +
			"automatic optimization, or stores a dict built around what it returns (`{\"loss\": loss, \"y\": y}`): the " +
			"pattern of Lightning's own docs, `self.training_step_outputs.append(loss)` (no fix when the stored value " +
			"may be a dict); " +
			"not when the container reaches a backward pass anywhere in the file, loses elements (`pop`), or is set " +
			"afresh in or returned by the method. And a call in a step loop of a method that appends the argument " +
			"as it is to a list or dict on its object (`recorder.add_loss(loss)`, `self.save_loss(loss)` with `def " +
			"save_loss(self, loss): self.history.append(loss)`), the class in this file or another of the project, " +
			"the object made outside the loop, the argument a value the step's backward pass runs through (so no " +
			"later backward pass can want it): not when the method rebinds the argument first, sets the container " +
			"afresh, or its class pops from it, hands it to NumPy or backpropagates through it (the fix, " +
			"`.detach()` at the call, is the only one offered: how the class uses what it keeps may be in another " +
			"file).\n\n" +
			"A step loop is one whose body runs a backward pass or an optimizer step (directly, through a " +
			"function of the file, or a conventional `training_step`), that iterates a data loader, or that " +
			"counts steps, batches or epochs or feeds a model what it iterates, outside a module's own code, " +
			"not along a tensor's inner dimension (`range(0, z.shape[3], stride)`: one input's tiles) " +
			"and without loading weights on each iteration. Deliberately not " +
			"reported: lists filled in `forward`, a loss function or `__init__` (per-layer features, per-level " +
			"outputs, loss terms, layers), loops over layers, files or configurations, containers that reach " +
			"`.backward()` (`torch.stack(losses).sum().backward()`, REINFORCE log-probabilities, " +
			"`accelerator.backward(losses[i])`), objects of other classes (a metric's `add()` may convert), " +
			"queues and windows a loop takes elements out of (`outputs.pop(0)`: a pipeline schedule's activations " +
			"waiting for their backward), the list a batched forward helper returns (also when it returns it in " +
			"a result object, `res.scores = torch.cat(scores); return res`; after `model.eval()` only when a " +
			"caller of the file backpropagates what it returns, as PPO's dropout-free forward pass does), " +
			"calls of a Hugging Face `pipeline(...)` (they return Python values), and containers whose tensors are " +
			"joined and passed to " +
			"`.numpy()` undetached (`torch.cat(feats).numpy()` raises on tensors that require grad, so code " +
			"that runs keeps none there). Values passed through `.item()`, `.detach()`, `float()`, " +
			"`.tolist()` or `.numpy()`, the elements without history of a tuple a helper of the file returns " +
			"(`loss, acc = step(batch)` where `acc` is an argmax accuracy), a loss of values computed under " +
			"no-grad (`with torch.no_grad(): logits = model(x)`, then `criterion(logits[:, :-1], y)`), values " +
			"that tensor operations compute under no-grad from tensors with history (`torch.softmax(out)`, " +
			"arithmetic; not moves, casts or in-place methods, which may return the tensor itself), and " +
			"gradients from `torch.autograd.grad` without `create_graph=True` (an option's value there, such as " +
			"`create_graph=self.create_graph`, is the caller's choice: off by default, and wanted when on), carry " +
			"no history. Nor do the results of a conventional `train_step`/`training_step` called in a function " +
			"that runs no backward (the step ran its own, and returns what it reports: `loss.item()`, trained " +
			"embeddings), or of a model another runtime runs (a class of ONNX Runtime, OpenVINO, TensorRT, AWS " +
			"Neuron or TensorFlow, a class deriving from one, or `from_pretrained` of one: optimum's " +
			"`ORTModelFor*`).",
		Why: "A tensor produced with autograd on holds its `grad_fn`, and through it the graph of the " +
			"step that made it. Stored in a list, it keeps that graph alive for as long as the list lives. " +
			"For a model output (`preds.append(logits)`) that is the tensor itself on the GPU plus, unless " +
			"`backward()` ran through it, every activation the graph saved: memory grows each step until it " +
			"runs out. When the step's `backward()` runs through the stored tensor (a loss appended after it, " +
			"or a loss or output the step backpropagates through later), the saved tensors are freed, and " +
			"what remains per step is its `grad_fn` chain, in host memory (and, for a loss, a 512-byte GPU block): " +
			"a slower leak, in proportion to the model's operations (measured for GPU003's running total, which " +
			"keeps the same nodes: about 5.6 KB a step for a five-layer MLP, 400 KB for a 12-layer transformer of " +
			"731 autograd nodes, 4 GB over 10,000 steps; docs/GPU-MEASUREMENTS.md). " +
			"`.cpu()` copies but does not detach: the copy keeps the graph too.\n\n" +
			"Store `loss.item()` (a Python float; it waits for the GPU, so in hot loops prefer accumulating " +
			"`loss.detach()` on the device and calling `.item()` when you log) or `t.detach()` / " +
			"`t.detach().cpu()`.",
		Example: `import torch

model = torch.nn.Linear(8, 1)
criterion = torch.nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
history = []
for step in range(100):
    x, y = torch.randn(4, 8), torch.randn(4, 1)
    loss = criterion(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    history.append(loss)`,
		UseInstead: `import torch

model = torch.nn.Linear(8, 1)
criterion = torch.nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
history = []
for step in range(100):
    x, y = torch.randn(4, 8), torch.randn(4, 1)
    loss = criterion(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    history.append(loss.item())`,
		FixSafety: "The fixes are unsafe: they change what the container holds. They are offered only " +
			"when the stored value is known to be one tensor (a loss, a torch operation, a layer's or a local " +
			"model's output, a value the loop calls `.backward()` on without a gradient, with nothing but arithmetic on itself assigning it between the store and the backward): never on a tuple, a list, a module or a model output of unknown structure. For a " +
			"scalar loss the preferred fix stores `loss.item()` (a Python float; it waits for the GPU each " +
			"step), the other `loss.detach()`. For other tensors they store `t.detach()` or " +
			"`t.detach().cpu()`. When the container is later used as tensors (`torch.stack(history)`, " +
			"`history[-1].backward()`, `(sum(history) / len(history)).item()`) or is returned to a caller, only " +
			"`.detach()` is offered, because floats would break that code.",
	},
	Run:   runGraphTensorInContainer,
	Local: true,
}

// storedValue returns the value a container-storing statement stores and
// the container, or nils when node stores nothing. The container may be
// an entry of a keyed history (`history["loss"].append(loss)`; see
// holderOf).
func storedValue(f *semantic.File, n *pyast.Node) (value, container *pyast.Node) {
	switch n.Kind() {
	case "call":
		recv := semantic.Receiver(n)
		if !recv.Is("identifier", "attribute") && keyedEntry(recv) == nil {
			return nil, nil
		}
		switch f.MethodName(n) {
		case "append", "extend", "add", "appendleft":
			return f.Arg(n, "", 0), recv
		case "insert":
			return f.Arg(n, "", 1), recv
		}
	case "assignment":
		if left := n.Child("left"); left.Is("subscript") && left.Child("value").Is("identifier", "attribute") {
			return n.Child("right"), left.Child("value")
		}
	case "augmented_assignment":
		// `losses += [loss]` appends one element.
		left, right := n.Child("left"), n.Child("right")
		if f.Text(n.Child("operator")) == "+=" && left.Is("identifier", "attribute") && right.Is("list", "tuple") {
			if elements := right.NamedChildren(); len(elements) == 1 {
				return elements[0], left
			}
		}
	}
	return nil, nil
}

// keyedEntry returns what a subscript container is an entry of: `history`
// for `history["loss"]` or `self.history[k]`, nil for anything else (a
// slice, several keys, a call's result). builtinHolder asks that the
// holder be a dict of builtin containers.
func keyedEntry(container *pyast.Node) *pyast.Node {
	if !container.Is("subscript") || !container.Child("value").Is("identifier", "attribute") {
		return nil
	}
	keys := container.ChildrenOf("subscript")
	if len(keys) != 1 || keys[0].Is("slice") {
		return nil
	}
	return container.Child("value")
}

// holderOf is what holds the values a store keeps: the container itself,
// or the dict a keyed entry belongs to. Whether it outlives the loop, is
// reset, reaches a backward pass, is joined, popped or returned is asked
// of the holder.
func holderOf(container *pyast.Node) *pyast.Node {
	if h := keyedEntry(container); h != nil {
		return h
	}
	return container
}

func runGraphTensorInContainer(pass *analysis.Pass) {
	f := pass.File
	check := func(stmt *pyast.Node) {
		value, container := storedValue(f, stmt)
		// A dict literal has no history of its own; a step method's may
		// hold the loss it returns (see lightningTrainingStep).
		literalDict := value.Is("dictionary")
		if value == nil || !literalDict && semantic.NeverTainted(f, value) {
			return // `history.append(loss.item())`: nothing to ask of the loop or the taint
		}
		// The container must outlive an iteration of a loop that runs
		// training or evaluation steps (or the call of a step method, see
		// storedAcrossCalls); lists filled in a forward pass, a loss
		// function or a constructor live one step.
		loop := f.InnermostStepLoop(stmt)
		if loop == nil {
			if method := stepMethodOf(f, stmt, holderOf(container)); method != nil && !f.InNoGrad(stmt) {
				storedAcrossCalls(pass, stmt, value, container, method)
			}
			return
		}
		if literalDict || f.InNoGrad(stmt) {
			return
		}
		scope := semantic.Scope(stmt)
		taint := f.TaintOf(scope)
		name := f.Text(holderOf(container))
		readsWholeFile(pass, stmt, name, scope)
		// A value the loop calls `.backward()` on without a gradient is a
		// scalar tensor with history, whatever computed it
		// (`output["loss"]`, a helper of another module).
		backed := backwardOfScalar(f, value, loop, stmt)
		// A keyed history is a training or evaluation loop's log; a loop
		// that only feeds a model (a generation's decoding steps) may
		// keep what a caller trains on.
		keyed := holderOf(container) != container
		if !taint.Tainted(value) && !backed || keyed && f.StepLoopKind(loop) == semantic.ModelLoop ||
			!builtinHolder(f, container, scope, stmt) || setAfreshIn(f, container, loop.Child("body")) ||
			f.ReachesBackward(name, scope) || joinedIntoNumPy(f, name, scope) || poppedInLoop(f, name, scope) {
			return
		}
		// A batched forward helper (`for i in range(n_batches):
		// outs.append(model(x[i]))`, then `return torch.cat(outs)`)
		// returns the graphs it keeps: whoever calls it decides.
		if f.StepLoopKind(loop) == semantic.ModelLoop && returned(f, name, scope) &&
			(!evalModeIn(f, scope) || f.FeedsTraining(stmt)) {
			return
		}
		if f.CalledUnderNoGradAcrossFiles(stmt) {
			return // the last question: it may read the project's other files
		}
		d := analysis.Diagnostic{Start: stmt.Start(), End: stmt.End()}
		who := analysis.Code(f.Text(container))
		keeps := func(what, store string) string { return keepsMessage(f, who, value, what, store) }
		// The step's backward pass, before the store or after it, frees
		// the activations the graph saved: what stays is its nodes.
		freed := freedInStep(f, value, loop, stmt)
		scalar := taint.IsScalarLoss(value) || backed
		// A loss becomes a float, unless the code uses the elements as
		// tensors (`torch.stack(losses)`), here or in a caller.
		storeLoss := ".item()"
		asTensors := usedAsTensor(f, elementsName(f, container), scope, true) || returned(f, name, scope)
		if asTensors {
			storeLoss = ".detach()"
		}
		switch {
		case scalar && freed:
			d.Severity = analysis.SeverityInfo
			d.Message = keeps("with its autograd history", storeLoss)
			d.Detail = "The step's `backward()` frees the graph's activations, but each stored loss still holds its " +
				"`grad_fn` chain and a small GPU block, so memory creeps up every step."
		case scalar:
			d.Message = keeps("with its graph and activations alive", storeLoss)
			d.Detail = "The stored loss keeps its autograd graph, and with it every activation the step saved " +
				"for backward, alive across iterations."
		case freed:
			d.Message = keeps("with its autograd history", ".detach()")
			d.Detail = "The step's `backward()` frees the activations its graph saved, but each stored tensor " +
				"stays in memory with its `grad_fn` chain until " + who + " is dropped. `.detach()` (or " +
				"`.detach().cpu()`) keeps the values without the history."
		default:
			d.Message = keeps("with its autograd graph alive", ".detach()")
			d.Detail = "The tensor and the activations its graph saved stay in memory until " + who +
				" is dropped. `.detach()` (or `.detach().cpu()`) keeps the values without the graph."
		}
		if scalar {
			d.Detail += storeLossAdvice(asTensors)
		}
		if onlyMovedToCPU(f, value) {
			d.Detail += " `.cpu()` copies but does not detach."
		}
		// `.detach()` and `.item()` exist on tensors only: no fix for a
		// model output of unknown structure, a tuple or a list.
		if (!stmt.Is("call") || f.MethodName(stmt) != "extend") && (backed || isTensor(pass, taint, value, stmt)) {
			d.Fixes = containerFixes(f, value, container, scope, scalar)
		}
		pass.Report(d)
	}
	// What check needs first: a statement storing into a container, in a
	// loop (the step loop).
	stores := func(n *pyast.Node) bool {
		value, container := storedValue(f, n)
		return value != nil && (analysis.InLoop(n) || stepMethodOf(f, n, holderOf(container)) != nil)
	}
	for _, call := range pass.CandidateCalls(stores, "append", "extend", "add", "appendleft", "insert") {
		check(call)
	}
	for _, a := range pass.CandidateAssignments(stores) {
		check(a)
	}
	pass.EachCandidateLoopCall(func(lc semantic.LoopCall) {
		if recordingCall(f, lc.Call) {
			storedByMethod(pass, lc.Call)
		}
	})
}

// recordingCall reports whether call may hand a method values to keep: a
// method call on a name or attribute (`recorder.add_loss(loss)`,
// `self.record(epoch, loss)`), as a statement of its own, with a
// positional argument that may carry history.
func recordingCall(f *semantic.File, call *pyast.Node) bool {
	fn := call.Child("function")
	if !fn.Is("attribute") || !fn.Child("object").Is("identifier", "attribute") || !call.Parent().Is("expression_statement") {
		return false
	}
	for _, a := range call.Child("arguments").NamedChildren() {
		if !a.Is("keyword_argument", "list_splat", "dictionary_splat", "comment") && !semantic.NeverTainted(f, a) {
			return true
		}
	}
	return false
}

// storedByMethod reports `recorder.add_loss(loss)` in a step loop, where
// the method (of a class of this file or another of the project) appends
// the argument as it is to a list or dict on its object (see
// semantic.File.StoredArguments), and the object outlives the iteration:
// the list keeps every step's loss with its history, as GPU002's own
// `losses.append(loss)` would.
func storedByMethod(pass *analysis.Pass, call *pyast.Node) {
	f := pass.File
	// What the method keeps is part of its summary: an edit of it
	// re-runs this on the calls of its name (no ReadsOutside, which
	// would re-run every such call in the file on every keystroke). Asked
	// first: most calls in loops keep nothing (a test's
	// self.assertEqual(...)), and whether a loop runs steps is the dearer
	// question.
	stored := f.StoredArguments(call)
	if stored == 0 {
		return
	}
	loop := f.InnermostStepLoop(call)
	if loop == nil || f.InNoGrad(call) {
		return
	}
	recv := semantic.Receiver(call)
	if f.AssignedIn(f.Text(recv), loop.Child("body")) {
		return // a recorder made on each iteration
	}
	taint := f.TaintOf(semantic.Scope(call))
	var value *pyast.Node
	backed := false
	i := 0
	for _, a := range call.Child("arguments").NamedChildren() {
		if a.Is("comment") {
			continue
		}
		if a.Is("keyword_argument", "list_splat", "dictionary_splat") {
			break
		}
		if stored&(1<<i) != 0 && !semantic.NeverTainted(f, a) {
			backed = backwardOfScalar(f, a, loop, call)
			if backed || taint.Tainted(a) {
				value = a
				break
			}
		}
		i++
	}
	// Only a value the step's backward pass runs through: a graph
	// already backpropagated cannot be again, so the object does not
	// keep it for a later backward (REINFORCE's log-probabilities, kept
	// by a rollout buffer for the update after the episode, are).
	if value == nil || !freedInStep(f, value, loop, call) || f.CalledUnderNoGradAcrossFiles(call) {
		return
	}
	method := analysis.Code(f.Text(call.Child("function")) + "()")
	val := analysis.Code(f.Text(value))
	scalar := backed || taint.IsScalarLoss(value)
	d := analysis.Diagnostic{
		Start: call.Start(), End: call.End(),
		Message: analysis.ShortestFit(
			method+" keeps "+val+" with its autograd history on "+analysis.Code(f.Text(recv))+"; pass "+
				analysis.Code(withMethod(f, value, ".detach()")),
			method+" keeps "+val+" with its autograd history; pass its `.detach()`",
			method+" keeps a tensor with its history; pass its `.detach()`"),
		Detail: method + " stores the value it is given, as it is, in a list or dict on its object, which " +
			"outlives the iteration: the step's `backward()` frees the graph's activations, but each stored tensor " +
			"still holds its `grad_fn` chain until that is emptied, so memory creeps up every step.",
	}
	if scalar {
		d.Severity = analysis.SeverityInfo // as GPU002's stored losses the step backpropagates
	}
	d.Detail += " Pass `" + withMethod(f, value, ".detach()") + "` (a tensor without history)"
	if scalar {
		d.Detail += ", or `" + withMethod(f, value, ".item()") + "` (a Python number) where the method's " +
			"values are only read as numbers"
	}
	d.Detail += "."
	// Only .detach(): whether the stored values are used as tensors is
	// the class's business, which may be in another file.
	if backed || isTensor(pass, taint, value, call) {
		d.Fixes = []analysis.Fix{wrapFix(f, "Pass", value, "detach()", analysis.Unsafe)}
	}
	pass.Report(d)
}

// storedAcrossCalls reports `self.outputs.append(loss)` in method, a
// training step outside any loop: the container lives on the object, so
// a step called once a batch keeps every batch's loss with its history,
// as a loop's list would. The method is a step when it runs
// `loss.backward()` (no gradient: loss is one tensor with history), or
// when it is a LightningModule's training_step that returns the stored
// value (`return loss`, `return {"loss": loss}`), on which Lightning's
// automatic optimization runs the backward pass. Not reported when the
// container reaches a backward pass anywhere in the file, is joined into
// NumPy, taken from (`pop`), set afresh in the method or returned by it,
// or when autograd is off where the method is called.
func storedAcrossCalls(pass *analysis.Pass, stmt, value, container, method *pyast.Node) {
	f := pass.File
	name := f.Text(holderOf(container))
	readsWholeFile(pass, stmt, name, method)
	body := method.Child("body")
	// A value the method calls `.backward()` on without a gradient, or
	// the "loss" of the dict a training_step returns, is one scalar tensor
	// with history. What a training_step returns as it is, Lightning
	// backpropagates: a loss, or a dict holding one ("loss"), with history
	// in code that runs, whatever computed it (a module passed in, a
	// custom step).
	scalar := backwardOfScalar(f, value, body, stmt)
	lightning, asLoss := false, false
	if !scalar {
		lightning, asLoss = lightningTrainingStep(f, method, value, stmt)
		scalar = asLoss
	}
	if !scalar && !lightning || !builtinHolder(f, container, method, stmt) || setAfreshIn(f, container, body) ||
		f.ReachesBackward(name, method) || joinedInAMethod(f, name, method) || takenFrom(f, name) || returned(f, name, method) {
		return
	}
	if f.CalledUnderNoGradAcrossFiles(stmt) {
		return
	}
	taint := f.TaintOf(method)
	scalar = scalar || taint.IsScalarLoss(value)
	tensor := scalar || isTensor(pass, taint, value, stmt)
	who, val := analysis.Code(f.Text(container)), analysis.Code(f.Text(value))
	asTensors := usedAsTensor(f, elementsName(f, container), method, true)
	step := "`" + f.Text(method.Child("name")) + "` runs `" + f.Text(value) + ".backward()` each time it is called"
	if lightning {
		step = "Lightning runs `training_step` on every batch and backpropagates the loss it returns"
	}
	d := analysis.Diagnostic{
		Start: stmt.Start(), End: stmt.End(),
		Severity: analysis.SeverityInfo,
		Detail: step + ", and " + who + " outlives the call: the backward pass frees the graph's activations, but each " +
			"stored loss still holds its `grad_fn` chain and a small GPU block until " + who + " is emptied, so memory " +
			"creeps up every step.",
	}
	switch {
	case !tensor:
		// A dict holding the loss, or a value of unknown structure:
		// what to detach is the loss in it.
		d.Message = analysis.ShortestFit(who+" keeps "+val+" with its autograd history across calls; store its loss detached",
			who+" keeps a loss with its autograd history across calls; store it detached",
			who+" keeps every call's loss with its history; store it detached")
		d.Detail += " Store the loss detached (`.detach()`, a tensor without history) or as `.item()` (a Python " +
			"number). No fix is offered: "
		if value.Is("dictionary") || value.Is("identifier") && lastBinding(f, f.Text(value), method, stmt).Is("dictionary") {
			d.Detail += "the loss is an entry of the stored dict."
		} else {
			d.Detail += "what the step returns may be a dict that holds the loss."
		}
	case !scalar:
		d.Message = keepsMessage(f, who, value, "with its autograd history across calls", ".detach()")
		d.Detail += " `.detach()` (or `.detach().cpu()`) keeps the values without the history."
		d.Fixes = containerFixes(f, value, container, method, false)
	default:
		store := ".item()"
		if asTensors {
			store = ".detach()"
		}
		d.Message = keepsMessage(f, who, value, "with its autograd history across calls", store)
		d.Detail += storeLossAdvice(asTensors)
		d.Fixes = containerFixes(f, value, container, method, true)
	}
	pass.Report(d)
}

// keepsMessage is the message for the container who keeping value what
// (`with its autograd history`), and what to store instead; shortened to
// fit.
func keepsMessage(f *semantic.File, who string, value *pyast.Node, what, store string) string {
	val := analysis.Code(f.Text(value))
	return analysis.ShortestFit(who+" keeps "+val+" "+what+"; store "+analysis.Code(withMethod(f, value, store)),
		who+" keeps "+val+" "+what+"; store its `"+store+"`",
		who+" keeps a tensor "+what+"; store its `"+store+"`",
		who+" keeps tensors with their history; store their `"+store+"`")
}

// storeLossAdvice is the detail's closing advice for a stored loss: what
// keeps its value only, `.detach()` alone when the code uses the stored
// values as tensors.
func storeLossAdvice(asTensors bool) string {
	if asTensors {
		return " `.detach()` (a tensor without history) keeps the value only; the code uses the stored values " +
			"as tensors, which `.item()`'s floats are not."
	}
	return " `.item()` (a Python number) or `.detach()` (a tensor without history) keeps the value only."
}

// lightningTrainingStep reports whether method is the training_step of a
// LightningModule whose stored value holds what it returns to Lightning's
// automatic optimization (not turned off by the class or a base of the
// file: `self.automatic_optimization = False` makes Lightning ignore what
// the step returns): the value is what the step returns (holds), the loss of a
// returned dict (`return {"loss": loss}`: asLoss too), or a dict built in
// the step around either (`{"loss": loss, "y": y}`, also through a name
// bound to it before stmt).
func lightningTrainingStep(f *semantic.File, method, value, stmt *pyast.Node) (holds, asLoss bool) {
	class := f.EnclosingClass(method)
	if f.Text(method.Child("name")) != "training_step" || !f.IsModule(class) || setsOptimization(f, class, map[*semantic.Class]bool{}) {
		return false, false
	}
	// What the step returns: names returned as they are, and losses
	// returned in a dict.
	returned, losses := map[string]bool{}, map[string]bool{}
	pyast.Walk(method.Child("body"), func(n *pyast.Node) bool {
		switch {
		case n.Is("function_definition", "lambda", "class_definition"):
			return false
		case n.Is("return_statement"):
			switch e := n.FirstNamed(); {
			case e.Is("identifier"):
				returned[f.Text(e)] = true
			case e.Is("dictionary"):
				if loss := dictEntry(f, e, "loss"); loss.Is("identifier") {
					losses[f.Text(loss)] = true
				}
			}
			return false
		}
		return true
	})
	if value.Is("identifier") {
		name := f.Text(value)
		switch {
		case losses[name]:
			return true, true
		case returned[name]:
			return true, false
		}
		value = lastBinding(f, name, method, stmt)
	}
	// A dict built around what is returned keeps it.
	if value.Is("dictionary") {
		for _, pair := range value.NamedChildren() {
			if v := pair.Child("value"); pair.Is("pair") && v.Is("identifier") && (returned[f.Text(v)] || losses[f.Text(v)]) {
				return true, false
			}
		}
	}
	return false, false
}

// setsOptimization reports whether class, or a class of the file it
// derives from, sets `automatic_optimization` (to turn it off: Lightning
// then ignores what training_step returns). Its subclasses' settings are
// theirs: a subclass that turns it off and keeps the step is not seen, a
// rare shape (scvi-tools' Pyro plans override the step when they do).
func setsOptimization(f *semantic.File, class *semantic.Class, seen map[*semantic.Class]bool) bool {
	if class == nil || seen[class] {
		return false
	}
	seen[class] = true
	for _, a := range f.AssignmentsIn(class.Node) {
		if left := a.Child("left"); left.Is("attribute") && f.Text(left.Child("attribute")) == "automatic_optimization" {
			return true
		}
	}
	for _, b := range class.Bases {
		if b.Is("identifier") && setsOptimization(f, f.Classes[f.Text(b)], seen) {
			return true
		}
	}
	return false
}

// dictEntry returns the value of the literal dict's entry under the
// string key, or nil.
func dictEntry(f *semantic.File, dict *pyast.Node, key string) *pyast.Node {
	for _, pair := range dict.NamedChildren() {
		if k := pair.Child("key"); pair.Is("pair") && (f.Text(k) == `"`+key+`"` || f.Text(k) == `'`+key+`'`) {
			return pair.Child("value")
		}
	}
	return nil
}

// joinedInAMethod reports whether a method of method's class joins the
// container's tensors into NumPy (see joinedIntoNumPy): an epoch's end
// hook may do what a loop's code after the loop does.
func joinedInAMethod(f *semantic.File, container string, method *pyast.Node) bool {
	if joinedIntoNumPy(f, container, method) {
		return true
	}
	if c := f.EnclosingClass(method); c != nil {
		for _, m := range c.Methods {
			if joinedIntoNumPy(f, container, m) {
				return true
			}
		}
	}
	return false
}

// takenFrom reports whether any code of the file takes elements out of
// the container (`self.outputs.pop(0)`): a window, not a history.
func takenFrom(f *semantic.File, name string) bool {
	for _, c := range f.CallsNamed("pop", "popleft", "popitem") {
		if r := unkeyed(semantic.Receiver(c)); r != nil && f.Text(r) == name {
			return true
		}
	}
	return false
}

// joinedIntoNumPy reports whether scope joins the container's tensors
// (`torch.cat(xs)`, `torch.stack(xs)`) and calls `.numpy()` on the result
// with nothing that detaches in between, or hands the container to NumPy
// (`np.concatenate(xs)`, `np.array(self.xs)`, which convert each element with
// its `.numpy()`): `.numpy()` raises on a tensor that requires grad, so
// code that runs stores none with a graph there (a model whose parameters
// do not require grad, outputs computed elsewhere under no_grad, a model
// wrapper that returns arrays).
func joinedIntoNumPy(f *semantic.File, container string, scope *pyast.Node) bool {
	// Every such container of the scope, found once: at module level the
	// scope is the whole file, and every candidate asks.
	return semantic.NamesIn(f, "joined into NumPy", scope, func(root *pyast.Node, add func(string)) {
		for _, call := range f.CallsIn(root) {
			if !semantic.InScope(call, scope) {
				continue
			}
			switch f.QualifiedName(call.Child("function")) {
			case "numpy.concatenate", "numpy.stack", "numpy.vstack", "numpy.hstack", "numpy.array", "numpy.asarray":
				if arg := unkeyed(f.Arg(call, "", 0)); arg.Is("identifier", "attribute") {
					add(f.Text(arg))
				}
			}
			if f.MethodName(call) != "numpy" {
				continue
			}
			x := semantic.Receiver(call)
			for x.Is("call") && keepsRequiresGrad[f.MethodName(x)] {
				x = semantic.Receiver(x)
			}
			if !x.Is("call") {
				continue
			}
			switch f.QualifiedName(x.Child("function")) {
			case "torch.cat", "torch.concat", "torch.concatenate", "torch.stack", "torch.vstack", "torch.hstack":
				if arg := unkeyed(f.Arg(x, "tensors", 0)); arg.Is("identifier", "attribute") {
					add(f.Text(arg))
				}
			}
		}
	}).Has(container)
}

// poppedInLoop reports whether a loop of scope takes elements out of the
// container (`outputs.pop(0)`, `queue.popleft()`): a queue of a few steps
// in flight (a pipeline schedule's activations, waiting for their
// backward) or a window of the last few, not a history that grows.
func poppedInLoop(f *semantic.File, container string, scope *pyast.Node) bool {
	return semantic.NamesIn(f, "popped in a loop", scope, func(root *pyast.Node, add func(string)) {
		for _, c := range f.CallsIn(root) {
			switch f.MethodName(c) {
			case "pop", "popleft":
				if semantic.InScope(c, scope) && len(semantic.EnclosingLoops(c)) > 0 {
					add(f.Text(unkeyed(semantic.Receiver(c))))
				}
			}
		}
	}).Has(container)
}

// keepsRequiresGrad are the tensor methods whose result requires grad
// when their receiver does.
var keepsRequiresGrad = map[string]bool{
	"cpu": true, "cuda": true, "to": true, "float": true, "double": true, "half": true, "squeeze": true,
	"unsqueeze": true, "reshape": true, "view": true, "flatten": true, "contiguous": true, "clone": true,
	"permute": true, "transpose": true, "t": true,
}

// hasCall reports whether e is or holds a call.
// isTensor reports whether value is one tensor (see
// semantic.Taint.IsTensor), which a fix of stmt's finding may require.
// The answer may read what a definition elsewhere returns (a model's
// forward, for `out` bound to `model(x)`): an edit there changes the fixes
// here, so the runner is told.
func isTensor(pass *analysis.Pass, taint *semantic.Taint, value, stmt *pyast.Node) bool {
	return taint.IsTensor(value, func(def *pyast.Node) {
		if def == nil {
			pass.ReadsOutside(stmt) // another file's
		} else {
			pass.ReadsDefinition(stmt, def)
		}
	})
}

// evalModeIn reports whether scope puts something in eval mode
// (`model.eval()`): then its loops evaluate, and nothing backpropagates
// through what they collect.
func evalModeIn(f *semantic.File, scope *pyast.Node) bool {
	for _, c := range f.CallsIn(scope) {
		if args := c.Child("arguments"); f.MethodName(c) == "eval" && semantic.InScope(c, scope) && args != nil && len(args.NamedChildren()) == 0 {
			return true
		}
	}
	return false
}

// onlyMovedToCPU reports whether value ends in `.cpu()` (or `.to("cpu")`),
// which users often take for a detach.
func onlyMovedToCPU(f *semantic.File, value *pyast.Node) bool {
	if !value.Is("call") {
		return false
	}
	switch f.MethodName(value) {
	case "cpu":
		return true
	case "to":
		return f.Text(f.Arg(value, "device", 0)) == `"cpu"` || f.Text(f.Arg(value, "device", 0)) == `'cpu'`
	}
	return false
}

// containerFixes offers .item() for scalar losses, .detach() always, and
// .detach().cpu() for other tensors; only .detach() when the container is
// later used as tensors.
func containerFixes(f *semantic.File, value, container, scope *pyast.Node, scalar bool) []analysis.Fix {
	detach := wrapFix(f, "Store", value, "detach()", analysis.Unsafe)
	if onlyMovedToCPU(f, value) {
		// logits.cpu() -> logits.detach().cpu(): detach before the copy.
		recv := semantic.Receiver(value)
		return []analysis.Fix{{
			Title:         "Store `" + f.Text(recv) + ".detach()" + f.Text(value)[recv.End()-value.Start():] + "`",
			Applicability: analysis.Unsafe,
			Edits:         []analysis.Edit{{Start: recv.End(), End: recv.End(), NewText: ".detach()"}},
		}}
	}
	switch {
	case usedAsTensor(f, elementsName(f, container), scope, true) || returned(f, f.Text(holderOf(container)), scope):
		// Floats would break code that uses the elements as tensors,
		// here or in a caller.
		return []analysis.Fix{detach}
	case scalar:
		return []analysis.Fix{wrapFix(f, "Store", value, "item()", analysis.Unsafe), detach}
	}
	return []analysis.Fix{detach, wrapFix(f, "Store", value, "detach().cpu()", analysis.Unsafe)}
}
