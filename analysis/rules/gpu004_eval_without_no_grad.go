package rules

import (
	"regexp"
	"slices"
	"strings"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/semantic"
)

// EvalWithoutNoGrad reports evaluation loops that run the model with
// autograd on.
var EvalWithoutNoGrad = &analysis.Rule{
	Code:            "GPU004",
	Name:            "eval-without-no-grad",
	Summary:         "An evaluation loop runs the model with autograd on",
	DefaultSeverity: analysis.SeverityWarning,
	Fixable:         analysis.FixSometimes,
	Doc: analysis.Doc{
		What: "Finds loops and comprehensions that run the model (a model call, a conventional " +
			"`validation_step`, or a function of this file that calls the model with autograd on) after " +
			"`model.eval()` (or `self.eval()` in a method of a model class), or that iterate a loader named " +
			"`val*`, `valid*`, `test*` or `eval*` (directly, " +
			"through `enumerate`/`tqdm`/`zip`, or a local name bound to such a wrapper), or that iterate a " +
			"loader, or hand the model the data they iterate, in a function named for evaluation (`evaluate*`, " +
			"`validate*`, `predict*`, `infer*`), or that " +
			"iterate data (a loader, batches, inputs fed to the model; not a loop that only counts: a warm-up or " +
			"a benchmark; not one along a tensor's inner dimension) in a function this file calls with autograd " +
			"on right after an `.eval()` (`model.eval(); " +
			"evaluate(model, test_data)`: the last mode call before the call, in a block holding it, not frozen " +
			"in the same chain by `.requires_grad_(False)`, the call's result not backpropagated; such a call " +
			"counts even when other calls of the function run under no-grad), never call " +
			"`.backward()` or `torch.autograd.grad`, and are not inside `torch.no_grad()`, " +
			"`torch.inference_mode()` or `torch.set_grad_enabled(False)` - as a `with` block, a decorator on " +
			"the function, a project wrapper named `*no_grad`, `*inference_mode` or `eval_mode`, a no-grad " +
			"context imported by its dotted name (`_safe_import(\"torch.no_grad\")`), or a caller: " +
			"a function every call of which in this file runs under no-grad runs without autograd too (a top-level " +
			"function, or a method of a top-level class, also when its calls in the project's other files, at " +
			"least one, run so as their files see them: a method's calls are those of any method of its name, " +
			"`x.name(...)`, leaving out an override's call of the method it overrides and the project's tests; " +
			"a function defined in another one and only called there runs as that one's callers run it), and so " +
			"does the body of a context manager of this file that wraps its `yield` in no-grad. " +
			"A model is a name bound to an nn.Module: constructed, or returned by a function or a method of " +
			"the name's own class in this file that builds it on every return (`self.net = " +
			"self._build_model(dim).to(device)`), or named like one (`model`, `model1`, `encoder`, `netG`). " +
			"A loop that runs no steps (a sampling model's draws, `for _ in range(num_samples)`) inside an " +
			"evaluation loop is judged as that loop, which is reported. " +
			"Loops over configuration constants (`cfg.DATASETS.TEST`), test parameters (`test_cases`, a " +
			"symmetry group's `testing_elements`) or candidate answers (`val_ans_l`, `val_masks`), loops along " +
			"a tensor's inner dimension (`range(0, z.shape[3], stride)`: one input's tiles), loops in a module's " +
			"`forward`, loops that run part of their " +
			"body under no-grad themselves, loops whose model's parameters were frozen " +
			"(`requires_grad = False`, also by a context manager of the file around the loop), loops over " +
			"datasets that call a function named for evaluation which runs the model in a loop of its own " +
			"(that loop is reported), loops that take derivatives (directly or through a function of the file: " +
			"`torch.func` transforms, `torch.autograd.functional`, Jacobians or Hessians; or in the `forward` of " +
			"a model of the file) or read derivatives a model computes (`out[\"forces\"]`, `result[\"grad\"]`, " +
			"`pred.stress` of a value computed in the loop: an interatomic potential), loops that ask for input " +
			"gradients (or run an adversarial attack: its `perturb`, a function named for adversarial examples " +
			"such as `adv_data` or `pgd_attack`, `generate` on an attack object, or a call whose result is " +
			"named like `x_adv`), loops under a grad mode chosen on purpose (`torch.enable_grad()`, " +
			"`torch.set_grad_enabled(flag)`), loops in a function whose result a caller of the file " +
			"backpropagates (PPO's forward pass in eval mode, for no dropout), loops in the `except` clause of a try that ran them under no-grad " +
			"first, loops that run once (their body ends in `break`) and probes of a few inputs outside loops " +
			"over batches or steps are not reported. A function named for another runtime (`predict_onnx`) runs " +
			"no torch model, and neither does a name bound to a model another runtime runs (built by ONNX " +
			"Runtime, OpenVINO, TensorRT, AWS Neuron or TensorFlow, or from a class deriving from one of theirs), a " +
			"parameter annotated with such a class (`CompiledModel`, also as a forward reference: " +
			"`model: \"TRTInference\"`) or with a class of the file or the project " +
			"that derives from no model class (a policy wrapper), or a function named for what it does to a " +
			"model (`accelerator.unwrap_model(model)`, `get_model`, `save_model`) or runs a whole procedure on " +
			"it (`evaluate_model`, `quantize_model`). A call that passes text " +
			"generation arguments (`max_new_tokens`, `num_beams`, `do_sample`, `num_return_sequences`) runs " +
			"generation, which turns autograd off itself, not a forward pass. Layers without parameters " +
			"(activations, dropout, pooling, padding: `nn.Sigmoid()`) and metric modules (`SSIM`, `FIDScore`, " +
			"`*Metric`) are applied as functions, not run as models; a call whose value is fitted at once " +
			"(`model(**args).fit(X, y)`) builds an estimator; a file that imports TensorFlow, Keras, JAX, MLX " +
			"or another framework and nothing of PyTorch's runs no PyTorch model under a model's name, and " +
			"neither does a loop over values another framework made (`for mel in mx.stack(mels)`).",
		Why: "`model.eval()` switches layers such as dropout and batch norm to inference behaviour; it does " +
			"not turn autograd off. Every forward pass still records a graph and keeps the activations " +
			"it needs for a backward pass that never comes. That costs memory (peak usage can be several " +
			"times that of a no-grad pass, and outputs kept for metrics keep their whole graph alive) and " +
			"time. Wrap evaluation in `with torch.no_grad():` or, when the outputs never need autograd " +
			"later, `with torch.inference_mode():`.",
		Example: `import torch

model = torch.nn.Linear(8, 2)
val_batches = [torch.randn(4, 8) for _ in range(10)]
model.eval()
correct = 0
for x in val_batches:
    correct += int((model(x).argmax(1) == 0).sum())`,
		UseInstead: `import torch

model = torch.nn.Linear(8, 2)
val_batches = [torch.randn(4, 8) for _ in range(10)]
model.eval()
correct = 0
with torch.no_grad():
    for x in val_batches:
        correct += int((model(x).argmax(1) == 0).sum())`,
		FixSafety: "The fix wraps the loop in `with torch.no_grad():`, re-indented in the file's style " +
			"(multi-line strings are left as they are). It is unsafe: code in the loop that needs gradients " +
			"after all, or outputs later used in a backward pass, would stop working.",
	},
	Run:   runEvalWithoutNoGrad,
	Local: true,
}

