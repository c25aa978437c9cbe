package rules

import (
	"regexp"
	"strings"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/pyast"
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
		What: "Finds loops that call the model after `model.eval()` (or that iterate a loader named " +
			"`val*`, `valid*`, `test*` or `eval*`), never call `.backward()` or `torch.autograd.grad`, and " +
			"are not inside `torch.no_grad()`, `torch.inference_mode()` or `torch.set_grad_enabled(False)` " +
			"- as a `with` block, a decorator on the function, or a decorator on a function of this file " +
			"that calls it.",
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
	Run: runEvalWithoutNoGrad,
}

var evalLoaderName = regexp.MustCompile(`(?i)^(val|valid|validation|test|testing|eval|evaluation)(_.*|loader|dl|ds|set|data|iter|batches)?$`)

func runEvalWithoutNoGrad(pass *analysis.Pass) {
	f := pass.File
	reported := map[*pyast.Node]bool{}
	for _, call := range f.CallsInLoops() {
		if !f.IsModelCall(call) || f.InNoGrad(call) {
			continue
		}
		loops := analysis.EnclosingLoops(call)
		if reported[loops[0]] {
			continue
		}
		loop := loops[0]
		reported[loop] = true
		if !(evalModeBefore(f, loop) || iteratesEvalData(f, loops)) ||
			f.LoopBodyHasBackward(loop) || needsInputGrad(f, loop) || calledUnderNoGrad(f, loop) {
			continue
		}
		end := loop.End
		for _, c := range loop.Children {
			if c.Kind == ":" {
				end = c.End
				break
			}
		}
		pass.Report(analysis.Diagnostic{
			Start: loop.Start, End: end,
			Fixes: noGradFixes(f, loop),
			Message: "This evaluation loop runs the model with autograd on: `eval()` does not disable gradient " +
				"tracking, so every forward pass records a graph and keeps its activations; wrap the loop in " +
				"`with torch.no_grad():` (or `torch.inference_mode()`)",
		})
	}
}

// evalModeBefore reports whether the last `model.eval()`/`model.train()`
// before loop, in the same function, put the model in eval mode.
func evalModeBefore(f *analysis.File, loop *pyast.Node) bool {
	scope := analysis.Scope(loop)
	var last *pyast.Node
	for _, c := range f.CallsIn(scope) {
		if c.End > loop.Start {
			break
		}
		if m := f.MethodName(c); (m == "eval" || m == "train") && analysis.InScope(c, scope) && f.NamesModule(analysis.Receiver(c)) {
			last = c
		}
	}
	if last == nil {
		return false
	}
	return f.MethodName(last) == "eval" || f.Text(f.Arg(last, "mode", 0)) == "False"
}

// iteratesEvalData reports whether one of the loops iterates a loader named
// like validation or test data, through enumerate/tqdm/zip or directly.
func iteratesEvalData(f *analysis.File, loops []*pyast.Node) bool {
	for _, l := range loops {
		it := l.Child("right")
		for it.Is("call") {
			switch fn := f.Text(it.Child("function")); fn {
			case "enumerate", "tqdm", "tqdm.tqdm", "iter", "zip", "list":
				it = f.Arg(it, "", 0)
				continue
			}
			break
		}
		if it.Is("identifier") && evalLoaderName.MatchString(f.Text(it)) ||
			it.Is("attribute") && evalLoaderName.MatchString(f.Text(it.Child("attribute"))) {
			return true
		}
	}
	return false
}

// needsInputGrad reports whether the loop asks for gradients explicitly
// (saliency maps, adversarial examples): requires_grad_() or
// requires_grad=True.
func needsInputGrad(f *analysis.File, loop *pyast.Node) bool {
	found := false
	pyast.Walk(loop.Child("body"), func(n *pyast.Node) bool {
		switch {
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

// calledUnderNoGrad reports whether the function holding loop is called
// somewhere in this file with autograd off.
func calledUnderNoGrad(f *analysis.File, loop *pyast.Node) bool {
	fn := analysis.EnclosingFunction(loop)
	if !fn.Is("function_definition") {
		return false
	}
	name := f.Text(fn.Child("name"))
	for _, c := range f.Calls {
		callee := c.Child("function")
		if (callee.Is("identifier") && f.Text(callee) == name || f.MethodName(c) == name) && f.InNoGrad(c) {
			return true
		}
	}
	return false
}

// noGradFixes wraps loop in `with torch.no_grad():`, indenting it one level
// in the file's own style. It needs `import torch` (under any alias).
func noGradFixes(f *analysis.File, loop *pyast.Node) []analysis.Fix {
	torch := f.TorchName()
	if torch == "" {
		return nil
	}
	// Lines that start inside a multi-line string are the string's content:
	// indenting them would change it.
	var strs []*pyast.Node
	pyast.Walk(loop, func(n *pyast.Node) bool {
		if n.Is("string") && f.Mapper.LineOf(n.Start) != f.Mapper.LineOf(n.End) {
			strs = append(strs, n)
			return false
		}
		return true
	})
	inString := func(off int) bool {
		for _, s := range strs {
			if s.Start < off && off < s.End {
				return true
			}
		}
		return false
	}
	start, _ := f.LineBounds(loop.Start)
	indent, unit, eol := f.IndentAt(loop.Start), f.IndentUnit(), f.LineEnding()
	var b strings.Builder
	b.WriteString(indent + "with " + torch + ".no_grad():" + eol)
	for off := start; off < loop.End; {
		_, next := f.LineBounds(off)
		line := string(f.Src[off:min(next, loop.End)])
		if strings.TrimSpace(line) != "" && !inString(off) {
			b.WriteString(unit)
		}
		b.WriteString(line)
		off = next
	}
	return []analysis.Fix{{
		Title:         "Wrap the loop in `with " + torch + ".no_grad():`",
		Applicability: analysis.Unsafe,
		Edits:         []analysis.Edit{{Start: start, End: loop.End, NewText: b.String()}},
	}}
}
