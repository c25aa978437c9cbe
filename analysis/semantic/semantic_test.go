package semantic

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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
		if found == nil && n.Kind() == kind && strings.HasPrefix(f.Text(n), prefix) {
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
	var read []string
	if !taint.IsTensor(out, func(def *pyast.Node) { read = append(read, f.Text(def.Child("name"))) }) || !slices.Equal(read, []string{"forward"}) {
		t.Errorf("Net's forward returns self.fc(h), one tensor, read there: read %q", read)
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


def scaled(v):
    return torch.ones(2) * 2


h = scaled(x)
k = h
`)
	taint := f.TaintOf(f.Tree.Root)
	// The second: what scaled returns was read (h's value calls it, k's
	// name is bound to that call).
	for name, want := range map[string][2]bool{
		"a": {true, false}, "b": {false, false}, "c": {false, false}, "d": {false, false}, "e": {false, false},
		"g": {true, false}, "h": {true, true}, "k": {true, true},
	} {
		v := node(t, f, "assignment", name+" = ").Child("right")
		readScaled := false
		tensor := taint.IsTensor(v, func(def *pyast.Node) { readScaled = readScaled || f.Text(def.Child("name")) == "scaled" })
		if tensor != want[0] || readScaled != want[1] {
			t.Errorf("%s: IsTensor %v reading scaled %v, want %v", f.Text(v), tensor, readScaled, want)
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

// use returns the last identifier name in the function fn.
func use(t *testing.T, f *File, fn, name string) *pyast.Node {
	t.Helper()
	var def, found *pyast.Node
	f.Tree.Walk(f.Tree.Root, func(n *pyast.Node) bool {
		if def == nil && n.Kind() == "function_definition" && f.Text(n.Child("name")) == fn {
			def = n
		}
		return def == nil
	})
	if def == nil {
		t.Fatalf("no function %s", fn)
	}
	f.Tree.Walk(def.Child("body"), func(n *pyast.Node) bool {
		if n.Kind() == "identifier" && f.Text(n) == name {
			found = n
		}
		return true
	})
	if found == nil {
		t.Fatalf("no %s in %s", name, fn)
	}
	return found
}

// A name assigned in a function is the function's own, as in Python; other
// functions, and the module, do not see its values.
func TestNamesAreScopedAsInPython(t *testing.T) {
	f := parse(t, `import torch
import torch.nn as nn

crit = nn.MSELoss()


def a(x):
    lyr = nn.Linear(2, 2)
    return lyr(x)


def b(x):
    lyr = make()
    return lyr(x)


def c(lyr, x):
    return lyr(x)


def d(x):
    global crit
    crit = None
    return crit(x)


def outer(x):
    dev = "cpu"

    def inner():
        return x.to(dev)

    def inner2():
        nonlocal dev
        dev = "cuda"

    return inner


net = nn.Linear(4, 4)


def e(net, x):
    return net(x)


def g(*net):
    def h(x):
        return net(x)

    return h


def k(x, scale=net):
    return net(x) * scale
`)
	texts := func(nodes []*pyast.Node) string {
		var out []string
		for _, n := range nodes {
			out = append(out, f.Text(n))
		}
		return strings.Join(out, ", ")
	}
	for _, tc := range []struct{ fn, name, want string }{
		{"a", "lyr", "nn.Linear(2, 2)"},
		{"b", "lyr", "make()"},
		{"c", "lyr", ""},                    // a parameter it never assigns: its caller's, unknown
		{"e", "net", ""},                    // a parameter, though the module binds the name
		{"h", "net", ""},                    // the enclosing function's parameter
		{"k", "net", "nn.Linear(4, 4)"},     // the module's: only a default value reads it
		{"d", "crit", "nn.MSELoss(), None"}, // declared global: the module's, its own assignment included
		{"inner", "dev", `"cpu", "cuda"`},   // the enclosing function's, nonlocal assignment included
	} {
		if got := texts(f.BindingsOf(use(t, f, tc.fn, tc.name))); got != tc.want {
			t.Errorf("%s in %s() is bound to [%s], want [%s]", tc.name, tc.fn, got, tc.want)
		}
	}
	if got := texts(f.Bindings("lyr")); got != "" {
		t.Errorf("the module's lyr is bound to [%s], want none", got)
	}
	if !f.NamesModule(use(t, f, "a", "lyr")) || f.NamesModule(use(t, f, "b", "lyr")) {
		t.Error("a's lyr is an nn.Linear, and b's is not known to be a module")
	}
	ka, kb := f.NameKey(use(t, f, "a", "lyr")), f.NameKey(use(t, f, "b", "lyr"))
	if ka == kb || ka == "lyr" || !isLocalKey(ka) {
		t.Errorf("keys of a's and b's lyr: %q and %q", ka, kb)
	}
	if k := f.NameKey(use(t, f, "d", "crit")); k != "crit" {
		t.Errorf("key of a global: %q", k)
	}
	for _, fn := range []string{"e", "h"} {
		if k := f.NameKey(use(t, f, fn, "net")); !isLocalKey(k) || !f.LocalName(use(t, f, fn, "net")) {
			t.Errorf("key of the parameter net in %s(): %q, want its function's own", fn, k)
		}
	}
}

// typedTrainer is a function typed up to an open `len(` inside an open
// `{`, and poseDataset a class after it.
const (
	typedTrainer = `def train_typed(model, loader):
    losses = []
    for x, y in loader:
        out = model(x)
        losses.append(out.sum())
    history = {
        "losses": [l.item() for l in losses],
        "accuracy": 1 / max(1, len(`
	poseDataset = `class PoseDataset(Dataset):
    def __init__(self, root):
        self.root = root
`
)

// What module-level code that does not parse assigns is its own. Typing
// the last lines of a function, `len(` inside an open `{` takes in the
// class after it, and the parser reads the whole function as module-level
// code in a syntax error: its names must not become the module's (every
// function reading a name so named would be analysed again on each such
// keystroke).
func TestNamesAssignedInBrokenCodeAreItsOwn(t *testing.T) {
	f := parse(t, "import torch\n\n\n"+typedTrainer+"\n"+poseDataset)
	if !f.Tree.HasError() {
		t.Fatal("the test needs a syntax error")
	}
	for _, name := range []string{"losses", "out"} {
		if got := len(f.Bindings(name)); got != 0 {
			t.Errorf("the module's %s has %d values, want none", name, got)
		}
	}
}

// Module-level code in a syntax error is a scope of its own: what is said
// of its names reads it alone. Typing the last lines of a function whose
// header the parser no longer sees, its body is module-level code, and
// the rules read the whole module for each of its statements on every
// keystroke (ten times a keystroke's cost in a function at 10,000 lines).
func TestBrokenCodeIsItsOwnScope(t *testing.T) {
	// Typed key by key before the class, as an editor sends it: the
	// statements around each edit are parsed alone (see pyast.Editor).
	b := newBuffer(t, "import torch\n\n\n"+poseDataset)
	for _, r := range typedTrainer + "loader.dataset" {
		b.replace("\nclass", string(r)+"\nclass")
	}
	f := b.f
	var appended *pyast.Node
	f.Tree.Walk(f.Tree.Root, func(n *pyast.Node) bool {
		if n.Kind() == "call" && f.MethodName(n) == "append" {
			appended = n
		}
		return true
	})
	if appended == nil {
		t.Fatal("losses.append not found")
	}
	if EnclosingFunction(appended) != nil {
		t.Fatal("the test needs the function's body read as module-level code")
	}
	scope := Scope(appended)
	if scope.Kind() != "ERROR" || scope == f.Tree.Root {
		t.Fatalf("the scope of the broken code is the %s node, want the syntax error holding it", scope.Kind())
	}
	// The taint in it still follows the loop.
	if !f.TaintOf(scope).Tainted(f.Arg(appended, "", 0)) {
		t.Error("out.sum() in the broken loop should carry autograd history")
	}
	if Scope(f.Tree.Statements[0]) != f.Tree.Root {
		t.Error("the import's scope should be the module")
	}
}

// An attribute on self is the instance's: one class's self.device is not
// another's, unless one derives from the other.
func TestAttributesAreTheirClasssOwn(t *testing.T) {
	f := parse(t, `import torch


class Frames:
    def __init__(self):
        self.device = "cpu"

    def get(self, x):
        return x.to(self.device)


class Trainer:
    def __init__(self):
        self.device = torch.device("cuda")

    def step(self, x):
        return x.to(self.device)


class Derived(Trainer):
    def step(self, x):
        return x.to(self.device)


def helper(self, x):
    return x.to(self.device)
`)
	attribute := func(fn string) *pyast.Node {
		t.Helper()
		return use(t, f, fn, "self").Parent()
	}
	for _, tc := range []struct {
		fn     string
		device bool
	}{{"get", false}, {"step", true}, {"helper", true}} {
		if got := f.IsDeviceExpr(attribute(tc.fn)); got != tc.device {
			t.Errorf("self.device in %s(): a CUDA device %v, want %v", tc.fn, got, tc.device)
		}
	}
	var derived *pyast.Node
	f.Tree.Walk(f.Tree.Root, func(n *pyast.Node) bool {
		if n.Kind() == "attribute" && f.Text(n) == "self.device" && n.Ancestor("class_definition") != nil &&
			f.Text(n.Ancestor("class_definition").Child("name")) == "Derived" {
			derived = n
		}
		return true
	})
	if got := len(f.BindingsOf(derived)); got != 1 {
		t.Errorf("self.device in Derived has %d values, want Trainer's one", got)
	}
	if f.NameKey(derived) != f.NameKey(attribute("step")) || f.NameKey(derived) == f.NameKey(attribute("get")) {
		t.Error("Derived and Trainer share their attributes' answers; Frames does not")
	}
}

// A segment's calls by name: each name's calls in source order, names that
// are prefixes of others apart, and nothing for a name never called.
func TestNodesByNameGroupsEachNamesNodes(t *testing.T) {
	f := parse(t, "def f(x):\n    a.append(x)\n    app(x)\n    b.append(f(x))\n    appended(x)\n    return app(len(x))\n")
	var calls []*pyast.Node
	f.Tree.Walk(f.Tree.Root, func(n *pyast.Node) bool {
		if n.Is("call") {
			calls = append(calls, n)
		}
		return true
	})
	var named []namedNode
	for _, c := range calls {
		named = append(named, namedNode{f.LastName(c.Child("function")), c})
	}
	by := newNodesByName(named)
	texts := func(calls []*pyast.Node) string {
		var out []string
		for _, c := range calls {
			out = append(out, f.Text(c))
		}
		return strings.Join(out, "; ")
	}
	for name, want := range map[string]string{
		"append":   "a.append(x); b.append(f(x))",
		"app":      "app(x); app(len(x))",
		"appended": "appended(x)",
		"f":        "f(x)",
		"len":      "len(x)",
		"ap":       "",
		"zzz":      "",
	} {
		if got := texts(by.named(name)); got != want {
			t.Errorf("named(%q) = %q, want %q", name, got, want)
		}
	}
	var names []string
	total := 0
	for name, calls := range by.all() {
		names = append(names, name)
		total += len(calls)
	}
	if got := strings.Join(names, " "); got != "app append appended f len" || total != len(calls) {
		t.Errorf("all: names %q, %d calls; want \"app append appended f len\", %d", got, total, len(calls))
	}
}

// Grouped through a map (many names) or by sorting (a few), each name's
// nodes are in the order they were given, under names in order: checked
// against a plain grouping on random names of both sizes.
func TestNodesByNameKeepsSourceOrderAtEverySize(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{0, 1, 2, smallNameSort, smallNameSort + 1, 100, 3000} {
		named := make([]namedNode, size)
		want := map[string][]*pyast.Node{}
		for i := range named {
			name := fmt.Sprintf("n%d", rng.IntN(1+size/3))
			named[i] = namedNode{name, new(pyast.Node)}
			want[name] = append(want[name], named[i].node)
		}
		by := newNodesByName(slices.Clone(named))
		var names []string
		for name, nodes := range by.all() {
			names = append(names, name)
			if !slices.Equal(nodes, want[name]) {
				t.Errorf("size %d: %s has %d nodes out of their order or not its own (want %d)", size, name, len(nodes), len(want[name]))
			}
			if got := by.named(name); !slices.Equal(got, want[name]) {
				t.Errorf("size %d: named(%s) differs from all's", size, name)
			}
		}
		if !slices.IsSorted(names) || len(names) != len(want) {
			t.Errorf("size %d: names %v not sorted, or %d of %d", size, names, len(names), len(want))
		}
	}
}

// NeverTainted answers from an expression's syntax alone what Tainted
// answers for it whatever its names hold: it must never be true where
// Tainted is. Checked on every expression of the rules' test files, where
// many values are tainted and many are detached.
func TestNeverTaintedOnlyWhereTaintedIsFalse(t *testing.T) {
	never, tainted := 0, 0
	for _, f := range ruleTestFiles(t) {
		path, tree := f.Path, f.Tree
		tree.Walk(tree.Root, func(n *pyast.Node) bool {
			isTainted := f.TaintOf(Scope(n)).Tainted(n)
			if NeverTainted(f, n) {
				never++
				if isTainted {
					t.Errorf("%s:%d: `%s` is tainted, but NeverTainted says it cannot be", path, f.Mapper.LineOf(n.Start())+1, f.Text(n))
				}
			}
			if isTainted {
				tainted++
			}
			return true
		})
	}
	if never == 0 || tainted == 0 {
		t.Fatalf("%d expressions never tainted, %d tainted: the files no longer test this", never, tainted)
	}
}

// An operator chain is judged in time linear in its length: `a + b + c`
// is `(a + b) + c`, and judging the left operand twice at every level made
// a 30-term string concatenation in an opencompass summariser take 37 s of
// `check`, and a 100-term one forever. The answers stay those of each
// operand judged once.
func TestLongOperatorChainsAreJudgedOnce(t *testing.T) {
	const terms = 100
	var losses, sum, text []string
	for i := range terms {
		losses = append(losses, fmt.Sprintf("    l%d = F.cross_entropy(model(x%d), y)\n", i, i))
		sum = append(sum, fmt.Sprintf("l%d", i))
		text = append(text, fmt.Sprintf("str(r%d)", i))
	}
	src := "import torch\nimport torch.nn.functional as F\n\ndef step(model, y, r0):\n" + strings.Join(losses, "") +
		"    total = " + strings.Join(sum, " + ") + "\n" +
		"    text = " + strings.Join(text, " + ") + "\n" +
		"    mixed = " + strings.Join(sum[:terms/2], " + ") + " + len(text)\n" +
		"    return total, text, mixed\n"
	f := parse(t, src)
	scope := EnclosingFunction(node(t, f, "return_statement", "return total"))
	var values []*pyast.Node
	for _, name := range []string{"total =", "text =", "mixed ="} {
		values = append(values, node(t, f, "assignment", name).Child("right"))
	}
	done := make(chan [3]bool, 1)
	go func() {
		taint := f.TaintOf(scope)
		var got [3]bool
		for i, v := range values {
			got[i] = taint.IsScalarLoss(v)
		}
		done <- got
	}()
	select {
	case got := <-done:
		if want := [3]bool{true, false, true}; got != want {
			t.Errorf("total, text, mixed a scalar loss: got %v, want %v", got, want)
		}
	case <-time.After(time.Minute):
		// Not a timing check: the linear work takes milliseconds, the
		// exponential one longer than anyone waits.
		t.Fatal("judging a 100-term operator chain did not finish: an operand is judged more than once per level")
	}
}

// Taint.last finds a name's last assignment by binary search, which is
// right only while each name's events are in the order they take effect:
// checked for every scope of the rules' test files.
func TestTaintEventsAreInOrder(t *testing.T) {
	events := 0
	for _, f := range ruleTestFiles(t) {
		path, tree := f.Path, f.Tree
		tree.Walk(tree.Root, func(n *pyast.Node) bool {
			if n != tree.Root && !n.Is("function_definition", "lambda") {
				return true
			}
			for name, evs := range f.TaintOf(n).events {
				events += len(evs)
				for i := 1; i < len(evs); i++ {
					if evs[i].at < evs[i-1].at {
						t.Errorf("%s: the assignments of %s in the scope on line %d are out of order: %d after %d",
							path, name, f.Mapper.LineOf(n.Start())+1, evs[i].at, evs[i-1].at)
					}
				}
			}
			return true
		})
	}
	if events == 0 {
		t.Fatal("no assignments: the files no longer test this")
	}
}

// ruleTestFiles returns the rules' test files, each as a File: many
// training loops, tainted and detached values, in the shapes rules meet.
func ruleTestFiles(t *testing.T) []*File {
	t.Helper()
	paths, err := filepath.Glob("../rules/testdata/*/*.py")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	var files []*File
	for _, path := range paths {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		tree, err := pyast.Parse(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, NewFile(path, src, tree))
	}
	return files
}

// The names a model goes by, numbered (`model1`, co-teaching's two
// networks) and GAN-style (`netG`, CycleGAN's `netD_A`), and names that
// only mention one.
func TestModelNames(t *testing.T) {
	for name, want := range map[string]bool{
		"model": true, "models": true, "model1": true, "net2": true, "decoder1": true,
		"netG": true, "netd": true, "netD_A": true, "teacher_model": true, "model_ema": true,
		"extract_from_model": false, "netx": false, "layer1": false, "models1": false, "netG_C": false,
	} {
		if got := modelName.MatchString(name) && !notModelName.MatchString(name); got != want {
			t.Errorf("%s names a model: %v, want %v", name, got, want)
		}
	}
}

// A function called right after its caller's last mode call put the model
// in eval mode runs with autograd on after eval(): the last mode call of
// the caller's own scope before the call, wherever the others are.
func TestCalledAfterEvalReadsTheLastModeCallOfTheCallersScope(t *testing.T) {
	want := map[string]bool{"after_eval": true, "after_train": false, "after_nested_eval": false, "after_eval_in_module": true}
	var src strings.Builder
	src.WriteString("import torch\n")
	for _, name := range slices.Sorted(maps.Keys(want)) {
		fmt.Fprintf(&src, "\n\ndef %s(model, data):\n    for x in data:\n        model(x)\n", name)
	}
	src.WriteString(`

def run(model, data):
    model.eval()
    model.train()
    after_train(model, data)
    model.train()
    model.eval()
    after_eval(model, data)
    model.train()
    to_eval = lambda: model.eval()
    after_nested_eval(model, data)


model = Net()
model.train()
model.eval()
after_eval_in_module(model, data)
`)
	f := parse(t, src.String())
	for name, want := range want {
		defs := f.Functions[name]
		if len(defs) != 1 {
			t.Fatalf("%s: %d definitions", name, len(defs))
		}
		loop := defs[0].Child("body").NamedChildren()[0]
		if got := f.CalledAfterEvalWithGrad(loop); got != want {
			t.Errorf("%s: called after eval() %v, want %v", name, got, want)
		}
	}
}

// The segment index finds the class of a chain on self from the classes
// around the walk, not by an ancestor walk a mention: its bindings'
// classes and its mentions' hashes are what attributeClass and
// attributeKey give, in nested classes, after them and on the rules' test
// files.
func TestSegmentIndexClassesOfChainsOnSelf(t *testing.T) {
	nested := parse(t, `class Outer:
    def f(self):
        self.a = 1
        class Inner:
            def g(self):
                self.b = self.a
        self.c = self.a
        return cls.d
def top(self):
    self.e = 3
class Late(Outer):
    def h(self):
        self.f = self.g.h
`)
	files := append(ruleTestFiles(t), nested)
	classed := 0
	for _, f := range files {
		src := f.Tree.Src
		for i, ix := range f.indexes {
			for _, b := range ix.bindings {
				if want := attributeClass(b.target, src); b.class != want {
					t.Errorf("%s: %s is bound in class %q, want %q", f.Path, f.Text(b.target), b.class, want)
				}
			}
			var want []uint64
			for _, stmt := range f.Tree.Segments[i].Nodes {
				pyast.Walk(stmt, func(n *pyast.Node) bool {
					if n.Is("identifier", "attribute") && !(n.Field() == "name" && n.Parent().Is("function_definition")) && !calledOnSuper(n, src) {
						class := attributeClass(n, src)
						if class != "" {
							classed++
						}
						want = append(want, nameHash(attributeKey(n.Text(src), class)))
					}
					return true
				})
			}
			slices.Sort(want)
			if want = slices.Compact(want); !slices.Equal(ix.mentions, want) {
				t.Errorf("%s: a segment's %d mentions differ from the %d of an ancestor walk", f.Path, len(ix.mentions), len(want))
			}
		}
	}
	if classed == 0 {
		t.Error("no chain on self in a class: the test tests nothing")
	}
}

// attributeKeyHash hashes a key in parts as nameHash hashes it whole.
func TestAttributeKeyHashIsTheKeysHash(t *testing.T) {
	for _, c := range [][2]string{{"self.device", "Trainer"}, {"x", ""}, {"self.a.b", "C"}, {"", "C"}} {
		if got, want := attributeKeyHash(c[0], c[1]), nameHash(attributeKey(c[0], c[1])); got != want {
			t.Errorf("attributeKeyHash(%q, %q) = %x, want %x", c[0], c[1], got, want)
		}
	}
}

// A segment's local-only mentions are the names each mention of which is
// a function's own (LocalName): none is also mentioned as the module's, an
// attribute or a parameter's default value elsewhere in the segment.
func TestSegmentIndexLocalOnlyMentions(t *testing.T) {
	mixed := parse(t, `def f(x, y=z):
    w = x + 1
    v = w
    return v

def g():
    return w + z

def h(z):
    q = z
    return lambda q=q: q
`)
	localOnly, checked := 0, 0
	for _, f := range append(ruleTestFiles(t), mixed) {
		src := f.Tree.Src
		for i, ix := range f.indexes {
			local, other := map[uint64]bool{}, map[uint64]bool{}
			for _, stmt := range f.Tree.Segments[i].Nodes {
				pyast.Walk(stmt, func(n *pyast.Node) bool {
					if n.Is("identifier", "attribute") && !(n.Field() == "name" && n.Parent().Is("function_definition")) && !calledOnSuper(n, src) {
						h := nameHash(attributeKey(n.Text(src), attributeClass(n, src)))
						if EnclosingFunction(n) != nil && !inParameterDefault(n) && f.LocalName(n) {
							local[h] = true
						} else {
							other[h] = true
						}
					}
					return true
				})
			}
			var want []uint64
			for h := range local {
				if !other[h] {
					want = append(want, h)
				}
			}
			slices.Sort(want)
			if !slices.Equal(ix.localOnly, want) {
				t.Errorf("%s: segment %d has %d local-only mentions, want %d", f.Path, i, len(ix.localOnly), len(want))
			}
			localOnly += len(want)
			checked++
		}
	}
	if localOnly == 0 || checked == 0 {
		t.Error("no local-only mention: the test tests nothing")
	}
}

// inParameterDefault reports whether n is in the parameters of the function
// around it but not one of their names: a default value or an annotation,
// evaluated where the function is defined.
func inParameterDefault(n *pyast.Node) bool {
	fn := EnclosingFunction(n)
	params := fn.Child("parameters")
	if params == nil || n.Start() < params.Start() || n.End() > params.End() {
		return false
	}
	for _, p := range params.NamedChildren() {
		name := parameterName(p)
		if name.Is("list_splat_pattern", "dictionary_splat_pattern") {
			name = name.FirstNamed()
		}
		if name == n {
			return false
		}
	}
	return true
}

// CallsNamedWithin finds through the calls by name what CallsIn filtered
// by the callee's last name finds, in the same order: nested calls that
// start together (f(x)(y), a.eval().train()), in functions, methods,
// classes, module code and the whole module.
func TestCallsNamedWithinIsCallsInByName(t *testing.T) {
	src := []byte(`import torch


def run(model, batches):
    model.eval()
    model.eval().train()
    eval(x)
    for b in batches:
        model.train(False)(b)
        model(b).eval()
    train(model)


class Trainer:
    def fit(self):
        self.model.train()
        self.model.eval(); self.eval()

    def validate(self):
        with torch.no_grad():
            self.model.eval()
        return [m.train() for m in self.models]


model = torch.nn.Linear(2, 2)
model.eval()
train(model.eval())
`)
	// Laid out for editing, the file has an index per statement.
	tree, err := pyast.ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	f := NewFile("t.py", src, tree)
	nodes := []*pyast.Node{f.Tree.Root}
	f.Tree.Walk(f.Tree.Root, func(n *pyast.Node) bool {
		if n.Is("function_definition", "class_definition", "for_statement", "with_statement", "expression_statement", "call") {
			nodes = append(nodes, n)
		}
		return true
	})
	for _, names := range [][]string{{"eval", "train"}, {"train", "eval"}, {"eval"}, {"model"}, {"nothing"}} {
		for _, n := range nodes {
			var want []string
			for _, c := range f.CallsIn(n) {
				if slices.Contains(names, f.LastName(c.Child("function"))) {
					want = append(want, fmt.Sprintf("%d-%d", c.Start(), c.End()))
				}
			}
			var got []string
			for _, c := range f.CallsNamedWithin(n, names...) {
				got = append(got, fmt.Sprintf("%d-%d", c.Start(), c.End()))
			}
			if !slices.Equal(got, want) {
				t.Errorf("calls named %v within %s `%.30s`: %v, want %v", names, n.Kind(), f.Text(n), got, want)
			}
		}
	}
	if len(nodes) < 30 {
		t.Fatalf("the walk found %d nodes to look in", len(nodes))
	}
}