func runEvalWithoutNoGrad(pass *analysis.Pass) {
	f := pass.File
	modes := modeCalls{}
	// What marks each loop as evaluation, asked once per loop and before
	// the dearer question whether a call in it runs the model: most loops
	// have no sign.
	signs := map[*pyast.Node]evalSigns{}
	reported := map[*pyast.Node]bool{}
	signsOf := func(loop *pyast.Node) evalSigns {
		sign, known := signs[loop]
		if !known {
			sign = evalSignsOf(f, modes, loop)
			if !sign.any() {
				// The dearest sign last, once per function: a caller of the
				// file that puts a model in eval mode and calls it with
				// autograd on.
				sign.caller = f.CalledAfterEvalWithGrad(loop)
			}
			signs[loop] = sign
		}
		return sign
	}
	pass.EachCandidateLoopCall(func(lc semantic.LoopCall) {
		call, loop := lc.Call, lc.Loop
		if reported[loop] {
			return
		}
		sign := signsOf(loop)
		if !sign.any() || !runsModel(f, call) || f.InNoGrad(call) {
			return
		}
		reported[loop] = true
		if !evaluates(f, loop, sign) {
			// A loop of no steps (draws of a sampling model, a batch's
			// items) inside the evaluation loop: that one is to report
			// (merlion's VAE reconstructs each batch num_eval_samples
			// times). Judged with its own signs, once.
			loop = outerEvaluationLoop(f, loop)
			if loop == nil || reported[loop] {
				return
			}
			reported[loop] = true
			if sign = signsOf(loop); !sign.any() || !evaluates(f, loop, sign) {
				return
			}
		}
		if f.CalledUnderNoGradAcrossFiles(loop) {
			return // the cross-file question last: it may read the project's other files
		}
		end := loop.End()
		for c := range loop.Children() {
			if c.Kind() == ":" {
				end = c.End()
				break
			}
		}
		var fixes []analysis.Fix
		if loop.Is("for_statement", "while_statement") {
			fixes = noGradFixes(f, loop)
		}
		pass.Report(analysis.Diagnostic{
			Start: loop.Start(), End: end,
			Fixes:   fixes,
			Message: "Evaluation loop runs the model with autograd on; wrap it in `with torch.no_grad():`",
			Detail: "`eval()` does not disable gradient tracking, so every forward pass records a graph and keeps " +
				"its activations. `torch.no_grad()` (or `torch.inference_mode()`) turns it off.",
		})
	})
}

