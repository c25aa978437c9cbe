package rules

import (
	"regexp"
	"strings"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/semantic"
)

// EmptyCacheInLoop reports torch.cuda.empty_cache() on the normal path of a
// loop body.
var EmptyCacheInLoop = &analysis.Rule{
	Code:            "GPU005",
	Name:            "empty-cache-in-loop",
	Summary:         "`torch.cuda.empty_cache()` runs on every iteration of a loop",
	DefaultSeverity: analysis.SeverityWarning,
	Fixable:         analysis.FixSometimes,
	Doc: analysis.Doc{
		What: "Finds `torch.cuda.empty_cache()` and `torch.accelerator.memory.empty_cache()` called on " +
			"every iteration of a loop that runs training or evaluation steps (see GPU002) or strides over its " +
			"data a batch at a time (`range(0, len(texts), self.batch_size)`, whatever its body calls), or of " +
			"a loop nested in one. Deliberately not reported: a call in an `except` branch (an out-of-memory " +
			"handler) or in the `try` of an out-of-memory retry loop, under a step-interval condition such as " +
			"`if step % 100 == 0` or on one iteration (`if step == 0`), in a branch that leaves the loop, " +
			"once after the loop, once per phase (after a nested loop that runs steps, batches or a model, such as an " +
			"epoch's batch loop or a rollout, before a nested loop that trains or goes over a loader or batches the " +
			"loop's iteration hands it, such as each model's pass over its own loader, or in a loop over epochs), " +
			"and in loops that are not per batch: " +
			"over experiments whose training runs in a called function (one that loops over its own steps) or " +
			"over datasets each put in a DataLoader of their own, over models built in the loop, over " +
			"checkpoints, files or labels, or over the chunks of one forward pass.",
		Why: "`empty_cache()` returns only the *unoccupied* blocks of PyTorch's caching allocator to the " +
			"driver. It does not free a single tensor that is still referenced, so it cannot stop memory " +
			"that grows because tensors are kept alive; it only makes the growth harder to see in " +
			"`nvidia-smi`. Every call frees segments with `cudaFree`, which synchronises the device, and " +
			"the next iteration pays `cudaMalloc` again, so a per-batch call slows training down. The " +
			"allocator already empties its cache by itself before it reports out-of-memory.\n\n" +
			"Find what keeps the memory alive instead (`torch.cuda.memory_summary()`, or " +
			"`torch.cuda.memory._record_memory_history()` and a snapshot), and for fragmentation use " +
			"`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`.",
		Example: `import torch

model = torch.nn.Linear(8, 8).cuda()
for step in range(1000):
    out = model(torch.randn(4, 8, device="cuda"))
    del out
    torch.cuda.empty_cache()`,
		UseInstead: `import torch

model = torch.nn.Linear(8, 8).cuda()
for step in range(1000):
    out = model(torch.randn(4, 8, device="cuda"))
    del out
torch.cuda.empty_cache()`,
		FixSafety: "Two fixes, both unsafe: move the call after the loop (for a batch loop inside an epoch " +
			"loop, that is once per epoch), or remove it. Neither changes what the program computes, but both " +
			"change how much memory the process keeps reserved, which other processes on the GPU can see, so " +
			"neither is applied without asking. The move is offered only for a call that is a statement of the " +
			"loop body itself (moving it out of an `if` or a `try` would drop its guard), and for one call per " +
			"loop when the loop has several, and only out of a loop that runs steps or a model (out of a loop over the " +
			"parts of a batch, the call would still run once a batch).",
	},
	Run:   runEmptyCacheInLoop,
	Local: true,
}

