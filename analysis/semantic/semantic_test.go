package semantic

import (
	"context"
	"strings"
	"testing"

	"github.com/vramlint/vramlint/analysis/pyast"
)

func parse(t *testing.T, src string) *File {
	t.Helper()
	tree, err := pyast.Parse(context.Background(), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return NewFile("t.py", []byte(src), tree)
}

// node returns the first node of kind whose text starts with prefix.
func node(t *testing.T, f *File, kind, prefix string) *pyast.Node {
	t.Helper()
	var found *pyast.Node
	f.Tree.Walk(f.Tree.Root, func(n *pyast.Node) bool {
		if found == nil && n.Kind == kind && strings.HasPrefix(f.Text(n), prefix) {
			found = n
		}
		return found == nil
	})
	if found == nil {
		t.Fatalf("no %s starting with %q", kind, prefix)
	}
	return found
}

const program = `import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.fc = nn.Linear(4, 1)

    def forward(self, h):
        for layer in self.layers:
            h = h + layer(h)
        return self.fc(h)


def train_step(model, batch, opt):
    loss = model(batch).sum()
    loss.backward()
    opt.step()
    return loss.item()


def evaluate(model, data):
    return [model(x) for x in data]


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for batch in train_loader:
    train_step(model, batch, opt)
for step in range(10):
    out = model(torch.randn(2, 4))
for path in paths:
    print(path)
with torch.no_grad():
    evaluate(model, [torch.randn(2, 4)])
`

func TestStepLoops(t *testing.T) {
	f := parse(t, program)
	cases := map[string]StepKind{
		"for layer in self.layers":  NotStepLoop,  // module code
		"for batch in train_loader": TrainingLoop, // trains through train_step
		"for step in range(10)":     ModelLoop,
		"for path in paths":         NotStepLoop,
	}
	for prefix, want := range cases {
		if got := f.StepLoopKind(node(t, f, "for_statement", prefix)); got != want {
			t.Errorf("%s: %v, want %v", prefix, got, want)
		}
	}
}

func TestSummariesAndValues(t *testing.T) {
	f := parse(t, program)
	s := f.SummaryOfCall(node(t, f, "call", "train_step("))
	if s == nil || !s.Trains || !s.RunsModel || s.ReturnsGraph || f.returnsTensor(s.Def, 0) {
		t.Errorf("train_step: %+v", s)
	}
	forward := f.SummaryOfCall(node(t, f, "call", "model(torch.randn"))
	if forward != nil {
		t.Errorf("a model call is not a call of a function of the file: %+v", forward)
	}
	if f.IsModelCall(node(t, f, "call", "Net()")) {
		t.Error("Net() builds a model; it does not run one")
	}
	if f.IsModelCall(node(t, f, "call", "torch.optim.SGD")) {
		t.Error("an optimizer is not a model")
	}
	taint := f.TaintOf(f.Tree.Root)
	out := node(t, f, "call", "model(torch.randn")
	if !taint.Tainted(out) {
		t.Error("a forward pass carries history")
	}
	if !taint.IsTensor(out) {
		t.Error("Net's forward returns self.fc(h), one tensor")
	}
	// evaluate's only caller runs it under no_grad.
	if !f.InNoGrad(node(t, f, "call", "model(x)")) {
		t.Error("a function only called under no_grad runs without autograd")
	}
}

func TestValueKindsForFixes(t *testing.T) {
	f := parse(t, `import torch
import torch.nn as nn

criterion = nn.MSELoss()
lstm = nn.LSTM(4, 4)
x = torch.randn(2, 4)
a = criterion(x, x)
b = torch.split(x, 2)
c = lstm(x)
d = (x,)
e = x.max(dim=0)
g = x.max()
`)
	taint := f.TaintOf(f.Tree.Root)
	for name, want := range map[string]bool{"a": true, "b": false, "c": false, "d": false, "e": false, "g": true} {
		v := node(t, f, "assignment", name+" = ").Child("right")
		if got := taint.IsTensor(v); got != want {
			t.Errorf("%s: IsTensor %v, want %v", f.Text(v), got, want)
		}
	}
}

// A bare name calls a function of the file, never a method that shares
// its name.
func TestBareNamesDoNotResolveToMethods(t *testing.T) {
	f := parse(t, `class Lit:
    def training_step(self, batch):
        return batch


def helper(x):
    return x


training_step(1)
helper(2)
`)
	if s := f.SummaryOfCall(node(t, f, "call", "training_step(1)")); s != nil {
		t.Errorf("training_step(1) resolved to the method %s", f.Text(s.Def.Child("name")))
	}
	if s := f.SummaryOfCall(node(t, f, "call", "helper(2)")); s == nil {
		t.Error("helper(2) does not resolve to the function")
	}
}