// outerEvaluationLoop returns the loop of statements around loop, in its
// function, when loop runs no steps (a comprehension, or a loop that is no
// step loop) and that one may: the candidate to report instead. Nil
// otherwise.
func outerEvaluationLoop(f *semantic.File, loop *pyast.Node) *pyast.Node {
	if loop.Is("for_statement", "while_statement") && f.StepLoopKind(loop) != semantic.NotStepLoop {
		return nil
	}
	outer := semantic.EnclosingLoops(loop)
	if len(outer) == 0 {
		return nil
	}
	return outer[0]
}

// evalSigns are what marks a loop (or comprehension) as evaluation.
type evalSigns struct {
	data   bool // it iterates a loader named like validation or test data
	mode   bool // the model was put in eval mode before it
	named  bool // its function is named for evaluation or prediction
	caller bool // a caller puts a model in eval mode and calls its function with autograd on
}

func (s evalSigns) any() bool { return s.data || s.mode || s.named || s.caller }

// evalSignsOf finds a loop's signs; a loop already under no-grad has none
// worth looking at (every call in it runs so).
func evalSignsOf(f *semantic.File, modes modeCalls, loop *pyast.Node) evalSigns {
	s := evalSigns{
		mode:  modes.evalBefore(f, loop),
		named: inEvalFunction(f, loop),
		data:  iteratesEvalData(f, loopIterables(loop)),
	}
	if s.any() && f.InNoGrad(loop) { // the cheap signs first: most loops have none
		return evalSigns{}
	}
	return s
}

// evaluates reports whether a loop with signs, one of whose calls runs the
// model with autograd on, is an evaluation loop: over validation or test
// data; over batches or steps after eval(); over a loader in a function
// named for evaluation. Not a loop that trains (here or in a function it
// calls), runs once, probes a few inputs, works with frozen or
// input-gradient-tracking models, or whose function is called under
// no-grad somewhere in the file.
func evaluates(f *semantic.File, loop *pyast.Node, sign evalSigns) bool {
	kind := semantic.NotStepLoop
	if loop.Is("for_statement", "while_statement") {
		kind = f.StepLoopKind(loop)
	}
	switch {
	case kind == semantic.TrainingLoop, kind == semantic.RunLoop, f.InForward(loop), semantic.RunsOnce(loop),
		frozenBefore(f, loop), f.LoopBodyHasBackward(loop), noGradInside(f, loop), needsInputGrad(f, loop),
		differentiates(f, loop), readsDerivatives(f, loop), gradModeChosen(f, loop),
		fallbackOfNoGrad(f, loop), returnsLoopGraphs(f, loop) && f.FeedsTraining(loop),
		loop.Is("for_statement") && f.MadeByOtherFramework(loop.Child("right")):
		return false
	case calledUnderNoGrad(f, loop) && !f.CalledAfterEvalWithGrad(loop):
		// Some call of the function runs under no-grad: the others are
		// taken to be the same evaluation, unless one of them follows an
		// eval() with autograd on.
		return false
	case sign.data:
		return true
	case sign.mode:
		return kind != semantic.NotStepLoop
	}
	if kind == semantic.LoaderLoop && sign.named {
		return true
	}
	// A function's name, or a caller's eval(), says less than the
	// function's own eval(): a step loop there must hand the model data it
	// iterates (batches, items, inputs); one that only counts is a
	// benchmark or a warm-up.
	return kind != semantic.NotStepLoop && (sign.named || sign.caller || f.CalledAfterEvalWithGrad(loop)) && f.IteratesData(loop)
}