func runEmptyCacheInLoop(pass *analysis.Pass) {
	f := pass.File
	var reported []semantic.LoopCall // the calls and their innermost loops
	for _, call := range pass.CandidateCalls(analysis.InLoop, "empty_cache") {
		switch f.Callee(call) {
		case "torch.cuda.empty_cache", "torch.cuda.memory.empty_cache", "torch.accelerator.memory.empty_cache":
		default:
			continue
		}
		// Per batch means inside a loop that runs training or evaluation
		// steps (or a loop nested in one): not a loop over files,
		// checkpoints, experiments, labels or the chunks of one forward.
		loops := semantic.EnclosingLoops(call)
		step := f.InnermostStepLoop(call)
		if step == nil {
			step = innermostBatchLoop(f, loops)
		}
		if step == nil || f.StepLoopKind(step) == semantic.RunLoop || offNormalPath(f, call, loops[0]) ||
			phaseBoundary(f, call, loops[0]) || exitBranch(f, call, loops[0]) || retryLoop(f, call, step) ||
			buildsModelEachIteration(f, step) {
			continue
		}
		reported = append(reported, semantic.LoopCall{Call: call, Loop: loops[0]})
	}
	for i, r := range reported {
		call, loop := r.Call, r.Loop
		// One call after the loop is enough: when the loop has several,
		// only the last one moves there, the others go. After a loop that
		// runs no phase (a batch's parts, nested in the step loop), the
		// call would still run once a batch: it only goes.
		moveAfter := runsPhase(f, loop)
		for _, later := range reported[i+1:] {
			moveAfter = moveAfter && !(later.Loop == loop && inLoopBody(later.Call, loop))
		}
		pass.Report(analysis.Diagnostic{
			Start: call.Start(), End: call.End(),
			Fixes: emptyCacheFixes(f, call, loop, moveAfter),
			Message: analysis.ShortestFit(
				analysis.Code(f.Text(call.Child("function"))+"()")+" in a loop frees nothing in use and stalls; call it once after the loop",
				"`empty_cache()` in a loop frees nothing in use and stalls; call it once after the loop"),
			Detail: "It frees no tensor that is still referenced, so it cannot stop memory growth, and each call " +
				"synchronises the device and forces new `cudaMalloc`s. Call it once after the loop, or find what " +
				"keeps the memory alive.",
		})
	}
}

var epochName = regexp.MustCompile(`(?i)epoch`)

// exitBranch reports whether call sits in an if branch of loop that leaves
// the loop (ends in break, return, raise, or a stop/exit call): it runs
// once.
func exitBranch(f *semantic.File, call, loop *pyast.Node) bool {
	for p := call.Parent(); p != nil && p != loop; p = p.Parent() {
		if !p.Is("block") || p.Parent() == loop {
			continue
		}
		last := semantic.LastStatement(p)
		switch {
		case last.Is("break_statement", "return_statement", "raise_statement"):
			return true
		case last.Is("expression_statement") && len(last.NamedChildren()) > 0 && last.NamedChildren()[0].Is("call"):
			switch f.LastName(last.NamedChildren()[0].Child("function")) {
			case "exit", "stop", "quit", "_exit":
				return true
			}
		}
	}
	return false
}

// retryLoop reports whether call is in a try statement inside loop whose
// handler catches running out of memory (OutOfMemoryError, RuntimeError):
// the loop retries with smaller work, and clearing the cache before each
// try is the point.
func retryLoop(f *semantic.File, call, loop *pyast.Node) bool {
	for p := call.Parent(); p != nil && p != loop; p = p.Parent() {
		if !p.Is("try_statement") || !p.Child("body").Contains(call) {
			continue
		}
		for _, h := range p.NamedChildren() {
			if !h.Is("except_clause") {
				continue
			}
			head := f.Text(h)
			if i := strings.IndexByte(head, ':'); i >= 0 {
				head = head[:i]
			}
			if strings.Contains(head, "OutOfMemoryError") || strings.Contains(head, "RuntimeError") {
				return true
			}
		}
	}
	return false
}

// buildsModelEachIteration reports whether loop binds, in its body, a
// model it runs (`model = model_fn().cuda()`, then `model(x)`): a loop
// over models or configurations (a test over a zoo of them), each
// iteration a whole run of its own, not a batch.
func buildsModelEachIteration(f *semantic.File, loop *pyast.Node) bool {
	body := loop.Child("body")
	scope := semantic.Scope(loop)
	for _, c := range f.CallsIn(body) {
		if !semantic.InScope(c, scope) || !f.IsModelCall(c) {
			continue
		}
		fn := c.Child("function")
		if f.MethodName(c) == "forward" {
			fn = semantic.Receiver(c)
		}
		if fn.Is("identifier", "attribute") && f.AssignedIn(f.Text(fn), body) {
			return true
		}
	}
	return false
}

