package rules

import (
	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/pyast"
)

// GraphTensorAccumulated reports a running total that adds up tensors with
// autograd history across loop iterations.
var GraphTensorAccumulated = &analysis.Rule{
	Code:            "GPU003",
	Name:            "graph-tensor-accumulated",
	Summary:         "A running total adds up losses with their autograd history across iterations",
	DefaultSeverity: analysis.SeverityWarning,
	Fixable:         analysis.FixAlways,
	Doc: analysis.Doc{
		What: "Finds `total += loss` and `total = total + loss` in a loop, where `loss` carries autograd " +
			"history (it comes from a model, a criterion or a loss function), `total` is initialised " +
			"outside the loop, and autograd is on. Gradient accumulation, where the total itself reaches " +
			"`.backward()`, is not reported.",
		Why: "Adding a tensor that requires grad makes the total a tensor with its own `grad_fn`, whose " +
			"graph links the graphs of every iteration so far. Nothing of it can be freed while the total " +
			"lives, so memory grows with every step (the PyTorch FAQ's first example of \"accumulating " +
			"history across your training loop\"). Add `loss.item()` (a float; it waits for the GPU) or " +
			"`loss.detach()` (stays on the device, no wait) instead.",
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
		FixSafety: "Two fixes. The preferred one adds `loss.item()`: unsafe, because the total becomes a " +
			"Python float instead of a tensor (and `.item()` waits for the GPU). Adding `loss.detach()` is " +
			"safe: the total keeps its values, type and device and only loses the graph that nothing " +
			"backpropagates through (totals that reach `.backward()` are not reported). When the total is " +
			"later used as a tensor (`total.item()`, `torch.log(total)`), only `.detach()` is offered.",
	},
	Run: runGraphTensorAccumulated,
}

// accumulation returns the accumulator and the added value of `acc += v`
// or `acc = acc + v`, or nils.
func accumulation(f *analysis.File, a *pyast.Node) (acc, value *pyast.Node) {
	left, right := a.Child("left"), a.Child("right")
	if !left.Is("identifier", "attribute") || right == nil {
		return nil, nil
	}
	if a.Kind == "augmented_assignment" {
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
	for _, a := range f.Assignments {
		acc, value := accumulation(f, a)
		if acc == nil {
			continue
		}
		loops := analysis.EnclosingLoops(a)
		if len(loops) == 0 || f.InNoGrad(a) {
			continue
		}
		scope := analysis.Scope(a)
		name := f.Text(acc)
		if !f.TaintOf(scope).Tainted(value) || resetIn(f, name, loops[0].Child("body"), a) || f.ReachesBackward(name, scope) {
			continue
		}
		fixes := []analysis.Fix{wrapFix(f, "Accumulate", value, "detach()", analysis.Safe)}
		if !usedAsTensor(f, name, scope, false) {
			fixes = append([]analysis.Fix{wrapFix(f, "Accumulate", value, "item()", analysis.Unsafe)}, fixes...)
		}
		pass.Report(analysis.Diagnostic{
			Start: a.Start, End: a.End,
			Fixes: fixes,
			Message: "`" + f.Text(a) + "` adds `" + f.Text(value) + "` with its autograd history: `" + name +
				"` becomes a tensor whose graph links every iteration's graph and keeps them all alive; add `" +
				f.Text(value) + ".item()` or `" + f.Text(value) + ".detach()`",
		})
	}
}

// resetIn reports whether name is assigned in body by a statement other
// than the accumulation itself (then the total lives one iteration).
func resetIn(f *analysis.File, name string, body, stmt *pyast.Node) bool {
	for _, a := range f.AssignmentsIn(body) {
		if a != stmt && a.Kind == "assignment" && f.Text(a.Child("left")) == name {
			if acc, _ := accumulation(f, a); acc == nil {
				return true
			}
		}
	}
	return false
}