// returnsLoopGraphs reports whether loop stores values that carry history
// in a container its function returns (a batched forward helper's
// outputs), for the callers to decide what becomes of them.
func returnsLoopGraphs(f *semantic.File, loop *pyast.Node) bool {
	scope := semantic.Scope(loop)
	stores := append(f.CallsIn(loop), f.AssignmentsIn(loop)...)
	return slices.ContainsFunc(stores, func(stmt *pyast.Node) bool {
		// Whether the container is returned first: a lookup (never, for
		// module code), where the value's taint is dear to ask.
		value, container := storedValue(f, stmt)
		return value != nil && semantic.InScope(stmt, scope) && returned(f, f.Text(container), scope) && f.TaintOf(scope).Tainted(value)
	})
}

// evalFunctionName: evaluate, validate, predict, infer and the like (not
// test_*, which is how pytest names tests).
var evalFunctionName = regexp.MustCompile(`(?i)^_*(evaluate|evaluation|eval|validate|validation|valid|predict|inference|infer)(_|$)`)

// inEvalFunction reports whether loop is in a function named for
// evaluation or prediction.
func inEvalFunction(f *semantic.File, loop *pyast.Node) bool {
	fn := semantic.EnclosingFunction(loop)
	return fn.Is("function_definition") && evalFunctionName.MatchString(f.Text(fn.Child("name")))
}

// loopIterables returns what loop (a for/while statement or a
// comprehension) and the loops around it in its function iterate.
func loopIterables(loop *pyast.Node) []*pyast.Node {
	var out []*pyast.Node
	for p := loop; p != nil && !p.Is("function_definition", "lambda", "class_definition"); p = p.Parent() {
		switch p.Kind() {
		case "for_statement":
			out = append(out, p.Child("right"))
		case "list_comprehension", "generator_expression", "set_comprehension", "dictionary_comprehension":
			for _, c := range p.NamedChildren() {
				if c.Is("for_in_clause") {
					out = append(out, c.Child("right"))
				}
			}
		}
	}
	return out
}

// runsModel reports whether call runs a model: `model(x)`, a conventional
// step method (`model.validation_step(b)`), or a function of this file
// that calls the model with autograd on. Not a function named for another
// runtime (`self.predict_onnx(x)`): its model is an exported graph that
// records nothing.
func runsModel(f *semantic.File, call *pyast.Node) bool {
	if namedForOtherRuntime(f.LastName(call.Child("function"))) {
		return false
	}
	if f.IsModelCall(call) {
		return true
	}
	if s := f.SummaryOfCall(call); s != nil {
		// A function named for evaluation that runs the model in a loop of
		// its own is the evaluation loop, reported there: the loop calling
		// it goes over datasets (`for loader in self.evalloaders:`).
		name := f.LastName(call.Child("function"))
		if s.Def != nil {
			name = f.Text(s.Def.Child("name"))
		}
		return s.RunsModel && !(s.RunsModelInLoop && evalFunctionName.MatchString(name))
	}
	return semantic.ConventionalStepCall(f, call)
}