// phaseBoundary reports whether call runs once per phase rather than per
// batch: after a nested loop in the same loop body that runs a phase (the
// end of an epoch, or of a rollout before the update trains on it), before
// one that trains or goes over a loader or batches that loop's iteration
// hands it (the start of each model's pass over its own loader, in a loop
// over models and loaders), or in a loop over epochs. Before a nested loop
// that only runs a model (over a batch's views, a network's blocks), the
// call still runs once a batch.
func phaseBoundary(f *semantic.File, call, loop *pyast.Node) bool {
	if left := loop.Child("left"); left != nil && epochName.MatchString(f.Text(left)) {
		return true
	}
	for _, inner := range f.LoopsIn(loop.Child("body")) {
		switch {
		case inner.End() <= call.Start() && runsPhase(f, inner):
			return true
		case inner.Start() >= call.End() && passesOverData(f, inner) && iteratesVariableOf(f, inner, loop):
			return true
		}
	}
	return false
}

// passesOverData reports whether loop trains, iterates a loader or strides
// over its data a batch at a time.
func passesOverData(f *semantic.File, loop *pyast.Node) bool {
	switch f.StepLoopKind(loop) {
	case semantic.TrainingLoop, semantic.LoaderLoop:
		return true
	}
	return stridesOverBatches(f, loop)
}

// iteratesVariableOf reports whether inner, a for loop, iterates over
// something built from a variable outer binds (`for loader, model in
// zip(loaders, models):` then `for batch in loader:`).
func iteratesVariableOf(f *semantic.File, inner, outer *pyast.Node) bool {
	left, right := outer.Child("left"), inner.Child("right")
	if left == nil || right == nil {
		return false
	}
	bound := map[string]bool{}
	pyast.Walk(left, func(n *pyast.Node) bool {
		if n.Is("identifier") {
			bound[f.Text(n)] = true
		}
		return true
	})
	found := false
	pyast.Walk(right, func(n *pyast.Node) bool {
		found = found || n.Is("identifier") && bound[f.Text(n)] && n.Field() != "attribute"
		return !found
	})
	return found
}

// runsPhase reports whether a nested loop can be a phase that a call after
// it ends: it runs steps, or something in it runs a model, with autograd
// on or off (trl's rollout runs the policy and the reward model over
// micro-batches, under no_grad, before the update's training). Not a loop
// that only zeroes entries or gathers what the step computed: gluonts'
// attack evaluation masks a perturbation's entries in two small loops
// before its per-batch empty_cache().
func runsPhase(f *semantic.File, inner *pyast.Node) bool {
	if f.IsStepLoop(inner) || stridesOverBatches(f, inner) {
		return true
	}
	scope := semantic.Scope(inner)
	for _, c := range f.CallsIn(inner) {
		if !semantic.InScope(c, scope) {
			continue
		}
		if f.IsModelCall(c) {
			return true
		}
		if s := f.SummaryOfCall(c); s != nil && (s.CallsModel || s.Trains) {
			return true
		}
	}
	return false
}

// batchSizeName: what a batch size goes by (`batch_size`,
// `self.eval_batch_size`, `args.mini_batch_size`, `bs`).
var batchSizeName = regexp.MustCompile(`(?i)(^|_)(batch_?size|bs)$`)

// innermostBatchLoop returns the innermost of loops (a call's, innermost
// first) that strides over batches (see stridesOverBatches), or nil.
func innermostBatchLoop(f *semantic.File, loops []*pyast.Node) *pyast.Node {
	for _, l := range loops {
		if stridesOverBatches(f, l) {
			return l
		}
	}
	return nil
}

// stridesOverBatches reports whether loop walks its data a batch at a
// time, `for start in range(0, len(texts), self.batch_size)`, directly,
// through tqdm or enumerate, or through a name its function binds only to
// such ranges (flair's `iterations`, a tqdm of the range or the range
// alone): it runs once a batch whatever its body calls (flair embeds
// each batch with `self.embeddings["dense"].embed(batch)`, which is no
// model call by its name).
func stridesOverBatches(f *semantic.File, loop *pyast.Node) bool {
	if !loop.Is("for_statement") {
		return false
	}
	it := loop.Child("right")
	if it.Is("identifier") && semantic.EnclosingFunction(loop) != nil {
		bound := f.BindingsOf(it)
		if len(bound) == 0 {
			return false
		}
		for _, b := range bound {
			if !batchRange(f, b) {
				return false
			}
		}
		return true
	}
	return batchRange(f, it)
}

// batchRange reports whether e is `range(start, stop, batch_size)`,
// possibly wrapped in tqdm(...) or enumerate(...).
func batchRange(f *semantic.File, e *pyast.Node) bool {
	e, _ = unwrapIterable(f, e)
	if !e.Is("call") || f.Text(e.Child("function")) != "range" {
		return false
	}
	args := e.Child("arguments")
	if args == nil || len(args.NamedChildren()) != 3 {
		return false
	}
	stride := args.NamedChildren()[2]
	return stride.Is("identifier", "attribute") && batchSizeName.MatchString(f.LastName(stride))
}