// frozenBefore reports whether, before loop in its function, the code
// turns gradients off for parameters (`p.requires_grad = False`,
// `model.requires_grad_(False)`), or the loop runs in a context manager of
// the project that does (`with frozen(model):`): then the forward records
// no graph of the weights, and what autograd still does is asked for
// (forces as gradients of an energy). Only the scope's own code counts:
// for a loop at module level, AssignmentsIn and CallsIn give the
// functions' too.
func frozenBefore(f *semantic.File, loop *pyast.Node) bool {
	scope := semantic.Scope(loop)
	// Where the scope's code first freezes parameters, found once per
	// scope: at module level the scope is the whole file, and every loop
	// asks.
	firstFreeze := semantic.OfVersion(f, "first freezes parameters", scope, func() int {
		first := -1
		for _, n := range append(f.AssignmentsIn(scope), f.CallsIn(scope)...) {
			// The syntax first: whether a node is in scope walks up to its
			// function, and at module level every node of the file is asked.
			if (first < 0 || n.Start() < first) && semantic.FreezesParameters(f, n) && semantic.InScope(n, scope) {
				first = n.Start()
			}
		}
		return first
	})
	if firstFreeze >= 0 && firstFreeze < loop.Start() {
		return true
	}
	for p := loop.Parent(); p != nil && p != scope; p = p.Parent() {
		if !p.Is("with_statement") || !p.Child("body").Contains(loop) {
			continue
		}
		for _, item := range p.ChildOfKind("with_clause").NamedChildren() {
			v := item.Child("value")
			if v.Is("as_pattern") && v.FirstNamed() != nil {
				v = v.FirstNamed()
			}
			if !v.Is("call") {
				continue
			}
			if s := f.SummaryOfCall(v); s != nil && s.FreezesParameters {
				return true
			}
		}
	}
	return false
}

// modeCalls are the `x.eval()` and `x.train()` calls on models of each
// scope, in source order, found when a loop of the scope asks.
type modeCalls map[*pyast.Node][]*pyast.Node

// in returns scope's own mode calls.
func (m modeCalls) in(f *semantic.File, scope *pyast.Node) []*pyast.Node {
	if calls, ok := m[scope]; ok {
		return calls
	}
	var calls []*pyast.Node
	for _, c := range f.CallsNamedWithin(scope, "eval", "train") {
		if name := f.MethodName(c); (name == "eval" || name == "train") && semantic.InScope(c, scope) &&
			(f.IsModelSelf(semantic.Receiver(c)) || f.NamesModule(semantic.Receiver(c))) {
			calls = append(calls, c)
		}
	}
	m[scope] = calls
	return calls
}

// evalBefore reports whether the last `model.eval()`/`model.train()`
// before loop, in the same function, put the model in eval mode.
func (m modeCalls) evalBefore(f *semantic.File, loop *pyast.Node) bool {
	var last *pyast.Node
	for _, c := range m.in(f, semantic.Scope(loop)) {
		if c.End() > loop.Start() {
			break
		}
		last = c
	}
	if last == nil {
		return false
	}
	return f.MethodName(last) == "eval" || f.Text(f.Arg(last, "mode", 0)) == "False"
}

// iteratesEvalData reports whether one of the iterables is a loader named
// like validation or test data (see semantic.File.IsEvalLoader).
func iteratesEvalData(f *semantic.File, iterables []*pyast.Node) bool {
	for _, it := range iterables {
		if f.IsEvalLoader(it) {
			return true
		}
	}
	return false
}

// needsInputGrad reports whether the loop asks for gradients explicitly
// (saliency maps, adversarial examples): requires_grad_() or
// requires_grad=True, or an adversarial attack's `perturb` or `attack`
// (advertorch's and ART's attacks differentiate the model inside).
func needsInputGrad(f *semantic.File, loop *pyast.Node) bool {
	found := false
	pyast.Walk(loop.Child("body"), func(n *pyast.Node) bool {
		switch {
		case n.Is("call") && attacks(f, n):
			found = true
		case n.Is("assignment") && n.Child("right").Is("call") && namesAdversarial(f, n.Child("left")):
			// `x_adv = attacker.generate(x, y)`, `data_adv, out_adv =
			// self.adv_data(x, y)`: deeprobust's and ART's attacks.
			found = true
		case n.Is("call") && f.MethodName(n) == "requires_grad_":
			found = true
		case n.Is("keyword_argument") && f.Text(n.Child("name")) == "requires_grad" && f.Text(n.Child("value")) == "True":
			found = true
		case n.Is("assignment") && n.Child("left").Is("attribute") && f.Text(n.Child("left").Child("attribute")) == "requires_grad":
			found = true
		}
		return !found
	})
	return found
}