// offNormalPath reports whether call, inside loop, runs only in an except
// branch or under a step-interval condition (`if step % N == 0`).
func offNormalPath(f *semantic.File, call, loop *pyast.Node) bool {
	for p := call.Parent(); p != nil && p != loop; p = p.Parent() {
		switch p.Kind() {
		case "except_clause", "except_group_clause":
			return true
		case "if_statement", "elif_clause":
			cond := p.Child("condition")
			if cond.Contains(call) {
				continue
			}
			interval := false
			pyast.Walk(cond, func(n *pyast.Node) bool {
				if n.Kind() == "binary_operator" && f.Text(n.Child("operator")) == "%" || firstIteration(f, n, loop) {
					interval = true
				}
				return !interval
			})
			if interval {
				return true
			}
		}
	}
	return false
}

// firstIteration reports whether cond compares the loop's variable with a
// number (`if step == 0:`): the branch runs on one iteration, not on
// every one.
func firstIteration(f *semantic.File, cond, loop *pyast.Node) bool {
	left := loop.Child("left")
	if !cond.Is("comparison_operator") || left == nil || !left.Is("identifier") {
		return false
	}
	operands := cond.NamedChildren()
	if len(operands) != 2 || strings.TrimSpace(string(f.Src[operands[0].End():operands[1].Start()])) != "==" {
		return false
	}
	a, b := operands[0], operands[1]
	return a.Is("identifier") && f.Text(a) == f.Text(left) && b.Is("integer") ||
		b.Is("identifier") && f.Text(b) == f.Text(left) && a.Is("integer")
}

// inLoopBody reports whether call is a statement of loop's body itself,
// not of a block nested in it.
func inLoopBody(call, loop *pyast.Node) bool {
	return call.Parent().Is("expression_statement") && call.Parent().Parent() == loop.Child("body")
}

// callText is how a fix title quotes call: as written, but `f()` when it
// has no arguments, however its parentheses are laid out or commented.
func callText(f *semantic.File, call *pyast.Node) string {
	if args := call.Child("arguments"); args == nil || len(args.NamedChildren()) > 0 {
		return f.Text(call)
	}
	return f.Text(call.Child("function")) + "()"
}

// emptyCacheFixes offers to move the call after loop (when moveAfter), or
// to remove it.
// Both need the call to be a statement alone on its line (a trailing
// comment travels with it).
func emptyCacheFixes(f *semantic.File, call, loop *pyast.Node, moveAfter bool) []analysis.Fix {
	stmt := call.Parent()
	if !stmt.Is("expression_statement") || len(stmt.NamedChildren()) != 1 {
		return nil
	}
	lineStart, lineEnd, next := f.StatementLines(stmt)
	if strings.TrimSpace(string(f.Src[lineStart:stmt.Start()])) != "" {
		return nil
	}
	comment := strings.TrimSpace(string(f.Src[stmt.End():lineEnd]))
	if comment != "" && !strings.HasPrefix(comment, "#") {
		return nil
	}
	name := "`" + callText(f, call) + "`"
	removeFix := analysis.Fix{Title: "Remove " + name, Applicability: analysis.Unsafe, Edits: []analysis.Edit{analysis.RemoveStatement(f, stmt)}}
	// Moving the call out of an if or a try would drop its guard.
	if !inLoopBody(call, loop) || !moveAfter {
		return []analysis.Fix{removeFix}
	}
	// Taking the only statement out of a block would leave it empty.
	remove := analysis.Edit{Start: lineStart, End: next}
	if len(stmt.Parent().NamedChildren()) == 1 {
		remove = analysis.Edit{Start: stmt.Start(), End: stmt.End(), NewText: "pass"}
	}
	eol := f.LineEnding()
	moved := f.IndentAt(loop.Start()) + f.Text(stmt)
	if comment != "" && remove.NewText == "" { // a `pass` keeps the comment in place
		moved += "  " + comment
	}
	insert := analysis.InsertLinesAfter(f, loop.End(), moved+eol)
	return []analysis.Fix{
		{Title: "Move " + name + " after the loop", Applicability: analysis.Unsafe, Edits: []analysis.Edit{remove, insert}},
		removeFix,
	}
}