// differentiates reports whether the loop takes derivatives, itself or
// through a function it calls (Jacobians for a Laplace approximation,
// forces as gradients of an energy): its forward passes need autograd.
func differentiates(f *semantic.File, loop *pyast.Node) bool {
	body := loop.Child("body")
	if body == nil {
		return false
	}
	scope := semantic.Scope(loop)
	for _, c := range f.CallsIn(body) {
		if !semantic.InScope(c, scope) {
			continue
		}
		if differentiatingCall(f, c, 1) {
			return true
		}
	}
	return false
}

// derivativeKey names the outputs a model computes as derivatives of its
// own output: an interatomic potential's forces and stress (gradients of
// the energy by positions and cell), gradients, Hessians.
var derivativeKey = regexp.MustCompile(`(?i)^(forces?|stress(es)?|virials?|grads?|gradients?|hessians?|jacobians?)$`)

// readsDerivatives reports whether the loop reads such an output of a value
// it computes (`out["forces"]`, `result["grad"]`, `pred.stress`): the
// model takes derivatives in its forward, which needs autograd, in a class
// of another file or one loaded from a checkpoint.
func readsDerivatives(f *semantic.File, loop *pyast.Node) bool {
	body := loop.Child("body")
	if body == nil {
		return false
	}
	found := false
	pyast.Walk(body, func(n *pyast.Node) bool {
		var obj *pyast.Node
		switch {
		case found || n.Is("function_definition", "lambda", "class_definition"):
			return false
		case n.Is("subscript"):
			if key := n.Child("subscript"); key.Is("string") && derivativeKey.MatchString(strings.Trim(f.Text(key), `"'`)) {
				obj = n.Child("value")
			}
		case n.Is("attribute") && f.Text(n.Child("attribute")) != "grad":
			// `.grad` of a tensor is what a backward pass filled.
			if derivativeKey.MatchString(f.Text(n.Child("attribute"))) {
				obj = n.Child("object")
			}
		}
		found = obj.Is("identifier") && f.AssignedIn(f.Text(obj), body)
		return !found
	})
	return found
}

// differentiatingCall reports whether call takes derivatives: itself, in
// a function of the file it calls, or in the forward of a model of a class
// of the file (forces as gradients of an energy, gradient matching); and,
// depth levels down, in what those call.
func differentiatingCall(f *semantic.File, call *pyast.Node, depth int) bool {
	if semantic.Differentiates(f, call) {
		return true
	}
	s := f.SummaryOfCall(call)
	if s == nil {
		s = f.ForwardSummaryOfCall(call)
	}
	switch {
	case s == nil:
		return false
	case s.Differentiates:
		return true
	case depth == 0 || s.Def == nil:
		return false
	}
	for _, c := range f.CallsIn(s.Def) {
		if semantic.InScope(c, s.Def) && differentiatingCall(f, c, depth-1) {
			return true
		}
	}
	return false
}

// otherRuntimes are the words, between underscores in a function's name,
// that name another runtime for an exported model: ONNX Runtime, TensorRT,
// OpenVINO, TensorFlow Lite.
var otherRuntimes = [...]string{"onnx", "ort", "tensorrt", "trt", "openvino", "tflite"}

// namedForOtherRuntime reports whether one of the words of name, split at
// underscores, names another runtime in any case (`predict_onnx`,
// `TRT_infer`). Hand-written rather than a regular expression: it runs
// for every call in every loop of a script on every version.
func namedForOtherRuntime(name string) bool {
	for word := range strings.SplitSeq(name, "_") {
		for _, runtime := range otherRuntimes {
			if strings.EqualFold(word, runtime) {
				return true
			}
		}
	}
	return false
}

// gradModeChosen reports whether the loop runs under a grad mode its
// author chose: `torch.enable_grad()`, or `torch.set_grad_enabled(flag)`
// with anything but a literal False (neuromancer's
// `set_grad_enabled(self.model.grad_inference)` for models that take
// gradients at inference), as a `with` around it or a decorator on its
// function.
func gradModeChosen(f *semantic.File, loop *pyast.Node) bool {
	chosen := func(e *pyast.Node) bool {
		if e.Is("as_pattern") && e.FirstNamed() != nil {
			e = e.FirstNamed()
		}
		target := e
		if e.Is("call") {
			target = e.Child("function")
		}
		switch f.QualifiedName(target) {
		case "torch.enable_grad", "torch.autograd.enable_grad":
			return true
		case "torch.set_grad_enabled", "torch.autograd.set_grad_enabled":
			return e.Is("call") && !f.Arg(e, "mode", 0).Is("false")
		}
		return false
	}
	for p := loop.Parent(); p != nil; p = p.Parent() {
		switch {
		case p.Is("with_statement") && p.Child("body").Contains(loop):
			for _, item := range p.ChildOfKind("with_clause").NamedChildren() {
				if chosen(item.Child("value")) {
					return true
				}
			}
		case p.Is("function_definition"):
			for _, d := range semantic.DecoratorsOf(p) {
				if chosen(d) {
					return true
				}
			}
			return false
		case p.Is("class_definition", "lambda"):
			return false
		}
	}
	return false
}

// fallbackOfNoGrad reports whether the loop runs in an `except` clause of
// a try whose body turns autograd off (`try: with torch.no_grad(): ...`
// `except RuntimeError: <the same loop, detaching>`, as pythae's samplers
// do for models whose forward needs autograd): the no-grad way was tried
// first, and the handler runs with autograd because it must.
func fallbackOfNoGrad(f *semantic.File, loop *pyast.Node) bool {
	for p := loop.Parent(); p != nil && !p.Is("function_definition", "class_definition", "lambda"); p = p.Parent() {
		if !p.Is("except_clause") || p.Parent() == nil || !p.Parent().Is("try_statement") {
			continue
		}
		if noGradWithIn(f, p.Parent().Child("body")) {
			return true
		}
	}
	return false
}

// attackName: the methods adversarial attacks run (advertorch's
// perturb, torchattacks' and foolbox's attack, ART's generate on an
// attack object is too common a name to count).
var attackName = regexp.MustCompile(`^(perturb|attack|run_attack|adversarial_attack)$`)

// attacks reports whether call runs an adversarial attack: a method named
// like one (attackName), a function named for adversarial examples
// (`adv_data`, `pgd_attack`, `fgsm`), or `generate` on an object named
// for an attack (`attack.generate(x)`, `adversary.generate(x)`).
func attacks(f *semantic.File, call *pyast.Node) bool {
	name := f.LastName(call.Child("function"))
	if attackName.MatchString(name) {
		return true
	}
	// A model named for an attack runs forward only: ART's
	// `self.attack_model(x)` is the classifier of a membership inference.
	// Nor does a loss named so (a GAN's `adversarial_loss`).
	if hasWord(name, adversarialFunctionWord) && !hasWord(name, lossWord) && !f.IsModelCall(call) {
		return true
	}
	if name != "generate" {
		return false
	}
	recv := semantic.Receiver(call)
	return recv.Is("identifier", "attribute") && adversaryObject.MatchString(f.LastName(recv))
}

// adversarialFunctionWord: words of function names that make adversarial
// examples. Not `adv` alone in other names: reinforcement learning calls
// its advantages so.
var adversarialFunctionWord = regexp.MustCompile(`(?i)^(adv|adversarial|attack|pgd|fgsm|fgm|cw|deepfool)$`)

// lossWord: words of the names of losses and their weights.
var lossWord = regexp.MustCompile(`(?i)^(loss|losses|criterion|weight|weights|coef|lambda)$`)

// adversaryObject: names of attack objects (`attack`, `attacker`,
// `adversary`, `attackmethod`, `self.pgd`).
var adversaryObject = regexp.MustCompile(`(?i)^_*(attack|attacker|adversary|adversarial|pgd|fgsm)`)

// A name holds an adversarial example when one of its words says
// adversarial and another what it is (`x_adv`, `adv_example`,
// `images_adv`, `output_adv`; not a GAN's `adversarial_loss`).
var (
	advWord     = regexp.MustCompile(`(?i)^(adv|adversarial|perturbed)$`)
	exampleWord = regexp.MustCompile(`(?i)^(x|xs|data|example|examples|img|imgs|image|images|input|inputs|sample|samples|batch|output|outputs|logits|pred|preds)$`)
)

// namesAdversarial reports whether an assignment's targets (names,
// attributes, unpacked tuples of them) name an adversarial example.
func namesAdversarial(f *semantic.File, left *pyast.Node) bool {
	found := false
	pyast.Walk(left, func(n *pyast.Node) bool {
		if found || n.Is("subscript", "call") {
			return false
		}
		if n.Is("identifier", "attribute") {
			name := f.LastName(n)
			found = hasWord(name, advWord) && hasWord(name, exampleWord)
			return false
		}
		return true
	})
	return found
}

// hasWord reports whether one of the underscore-separated words of name
// matches word.
func hasWord(name string, word *regexp.Regexp) bool {
	for w := range strings.SplitSeq(name, "_") {
		if word.MatchString(w) {
			return true
		}
	}
	return false
}

// noGradInside reports whether the loop turns autograd off for part of its
// body (`with torch.no_grad(): pred = model(x)`): its author chose what
// runs without autograd, and what runs outside (a metric, a loss on
// detached outputs) runs there on purpose.
func noGradInside(f *semantic.File, loop *pyast.Node) bool {
	return noGradWithIn(f, loop.Child("body"))
}

// noGradWithIn reports whether block holds a no-grad `with` statement, not
// counting nested functions and classes.
func noGradWithIn(f *semantic.File, block *pyast.Node) bool {
	found := false
	pyast.Walk(block, func(n *pyast.Node) bool {
		switch {
		case found || n.Is("function_definition", "lambda", "class_definition"):
			return false
		case n.Is("with_statement"):
			for _, item := range n.ChildOfKind("with_clause").NamedChildren() {
				if f.IsNoGradContext(item.Child("value")) {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// calledUnderNoGrad reports whether the function holding loop is called
// somewhere in this file with autograd off.
func calledUnderNoGrad(f *semantic.File, loop *pyast.Node) bool {
	fn := semantic.EnclosingFunction(loop)
	if !fn.Is("function_definition") {
		return false
	}
	name := f.Text(fn.Child("name"))
	for _, c := range f.CallsNamed(name) {
		callee := c.Child("function")
		if (callee.Is("identifier") && f.Text(callee) == name || f.MethodName(c) == name) && f.InNoGrad(c) {
			return true
		}
	}
	return false
}

// noGradFixes wraps loop in `with torch.no_grad():`, indenting it one level
// in the file's own style. It needs `import torch` (under any alias).
func noGradFixes(f *semantic.File, loop *pyast.Node) []analysis.Fix {
	if f.TorchName() == "" {
		return nil
	}
	// A file that imports torch only in the functions that use it (an
	// optional dependency) gets the import where the loop runs.
	torch, importIt := f.TorchNameAt(loop), false
	if torch == "" {
		torch, importIt = "torch", true
	}
	// Lines that start inside a multi-line string are the string's content:
	// indenting them would change it.
	var strs []*pyast.Node
	pyast.Walk(loop, func(n *pyast.Node) bool {
		if n.Is("string") && f.Mapper.LineOf(n.Start()) != f.Mapper.LineOf(n.End()) {
			strs = append(strs, n)
			return false
		}
		return true
	})
	inString := func(off int) bool {
		for _, s := range strs {
			if s.Start() < off && off < s.End() {
				return true
			}
		}
		return false
	}
	start, _ := f.LineBounds(loop.Start())
	indent, unit, eol := f.IndentAt(loop.Start()), f.IndentUnit(), f.LineEnding()
	var b strings.Builder
	title := "Wrap the loop in `with " + torch + ".no_grad():`"
	if importIt {
		b.WriteString(indent + "import torch" + eol)
		title = "Import torch and wrap the loop in `with torch.no_grad():`"
	}
	b.WriteString(indent + "with " + torch + ".no_grad():" + eol)
	for off := start; off < loop.End(); {
		_, next := f.LineBounds(off)
		line := string(f.Src[off:min(next, loop.End())])
		if strings.TrimSpace(line) != "" && !inString(off) {
			b.WriteString(unit)
		}
		b.WriteString(line)
		off = next
	}
	return []analysis.Fix{{
		Title:         title,
		Applicability: analysis.Unsafe,
		Edits:         []analysis.Edit{{Start: start, End: loop.End(), NewText: b.String()}},
	}}
}
