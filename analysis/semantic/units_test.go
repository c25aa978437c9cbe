package semantic

import (
	"context"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vramlint/vramlint/analysis/pyast"
)

// trainerClass is a class whose methods call one another, beside a
// function of the module that calls one of them.
func trainerClass(extra int) string {
	var b strings.Builder
	b.WriteString(`import torch


class Trainer:
    def __init__(self, opt):
        self.model = torch.nn.Linear(4, 2)
        self.opt = opt

    def forward_pass(self, x):
        return self.model(x)

    def step(self, x):
        loss = self.forward_pass(x).sum()
        loss.backward()
        self.opt.step()
        return loss

    def train(self, loader):
        losses = []
        for x in loader:
            losses.append(self.step(x))
        return losses

    def predict(self, x):
        return self.forward_pass(x)

    def evaluate(self, loader):
        self.model.eval()
        outs = []
        for x in loader:
            outs.append(self.predict(x))
        return outs

    def fit_batch(self, x):
        out = self.forward_pass(x)
        self.update(out)

    def update(self, out):
        loss = out.sum()
        loss.backward()
`)
	for i := range extra {
		fmt.Fprintf(&b, "\n    def helper%d(self, x):\n        y = torch.zeros(%d)\n        return len(x) + y.sum().item()\n", i, i)
	}
	b.WriteString(`

def run(trainer, loader):
    kept = []
    for x in loader:
        kept.append(trainer.predict(x))
    return kept
`)
	return b.String()
}

// An edit inside one method of a class judges that method's calls and
// definitions, not the class's other methods (pairUnchangedUnits), and
// what carryOver concludes (the names, summaries and calls whose answers
// are stale) is what judging every method concludes: each step below is
// made in two buffers, one without the pairing, and their conclusions
// compared. A method that does otherwise now brings in the methods that
// call it (update's callers: fit_batch's call of forward_pass no longer
// feeds training); a call whose kind changed, the definitions of its
// function; a nested function come or gone, the methods that mention its
// name; an attribute bound in __init__ judges everything.
func TestAnEditInOneMethodJudgesThatMethod(t *testing.T) {
	const extra = 20
	src := trainerClass(extra)
	paired, full := pairedAndFull(t, src)
	calls := 0 // in the class, both versions
	for _, c := range paired.f.Calls() {
		if c.Start() < strings.Index(src, "\ndef run") {
			calls += 2
		}
	}
	steps := []pairingStep{
		{"return len(x) + y.sum().item()", "return len(x) + y.sum().item() + 1", 12},
		{"torch.zeros(3)", "torch.zeros(33)", 12},
		// Its summary changes: predict calls it (evaluate and run call
		// predict, whose summary follows), step too.
		{"        return self.model(x)\n", "        return self.model(x).detach()\n", 40},
		{"        return self.model(x).detach()\n", "        return self.model(x)\n", 40},
		{"        return self.model(x)\n", "        return x\n", 40}, // runs no model
		{"        return x\n", "        return self.model(x)\n", 40},
		// update trains no more: fit_batch's call of forward_pass, whose
		// result it hands to update, no longer feeds training. Then that
		// call's kind changed: forward_pass's definition is judged, not
		// the helpers.
		{"        loss = out.sum()\n        loss.backward()\n", "        loss = out.sum()\n        print(loss)\n", 40},
		{"        loss = out.sum()\n        print(loss)\n", "        loss = out.sum()\n        loss.backward()\n", 40},
		// A call under no_grad now: its kind changed, and step's only
		// caller puts step's own calls under no_grad too (step's
		// definition, then forward_pass's, judged in turn).
		{"            outs.append(self.predict(x))", "            with torch.no_grad():\n                outs.append(self.predict(x))", 40},
		{"            losses.append(self.step(x))", "            with torch.no_grad():\n                losses.append(self.step(x))", 40},
		{"    def helper5(self, x):", "    @torch.no_grad()\n    def helper5(self, x):", 0},
		{"torch.zeros(7)", "torch.zeros(7", 0}, // the error may run to the class's end
		{"torch.zeros(7", "torch.zeros(7)", 0},
		{"        self.opt = opt\n", "        self.opt = opt\n        self.best = None\n", 0}, // an attribute bound
		// A name's attribute bound, then no more: the methods that mention
		// it are judged with the edited one, the others stay paired.
		{"        y = torch.zeros(4)\n", "        y = torch.zeros(4)\n        y.grad = None\n", 12},
		{"        y = torch.zeros(4)\n        y.grad = None\n", "        y = torch.zeros(4)\n", 12},
		{"    def helper9(self, x):", "    def helper9b(self, x):\n        pass\n\n    def helper9(self, x):", 0},
		// A function nested in a method came, was renamed (one went,
		// another came, as a name typed letter by letter does) and went:
		// the calls of its names are in the methods that mention them,
		// none but its own here.
		{"        losses = []\n", "        def inner(v):\n            return v\n\n        losses = []\n", 12},
		{"        def inner(v):\n", "        def inner2(v):\n", 12},
		{"        def inner2(v):\n            return v\n\n", "", 12},
		// One named as a method others call: those are judged with it.
		{"        losses = []\n", "        def predict(v):\n            return v\n\n        losses = []\n", 40},
		{"        def predict(v):\n            return v\n\n", "", 40},
	}
	for i, step := range steps {
		if want := replaceBoth(t, paired, full, i, step); step.most > 0 && want.carried.judged < calls {
			t.Errorf("step %d: without the pairing %d judged, want every call of the class (%d)", i, want.carried.judged, calls)
		}
	}
}

// pairingStep is an edit (the first old of the text replaced with new)
// and how many calls and definitions carryOver may judge for it: 0, no
// bound; judgesAll, every one, as without the pairing.
type pairingStep struct {
	old, new string
	most     int
}

const judgesAll = -1

// pairedAndFull returns two buffers of src, analysed as an analysis
// leaves them (the next version compares summaries): one edited with the
// pairing, one without it (see replaceBoth).
func pairedAndFull(t *testing.T, src string) (paired, full *buffer) {
	t.Helper()
	paired, full = newBuffer(t, src), newBuffer(t, src)
	paired.summarise()
	full.summarise()
	return paired, full
}

// replaceAllBoth makes steps in turn in two buffers of src, with and
// without the pairing (see replaceBoth).
func replaceAllBoth(t *testing.T, src string, steps []pairingStep) {
	t.Helper()
	paired, full := pairedAndFull(t, src)
	for i, step := range steps {
		replaceBoth(t, paired, full, i, step)
	}
}

// replaceBoth makes step, the i-th, in paired and in full, a buffer
// without the pairing, and reports where their conclusions differ, or the
// pairing judged more than the step allows; it returns full's version.
func replaceBoth(t *testing.T, paired, full *buffer, i int, step pairingStep) *File {
	t.Helper()
	pairUnits = true
	got := paired.replace(step.old, step.new)
	pairUnits = false
	want := full.replace(step.old, step.new)
	pairUnits = true
	if !maps.Equal(got.carried.changed, want.carried.changed) {
		t.Errorf("step %d (%q): stale %v, judging every method %v", i, step.new, sortedKeys(got.carried.changed), sortedKeys(want.carried.changed))
	}
	if step.most > 0 && got.carried.judged > step.most {
		t.Errorf("step %d (%q): %d calls and definitions judged, want at most %d (%d without the pairing)", i, step.new, got.carried.judged, step.most, want.carried.judged)
	}
	if step.most == judgesAll && got.carried.judged < want.carried.judged {
		t.Errorf("step %d (%q): %d judged, want every one (%d)", i, step.new, got.carried.judged, want.carried.judged)
	}
	paired.summarise()
	full.summarise()
	return want
}

// Random edits of a file of classes, made alike in a buffer with the
// pairing and one without: after each, carryOver concludes the same.
func TestPairedMethodsConcludeAsJudgingThemAll(t *testing.T) {
	var b strings.Builder
	b.WriteString("import torch\n")
	for k := range 3 {
		b.WriteString(strings.ReplaceAll(trainerClass(6), "Trainer", fmt.Sprintf("Trainer%d", k))[len("import torch\n"):])
	}
	snippets := []string{"x", "\n", "(", ")", ":", "    ", "        return self.model(x).detach()\n", "        with torch.no_grad():\n    ",
		"self.forward_pass(x)", ".detach()", "        self.model.eval()\n", "    def extra(self, x):\n        return self.predict(x)\n",
		"@torch.no_grad()\n", "        self.best = x\n", "loss.backward()\n"}
	if pairedSome, _ := editsConcludeAlike(t, b.String(), snippets, rand.New(rand.NewSource(11)), 20, nil); pairedSome < 40 {
		t.Errorf("the pairing spared work on %d edits of 300", pairedSome)
	}
}

// editsConcludeAlike makes 300 random edits (snippets) of text alike in a
// buffer with the pairing and one without, from the text afresh every
// afresh edits (edits pile up errors that end the classes early, and then
// nothing is paired), each where at says (nil: anywhere), and fails where
// carryOver's conclusions differ. It returns on how many edits the
// pairing judged less, and how many stray methods it paired in all (see
// strayMethods).
func editsConcludeAlike(t *testing.T, text string, snippets []string, rng *rand.Rand, afresh int, at func(rng *rand.Rand, src []byte) int) (pairedSome, strays int) {
	t.Helper()
	var paired, full *buffer
	for i := range 300 {
		if i%afresh == 0 {
			paired, full = newBuffer(t, text), newBuffer(t, text)
			paired.summarise()
			full.summarise()
		}
		where := rng.Intn(len(paired.src) + 1)
		if at != nil {
			where = at(rng, paired.src)
		}
		next, tree, typed, where := randomEditAt(t, rng, where, paired.src, paired.tree, snippets)
		pairUnits = true
		got := NewFileFrom(paired.f, "p.py", next, tree)
		pairUnits = false
		want := NewFileFrom(full.f, "p.py", next, tree)
		pairUnits = true
		if !maps.Equal(got.carried.changed, want.carried.changed) {
			t.Fatalf("edit %d (%q at %d): stale %v, judging everything %v", i, typed, where, sortedKeys(got.carried.changed), sortedKeys(want.carried.changed))
		}
		if got.carried.judged < want.carried.judged {
			pairedSome++
		}
		strays += got.carried.strays
		paired.src, paired.tree, paired.f = next, tree, got
		full.src, full.tree, full.f = next, tree, want
		paired.summarise()
		full.summarise()
	}
	return pairedSome, strays
}

func sortedKeys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }

// The pairing finds the methods an edit left alone where they were, and
// none when the edit is not inside one method.
func TestUnchangedUnitsArePaired(t *testing.T) {
	src := trainerClass(4)
	for _, tc := range []struct {
		old, new string
		want     int // methods paired, of 12 in the class; -1: any
	}{
		{"torch.zeros(2)", "torch.zeros(22)", 11},
		{"        return self.model(x)\n", "        return self.model(x).detach()\n", 11},
		{"class Trainer:", "class Trainer(object):", 0},                            // the class's own line
		{"    def helper3(self, x):", "    x = 1\n\n    def helper3(self, x):", 0}, // between methods
		{"torch.zeros(1)", "torch.zeros(1", -1},                                    // as the parser recovers
	} {
		text := []byte(src)
		tree, err := pyast.ParseForEditing(context.Background(), text)
		if err != nil {
			t.Fatal(err)
		}
		prev := NewFile("p.py", text, tree)
		at := strings.Index(src, tc.old)
		ed := pyast.NewEditor(tree, text)
		ed.Replace(at, at+len(tc.old), tc.new)
		next, err := ed.Parse(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		f := NewFileFrom(prev, "p.py", ed.Text(), next)
		old, cur := prev.SegmentAt(prev.Tree.Virtual(at)), f.SegmentAt(f.Tree.Virtual(at))
		units := pairUnchangedUnits(prev, old, f, cur)
		got := 0
		if units != nil {
			got = len(units.cur)
			for i := range units.cur {
				if was, is := prev.Text(units.old[i]), f.Text(units.cur[i]); was != is {
					t.Errorf("%q: paired %q with %q", tc.new, was, is)
				}
			}
		}
		if got != tc.want && tc.want >= 0 {
			t.Errorf("%q: %d methods paired, want %d", tc.new, got, tc.want)
		}
	}
}

// The functions nested in a function share its names (a closure reads
// what its enclosing function binds, and a nonlocal binds it from inside
// another), which the file's answers about names do not list: they are
// judged whole, never paired. Steps in an outer function whose inner ones
// read its `model` and one of which rebinds it.
func TestNestedFunctionsAreNotPaired(t *testing.T) {
	const src = `import torch


def build(loader):
    model = torch.nn.Linear(4, 2)

    def rebind():
        nonlocal model
        model = torch.nn.Identity()

    def run():
        outs = []
        for x in loader:
            outs.append(model(x))
        return outs

    def other():
        return 1

    return run, rebind, other
`
	paired, full := pairedAndFull(t, src)
	for i, step := range []struct{ old, new string }{
		{"        model = torch.nn.Identity()\n", "        model = len\n"},
		{"        return 1\n", "        return 2\n"},
	} {
		pairUnits = true
		got := paired.replace(step.old, step.new)
		pairUnits = false
		want := full.replace(step.old, step.new)
		pairUnits = true
		if !maps.Equal(got.carried.changed, want.carried.changed) || got.carried.judged != want.carried.judged {
			t.Errorf("step %d (%q): stale %v, %d judged; judging everything %v, %d", i, step.new, sortedKeys(got.carried.changed), got.carried.judged, sortedKeys(want.carried.changed), want.carried.judged)
		}
		paired.summarise()
		full.summarise()
	}
	tree, err := pyast.ParseForEditing(context.Background(), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if units := outermostFunctions(tree.Statements[len(tree.Statements)-1]); len(units) != 0 {
		t.Errorf("a function's nested functions taken for units: %d", len(units))
	}
}

// A function whose text an edit changed and that nothing in the file
// mentions is taken to do otherwise without summarising it (see
// assumedChanged): no answer kept can have read it. One that is called
// elsewhere, forward (which a model's call runs unnamed) and the dunders
// are compared by their summaries, and stay unchanged when those are.
func TestAnEditedFunctionNothingMentionsIsNotSummarised(t *testing.T) {
	src := trainerClass(3) + `

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


net = Net()
out = net(torch.randn(1, 4))
`
	b := newBuffer(t, src)
	summarised := func(f *File, name string) bool {
		f.memos.Lock()
		defer f.memos.Unlock()
		_, ok := f.memos.summaries[f.Functions[name][0]]
		return ok
	}
	for _, step := range []struct {
		old, new, name string
		assumed        bool
	}{
		// helper1 is called nowhere.
		{"torch.zeros(1)", "torch.zeros(11)", "helper1", true},
		// predict is: evaluate and run call it. Its summary is the same.
		{"        return self.forward_pass(x)\n", "        return self.forward_pass(x)  # as before\n", "predict", false},
		// A model's call runs forward; a class's call, __init__.
		{"        return self.fc(x)\n", "        return self.fc(x)  # as before\n", "forward", false},
		{"        self.fc = torch.nn.Linear(4, 2)\n", "        self.fc = torch.nn.Linear(4, 2)  # as before\n", "__init__", false},
	} {
		b.summarise()
		f := b.replace(step.old, step.new)
		if got := summarised(f, step.name); got == step.assumed {
			t.Errorf("after %q: %s summarised %v, want %v", step.new, step.name, got, !step.assumed)
		}
		if got := f.carried.changed["def:"+step.name]; got != step.assumed {
			t.Errorf("after %q: %s taken as changed %v, want %v (stale %v)", step.new, step.name, got, step.assumed, sortedKeys(f.carried.changed))
		}
	}
}

// A method called on super() is no mention of the file's method of that
// name, for the pairing as for the segment index: it runs the base's.
func TestACallOnSuperIsNoMention(t *testing.T) {
	b := newBuffer(t, `class A(Base):
    def run(self, x):
        return super().step(x)


class B(Base):
    def go(self, x):
        return self.step(x)
`)
	for _, name := range []string{"A", "B"} {
		class := b.f.Classes[name]
		want := name == "B"
		for _, m := range class.Methods {
			if got := mentionsOrDefines(b.f, m, map[string]bool{"step": true}, nil); got != want {
				t.Errorf("the pairing: %s's method mentions step: %v, want %v", name, got, want)
			}
		}
		i := b.f.Tree.SegmentNumber(class.Node.Start())
		if got := b.f.indexes[i].mentionsHash(nameHash("step")); got != want {
			t.Errorf("the segment index: %s mentions step: %v, want %v", name, got, want)
		}
	}
}

// resultTrains asks what a call does only of the calls after it that take
// one of the names it assigns (callsTaking); the answer is the one asking
// every call after it gives. Compared for every call of the rules'
// fixtures and of a trainer class whose method hands its result on.
func TestResultTrainsAsksOnlyTheCallsTakingItsNames(t *testing.T) {
	everyCall := func(f *File, call *pyast.Node) bool {
		p, fn, names, decided, trains := f.resultFlows(call)
		if decided {
			return trains
		}
		for _, c := range f.CallsIn(fn) {
			if c.Start() < p.End() || !InScope(c, fn) {
				continue
			}
			if s := f.SummaryOfCall(c); s != nil && s.Trains && slices.ContainsFunc(names, func(name string) bool {
				return MentionsName(f, c.Child("arguments"), name)
			}) {
				return true
			}
		}
		return false
	}
	sources := []string{trainerClass(2) + `

def hand_on(model, opt, x):
    out = model(x)
    logs = out.detach()
    self_loss = compute(out)
    fit(self.loss, self_loss)
    def inner():
        fit(out, out)
    return inner


def compute(out):
    return out.sum()


def parts(model, x):
    loss = model(x)
    fit(None, self.loss)


def before(model, x):
    fit(None, out)
    out = model(x)


def fit(a, b):
    b.backward()
`}
	paths, _ := filepath.Glob("../rules/testdata/GPU00*/*.py")
	for _, p := range paths {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, string(text))
	}
	trains := 0
	for _, src := range sources {
		tree, err := pyast.ParseForEditing(context.Background(), []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		f := NewFile("p.py", []byte(src), tree)
		for _, c := range f.Calls() {
			got, want := f.resultTrains(c), everyCall(f, c)
			if got != want {
				t.Errorf("%q: resultTrains %v, asking every call after it %v", f.Text(c), got, want)
			}
			if got {
				trains++
			}
		}
	}
	if len(paths) < 20 || trains < 10 {
		t.Fatalf("%d fixtures, %d calls whose result trains: too few to compare", len(paths), trains)
	}
}

// The summaries and step-loop kinds of the methods an edit left alone are
// taken over from the last version (unchangedUnits.counterpart), and they,
// and the taints found with them, are what a fresh model of the same text
// finds: random edits of a file of classes, each version's answers about
// every function, loop and name in a function compared with a fresh
// model's of the same tree.
func TestPairedMethodsKeepTheirAnswers(t *testing.T) {
	var b strings.Builder
	b.WriteString("import torch\n")
	for k := range 3 {
		b.WriteString(strings.ReplaceAll(trainerClass(6), "Trainer", fmt.Sprintf("Trainer%d", k))[len("import torch\n"):])
	}
	snippets := []string{"x", "\n", "(", ")", "    ", "        return self.model(x).detach()\n", "        with torch.no_grad():\n    ",
		"self.forward_pass(x)", ".detach()", "        self.model.eval()\n", "    def extra(self, x):\n        return self.predict(x)\n",
		"@torch.no_grad()\n", "loss.backward()\n", "        self.opt.step()\n", "            self.opt.step()\n",
		// A function of the name the methods call (helper0 calls scale)
		// comes or goes: every method is judged, and answers that asked
		// about the name are stale.
		"        def scale(x):\n            x.sum().backward()\n            return x\n", "scale(x)", "def scale(x):\n    return x\n"}
	b.WriteString("\n\ndef scale(x):\n    return x * 2\n")
	text := strings.Replace(b.String(), "        return len(x) + y.sum().item()\n", "        return len(scale(x)) + y.sum().item()\n", 3)
	if translated, _ := editsKeepTheirAnswers(t, text, snippets, rand.New(rand.NewSource(5)), 20, nil); translated < 500 {
		t.Errorf("%d answers taken over in 300 edits", translated)
	}
}

// answersOf asks every function's summary, every loop's kind and the
// taint of every name and call in a function of f, and returns them by the
// place they are at in the source.
func answersOf(f *File) (map[int]Behaviour, map[int]StepKind, map[int]string) {
	summaries, kinds, taints := map[int]Behaviour{}, map[int]StepKind{}, map[int]string{}
	f.Tree.Walk(f.Tree.Root, func(n *pyast.Node) bool {
		switch n.Kind() {
		case "function_definition":
			summaries[f.ToSource(n.Start())] = f.summary(n).Behaviour
		case "for_statement", "while_statement":
			kinds[f.ToSource(n.Start())] = f.StepLoopKind(n)
		case "identifier", "call":
			if scope := EnclosingFunction(n); scope != nil {
				t := f.TaintOf(scope)
				taints[f.ToSource(n.Start())] += fmt.Sprint(t.Tainted(n), t.IsScalarLoss(n), " ")
			}
		}
		return true
	})
	return summaries, kinds, taints
}

// answersAlike reports whether models f and g answer alike (answersOf).
func answersAlike(f, g *File) bool {
	fSummaries, fKinds, fTaints := answersOf(f)
	gSummaries, gKinds, gTaints := answersOf(g)
	return maps.Equal(fSummaries, gSummaries) && maps.Equal(fKinds, gKinds) && maps.Equal(fTaints, gTaints)
}

// editsKeepTheirAnswers makes 300 random edits (snippets) of text, from
// the text afresh every afresh edits, each where at says (nil: anywhere),
// and fails where a version's answers about every function, loop and name
// in a function differ from a fresh model's of the same tree (answersOf);
// it returns how many answers were taken over from paired methods, and
// how many stray methods were paired in all (see strayMethods).
func editsKeepTheirAnswers(t *testing.T, text string, snippets []string, rng *rand.Rand, afresh int, at func(rng *rand.Rand, src []byte) int) (translated, strays int) {
	t.Helper()
	var buf *buffer
	for i := range 300 {
		if i%afresh == 0 {
			buf = newBuffer(t, text)
			answersOf(buf.f)
		}
		where := rng.Intn(len(buf.src) + 1)
		if at != nil {
			where = at(rng, buf.src)
		}
		next, tree, typed, at := randomEditAt(t, rng, where, buf.src, buf.tree, snippets)
		got := NewFileFrom(buf.f, "p.py", next, tree)
		translated += got.carried.translated
		strays += got.carried.strays
		// What was taken over is about this version's own functions and
		// loops, in their segments.
		for def, s := range got.memos.summaries {
			if s.Def != def || !def.Is("function_definition") || got.segmentOf(def) == nil {
				t.Fatalf("edit %d: a summary kept under a %s, of a %s", i, def.Kind(), s.Def.Kind())
			}
		}
		for loop, v := range got.memos.stepLoops {
			if !loop.Is("for_statement", "while_statement") || got.segmentOf(loop) != v.segment {
				t.Fatalf("edit %d: a step-loop kind kept under a %s, or in another segment", i, loop.Kind())
			}
		}
		for scope, facts := range got.memos.taintFacts {
			if scope != got.Tree.Root && (!scope.Is("function_definition", "lambda") || got.segmentOf(scope) != facts.segment) {
				t.Fatalf("edit %d: a taint kept under a %s, or in another segment", i, scope.Kind())
			}
		}
		gotSummaries, gotKinds, gotTaints := answersOf(got)
		// A fresh model of the same tree: a tree-sitter tree parsed
		// incrementally may recover from an error otherwise than a fresh
		// parse.
		wantSummaries, wantKinds, wantTaints := answersOf(NewFile("p.py", next, tree))
		if !maps.Equal(gotSummaries, wantSummaries) || !maps.Equal(gotKinds, wantKinds) || !maps.Equal(gotTaints, wantTaints) {
			for at, s := range gotSummaries {
				if wantSummaries[at] != s {
					t.Logf("function at %d: %+v, fresh %+v", at, s, wantSummaries[at])
				}
			}
			for at, k := range gotKinds {
				if wantKinds[at] != k {
					t.Logf("loop at %d: %v, fresh %v", at, k, wantKinds[at])
				}
			}
			for at, taint := range gotTaints {
				if wantTaints[at] != taint {
					t.Logf("taint at %d: %s, fresh %s", at, taint, wantTaints[at])
				}
			}
			t.Fatalf("edit %d (%q at %d, %d answers taken over): summaries, loop kinds or taints differ from a fresh model's", i, typed, at, got.carried.translated)
		}
		buf.src, buf.tree, buf.f = next, tree, got
	}
	return translated, strays
}

// Whether a function returns a model reads the bindings of the names it
// returns: a summary kept from the version before `net` was bound anew
// said `get` returned the model still (found by
// TestStrayMethodsKeepTheirAnswers: an edit of the module's `net` line).
func TestASummaryFollowsTheNamesItReturns(t *testing.T) {
	buf := newBuffer(t, "import torch\n\nnet = torch.nn.Linear(4, 2)\n\n\ndef get():\n    return net\n\n\ndef local():\n    m = torch.nn.Linear(2, 2)\n    return m\n")
	buf.summarise()
	returns := func(f *File, name string) bool { return f.summary(f.Functions[name][0]).ReturnsModule }
	if !returns(buf.f, "get") || !returns(buf.f, "local") {
		t.Fatal("get and local return no model")
	}
	f := buf.replace("net = torch.nn.Linear(4, 2)", "net = len")
	if returns(f, "get") {
		t.Error("get returns a model after net = len")
	}
	if !returns(f, "local") {
		t.Error("local returns no model after an edit elsewhere")
	}
}

// What a method keeps of its arguments on self reads its class's other
// methods (a container handed to NumPy keeps no tensors that require
// grad, see storedParameters): an edit of one of them judges the
// recorder's summary again rather than pairing it. (A fuzzed edit of
// `np.mean(self.arrays)` kept `add_array`'s old summary, and with it the
// absence of a GPU002 finding a fresh analysis gave.)
func TestARecordersSummaryFollowsItsClass(t *testing.T) {
	buf := newBuffer(t, "import numpy as np\nimport torch\n\n\nclass Recorder:\n    def __init__(self):\n        self.arrays = []\n        self.total = 0\n\n"+
		"    def add_array(self, out):\n        self.arrays.append(out)\n\n    def add_total(self, loss):\n        self.total += loss\n\n"+
		"    def mean_array(self):\n        return np.mean(self.arrays)\n\n    def flush(self):\n        print(self.total)\n")
	kept := func(f *File) (uint64, bool) {
		s := f.summary(f.Functions["add_array"][0])
		return s.StoredArguments, f.summary(f.Functions["add_total"][0]).SumsFirstArgument
	}
	if stored, sums := kept(buf.f); stored != 0 || !sums {
		t.Fatalf("stored %b, sums %v: want nothing kept of what goes to NumPy, a sum kept", stored, sums)
	}
	for _, edit := range [][2]string{{"np.mean(self.arrays)", "len(self.arrays)"}, {"print(self.total)", "self.total.backward()"}} {
		f := buf.replace(edit[0], edit[1])
		gotStored, gotSums := kept(f)
		wantStored, wantSums := kept(NewFile("p.py", buf.src, buf.tree))
		if gotStored != wantStored || gotSums != wantSums {
			t.Errorf("%q -> %q: stored %b, sums %v; a fresh model's %b, %v", edit[0], edit[1], gotStored, gotSums, wantStored, wantSums)
		}
	}
	if stored, sums := kept(buf.f); stored == 0 || sums {
		t.Errorf("stored %b, sums %v after the edits: want the argument kept, the sum backpropagated", stored, sums)
	}
}

// An edit that changes what a method binds (an attribute on self, a
// global that another method's calls run under) keeps the other methods
// paired: carryOver concludes as judging every method, with less judged.
func TestABindingChangedInOneMethodKeepsTheOthersPaired(t *testing.T) {
	src := strings.Replace(trainerClass(20), "        self.opt = opt\n", "        self.opt = opt\n        self.run_step = self.step\n        global CTX\n        CTX = torch.no_grad()\n", 1)
	src = strings.Replace(src, "            losses.append(self.step(x))\n", "            with torch.no_grad():\n                losses.append(self.run_step(x))\n", 1)
	src = strings.Replace(src, "            outs.append(self.predict(x))\n", "            with CTX:\n                outs.append(self.predict(x))\n", 1)
	paired, full := pairedAndFull(t, src)
	for i, step := range [][2]string{
		{"self.run_step = self.step\n", "self.run_step = self.predict\n"},
		{"self.run_step = self.predict\n", "self.run_step = self.step\n"},
		{"CTX = torch.no_grad()\n", "CTX = torch.enable_grad()\n"},
		{"CTX = torch.enable_grad()\n", "CTX = torch.no_grad()\n"},
	} {
		pairUnits = true
		got := paired.replace(step[0], step[1])
		pairUnits = false
		want := full.replace(step[0], step[1])
		pairUnits = true
		if !maps.Equal(got.carried.changed, want.carried.changed) {
			t.Errorf("step %d (%q): stale %v, judging every method %v", i, step[1], sortedKeys(got.carried.changed), sortedKeys(want.carried.changed))
		}
		if got.carried.judged >= want.carried.judged {
			t.Errorf("step %d: %d judged, as many as without the pairing (%d)", i, got.carried.judged, want.carried.judged)
		}
		paired.summarise()
		full.summarise()
	}
}

// An edit among a class's own statements, outside its methods (a class
// attribute typed over, its docstring, a statement added between two
// methods), judges those statements and the methods that mention what
// they bind, not every method (see amongOwnStatements); carryOver
// concludes what judging every method concludes. An edit of the class's
// header, or of the condition of an if that holds a method, judges all.
func TestAnEditAmongAClassesOwnStatementsKeepsItsMethodsPaired(t *testing.T) {
	src := strings.Replace(trainerClass(20), "class Trainer:\n",
		"class Trainer:\n    \"\"\"Trains.\"\"\"\n\n    keep_graphs = True\n    scale = 2\n    train_step = step_alias = None\n", 1)
	src = strings.Replace(src, "    def predict(self, x):\n",
		"    run_step = step\n\n    if DEBUG:\n        def trace(self, x):\n            return self.forward_pass(x)\n\n    def predict(self, x):\n", 1)
	src = strings.Replace(src, "            losses.append(self.step(x))\n", "            if self.keep_graphs:\n                losses.append(self.run_step(x))\n", 1)
	src = strings.Replace(src, "import torch\n", "import torch\n\nDEBUG = False\n", 1)
	replaceAllBoth(t, src, []pairingStep{
		{"    keep_graphs = True\n", "    keep_graphs = False\n", 12},
		{"    keep_graphs = False\n", "    xkeep_graphs = False\n", 12},
		{"    xkeep_graphs = False\n", "    keep_graphs = True\n", 12},
		{"\"\"\"Trains.\"\"\"", "\"\"\"Trains a model.\"\"\"", 12},
		{"    scale = 2\n", "    scale = 2.0\n", 12},
		// Between two methods: a blank line, then a statement there.
		{"        return losses\n\n", "        return losses\n\n    best = None\n\n", 12},
		{"    best = None\n", "    best = torch.zeros(2)\n", 12},
		// What the alias the training loop calls is bound to (run_step
		// runs no backward pass now): a binding changed, the method that
		// mentions it judged with the statement.
		{"    run_step = step\n", "    run_step = predict\n", 12},
		{"    run_step = predict\n", "    run_step = step\n", 12},
		// The class's own tokens, an if's condition over a method.
		{"class Trainer:", "class Trainer(torch.nn.Module):", judgesAll},
		{"    if DEBUG:\n", "    if not DEBUG:\n", judgesAll},
	})
}

// A statement typed right after a method's last line, or on the blank
// line under a method's header, is inside the method in the new version
// and after it in the old one (or the other way round when its first
// letter is deleted again): the method with the same start is its other
// self (see endingBefore), the other methods stay paired, and carryOver
// concludes as judging every method does. Taken for a method come or
// gone, each such key judged every method of the class.
func TestAStatementTypedAfterAMethodsLastLineKeepsTheOthersPaired(t *testing.T) {
	src := strings.Replace(trainerClass(20), "    def update(self, out):\n", "    best = None\n\n    def update(self, out):\n", 1)
	src = strings.Replace(src, "    def helper0(self, x):\n", "    def fresh(self, x):\n        \n\n    def helper0(self, x):\n", 1)
	replaceAllBoth(t, src, []pairingStep{
		// After the last line of update: a line indented, a letter on
		// it, another, both deleted.
		{"        loss.backward()\n\n    def fresh", "        loss.backward()\n        \n\n    def fresh", 12},
		{"        loss.backward()\n        \n", "        loss.backward()\n        m\n", 12},
		{"        loss.backward()\n        m\n", "        loss.backward()\n        mo\n", 12},
		{"        loss.backward()\n        mo\n", "        loss.backward()\n        \n", 12},
		// The first letters of the body of a method that has none yet.
		{"    def fresh(self, x):\n        \n", "    def fresh(self, x):\n        r\n", 12},
		{"    def fresh(self, x):\n        r\n", "    def fresh(self, x):\n        return self.step(x)\n", 0},
		{"    def fresh(self, x):\n        return self.step(x)\n", "    def fresh(self, x):\n        \n", 0},
		// A class attribute indented into the method above it: a binding
		// of the class gone, the methods that read it judged.
		{"    best = None\n", "        best = None\n", 0},
		{"        best = None\n", "    best = None\n", 0},
	})
}

// strayClass is trainerClass(extra) with a dict left open in a function
// nested in train: tree-sitter's recovery makes the class's methods after
// train statements of its body (see strayMethods).
func strayClass(t *testing.T, extra int) string {
	t.Helper()
	src := strings.Replace(trainerClass(extra), "        losses = []\n",
		"        losses = []\n        def report():\n            x = {\n                'n': 1,\n        total = 0\n", 1)
	tree, err := pyast.ParseForEditing(context.Background(), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	f := NewFile("p.py", []byte(src), tree)
	at := f.Tree.Virtual(strings.Index(src, "'n': 1"))
	seg := f.SegmentAt(at)
	strays := 0
	for _, u := range outermostFunctions(seg.Nodes[0]) {
		if u.Start() <= at && at < u.End() {
			strays = len(strayMethods(u, seg.Text(), seg.Base))
		}
	}
	// All but __init__, forward_pass, step and train.
	if want := extra + 4; strays != want {
		t.Fatalf("%d stray methods in train, want %d: tree-sitter recovers otherwise than it did", strays, want)
	}
	return src
}

// The methods a bracket left open in one method took into it (see
// strayMethods) are paired as the class's methods are: a key typed inside
// the bracket judges that method alone, and carryOver concludes as judging
// every method does. Those that read a name the method binds (helpers:
// torch, once train binds it) are judged, the others stay paired; a call
// of train whose kind changed judges them all (their calls run under
// no_grad when train's callers do, see definesAround).
func TestStrayMethodsArePaired(t *testing.T) {
	const extra = 20
	// A method that calls train, before it: not a stray. Helpers that
	// return a model of the module's: were they train's, a name net bound
	// there would be theirs.
	src := strings.Replace(strayClass(t, extra), "    def train(self, loader):\n", "    def outer(self, x):\n        return self.train(x)\n\n    def train(self, loader):\n", 1)
	src = strings.Replace(src, "        return len(x) + y.sum().item()\n", "        return net\n", 4) + "\n\nnet = torch.nn.Linear(4, 2)\n"
	paired, full := pairedAndFull(t, src)
	for i, step := range []struct {
		pairingStep
		strays int // stray methods still paired
	}{
		{pairingStep{"'n': 1,", "'n': 12,", 20}, extra + 4},
		{pairingStep{"'n': 12,", "'n': 1 + 2,", 20}, extra + 4},
		// A name bound, then no more: either version's binding counts.
		{pairingStep{"        losses = []\n        def report", "        losses = []\n        net = len\n        def report", 0}, extra},
		{pairingStep{"        net = len\n", "", 0}, extra},
		{pairingStep{"        losses = []\n        def report", "        losses = []\n        torch = None\n        def report", 0}, 4},
		{pairingStep{"        torch = None\n", "", 0}, 4},
		{pairingStep{"'n': 1 + 2,", "'n': 3,", 20}, extra + 4},
		// An edit of train's header moves its body, which every stray
		// lies in: none is paired (see sameContext).
		{pairingStep{"    def train(self, loader):", "    def train(self, loader, torch):", 0}, 0},
		{pairingStep{"    def train(self, loader, torch):", "    def train(self, loader):", 0}, 0},
		{pairingStep{"'n': 3,", "'n': 4,", 20}, extra + 4},
		// outer's only call under no_grad now: outer runs under it, so
		// does its call of train, train's only one, and with it every
		// call in train, the strays' too (see inNoGrad).
		{pairingStep{"        losses = []\n        def report", "        losses = []\n        with torch.no_grad():\n            self.outer(None)\n        def report", 0}, 0},
	} {
		replaceBoth(t, paired, full, i, step.pairingStep)
		if strays := paired.f.carried.strays; strays != step.strays {
			t.Errorf("step %d (%q): %d stray methods paired, want %d", i, step.new, strays, step.strays)
		}
		// What was taken over for the strays is what a fresh model finds.
		if !answersAlike(paired.f, NewFile("p.py", paired.src, paired.tree)) {
			t.Errorf("step %d (%q): summaries, loop kinds or taints differ from a fresh model's", i, step.new)
		}
	}
}

// strayEdits returns a file of strays (see strayClass) whose helpers
// return a model of the module's or call a function of it that trains (a
// name net or scale bound in train would be theirs, were they train's),
// snippets to edit it with, and where to edit: half the time at the start
// of one of train's lines before the dict or in its header's parameters,
// a quarter in the dict's entry, the rest anywhere.
func strayEdits(t *testing.T) (text string, snippets []string, at func(rng *rand.Rand, src []byte) int) {
	text = strayClass(t, 12)
	text = strings.Replace(text, "        return len(x) + y.sum().item()\n", "        return net\n", 4)
	text = strings.Replace(text, "        return len(x) + y.sum().item()\n", "        return len(scale(x)) + y.sum().item()\n", 4) +
		"\n\nnet = torch.nn.Linear(4, 2)\n\n\ndef scale(x):\n    x.sum().backward()\n    return x\n"
	snippets = []string{"x", "\n", "(", ")", "    ", "12", " + 2", "        net = len\n", "        scale = x\n", "        torch = None\n", "        len = x\n",
		"        with torch.no_grad():\n    ", "        with torch.no_grad():\n            self.train(x)\n", "self.train(x)",
		"        self.model.eval()\n", "loss.backward()\n", ", scale", "        global scale\n", "@torch.no_grad()\n"}
	at = func(rng *rand.Rand, src []byte) int {
		s := string(src)
		switch from, to := strings.Index(s, "    def train("), strings.Index(s, "        def report"); {
		case from < 0 || to < from:
		case rng.Intn(4) < 2:
			lines := []int{strings.Index(s[from:], ")") + from}
			for i := from; i < to; i++ {
				if s[i] == '\n' {
					lines = append(lines, i+1)
				}
			}
			return lines[rng.Intn(len(lines))]
		case rng.Intn(2) == 0:
			if entry := strings.Index(s, "'n': "); entry >= 0 {
				return entry + 5 + rng.Intn(2)
			}
		}
		return rng.Intn(len(src) + 1)
	}
	return text, snippets, at
}

// The summaries and step-loop kinds of stray methods (see strayMethods)
// taken over from the last version are what a fresh model finds: random
// edits of train, which a dict left open has taken the class's later
// methods into (see strayEdits).
func TestStrayMethodsKeepTheirAnswers(t *testing.T) {
	text, snippets, at := strayEdits(t)
	if _, strays := editsKeepTheirAnswers(t, text, snippets, rand.New(rand.NewSource(7)), 4, at); strays < 500 {
		t.Errorf("%d stray methods paired in 300 edits", strays)
	}
}

// Random edits of train with its strays (see strayEdits), made alike in a
// buffer with the pairing and one without: after each, carryOver
// concludes the same.
func TestStrayMethodsConcludeAsJudgingThemAll(t *testing.T) {
	text, snippets, at := strayEdits(t)
	if _, strays := editsConcludeAlike(t, text, snippets, rand.New(rand.NewSource(3)), 4, at); strays < 500 {
		t.Errorf("%d stray methods paired in 300 edits", strays)
	}
}

// A method come or gone leaves the file's structure alone (see
// methodsCameOrWent), but a forward come or gone makes the class's other
// methods a model's own code or not (inModuleCode), which they do not
// mention: a loop running the model in one of them is a model loop in a
// plain class, not in a model's. A bracket left open in the method before
// forward takes forward and the methods after it in (strays, see
// strayMethods); closing it gives them back. Each version must answer as
// a fresh model of the same tree does, carried over from the last.
func TestAForwardComeOrGoneJudgesTheClasssOtherMethods(t *testing.T) {
	const src = `import torch


class Runner:
    def __init__(self):
        self.model = torch.nn.Linear(4, 2)

    def size(self):
        return 1

    def forward(self, x):
        return self.model(x)

    def run(self, items):
        outs = []
        for x in items:
            outs.append(self.model(x))
        return outs
`
	defer func(from int) { unitsFrom = from }(unitsFrom)
	unitsFrom = 0 // the class indexed by its methods, as a large one is
	buf := newBuffer(t, src)
	loopKind := func(f *File) StepKind {
		var loop *pyast.Node
		f.Tree.Walk(f.Tree.Root, func(n *pyast.Node) bool {
			if loop == nil && n.Is("for_statement") {
				loop = n
			}
			return loop == nil
		})
		return f.StepLoopKind(loop)
	}
	before := loopKind(buf.f)
	answersOf(buf.f)
	buf.summarise()
	for i, step := range [][2]string{{"        return 1\n", "        return (1\n"}, {"        return (1\n", "        return 1\n"}} {
		got := buf.replace(step[0], step[1])
		if !got.carried.ok {
			t.Fatalf("step %d: the model was not carried over (a method came or went, no class)", i)
		}
		fresh := NewFile("p.py", buf.src, buf.tree)
		if i == 0 && (!got.carried.methodsCameOrWent["forward"] || loopKind(fresh) == before) {
			t.Fatalf("the test needs forward taken in, and the loop's kind changed (%v)", before)
		}
		if !answersAlike(got, fresh) {
			t.Errorf("step %d: summaries, loop kinds or taints differ from a fresh model's", i)
		}
		buf.summarise()
	}
}

// A method typed above a model's reset with a bracket left open takes the
// reset in, and its `super().reset()` becomes a plain call of the typed
// method's: a call of every reset of the file (as is one typed into a
// method, `self.reset()`). Only the verdict that all of a function's
// callers run under no-grad reads plain calls (callersChanged), and it
// cannot change while no call it reads runs under no-grad: the versions
// analyse the typed class alone, and answer as a fresh model does. Once a
// call of reset runs under no-grad elsewhere, the plain call decides, and
// every version is judged again. Never for __init__, which a constructor
// runs unnamed: that verdict reads none of its calls
// (calledOnlyUnderNoGrad), not even the bare `__init__(self)` that a
// bracket left open in the typed method's no_grad block makes of the
// definition below.
func TestAPlainCallComeOrGoneDecidesOnlyBesideCallsUnderNoGrad(t *testing.T) {
	for _, method := range []string{"reset", "__init__"} {
		var b strings.Builder
		b.WriteString("import torch\nfrom torch import nn\n")
		for i := range 4 {
			fmt.Fprintf(&b, "\n\nclass Block%d(nn.Module):\n    def %s(self):\n        super().%s()\n        self.lin = nn.Linear(4, 4)\n        self.scale = self.lin(torch.ones(4))\n\n    def forward(self, x):\n        return self.lin(x) * self.scale\n", i, method, method)
		}
		b.WriteString("\n\ndef evaluate(model, loader):\n    model.eval()\n    for x in loader:\n        model(x)\n")
		whole := fmt.Sprintf("    def %s(self):\n        super().%s()\n        self.lin = nn.Linear(4, 4)", method, method)
		open := "    def fit(self, x):\n        y = (x\n\n" + whole
		// The taken-in definition's header lies in the typed method's
		// no_grad block as a bare call (`reset(self)`), as typing
		// `pred = model(` into an evaluation loop leaves it.
		openUnderNoGrad := "    def fit(self, x):\n        with torch.no_grad():\n            for x in x:\n                y = model(\n" + whole
		// A plain call typed into forward: no definition comes or goes, no
		// answer that asked about the definitions is dropped for it.
		const forward = "        return self.lin(x) * self.scale"
		call := fmt.Sprintf("        self.%s()\n        return self.lin(x) * self.scale", method)
		noGradCall := fmt.Sprintf("\n\nwith torch.no_grad():\n    Block3().%s()\n", method)
		for _, withNoGrad := range []bool{false, true} {
			text := b.String()
			if withNoGrad {
				text += noGradCall
			}
			buf := newBuffer(t, text)
			answersOf(buf.f)
			buf.summarise()
			at := strings.Index(text, "class Block2")
			steps := [][2]string{{whole, open}, {open, whole}, {forward, call}, {call, forward}, {whole, openUnderNoGrad}, {openUnderNoGrad, whole}}
			for i, step := range steps {
				// The step in Block2's class.
				rest := string(buf.src[at:])
				k := strings.Index(rest, step[0])
				if k < 0 {
					t.Fatalf("no %q in Block2", step[0])
				}
				got := buf.replace(string(buf.src[:at])+rest[:k]+step[0], string(buf.src[:at])+rest[:k]+step[1])
				if !answersAlike(got, NewFile("p.py", buf.src, buf.tree)) {
					t.Errorf("%s, no-grad call %v, step %d: answers differ from a fresh model's", method, withNoGrad, i)
				}
				want := method == "reset" && withNoGrad
				// A bare call of reset under no-grad (the taken-in header,
				// no call elsewhere): read by no method's verdict, but
				// judged by name, so either answer holds.
				either := i >= 4 && method == "reset" && !withNoGrad
				_, reusable := got.Reanalysed()
				if decided := got.carried.changed["calls:"+method]; !either && (decided != want || reusable == want) {
					t.Errorf("%s, no-grad call %v, step %d: the calls of %s changed: %v, the findings elsewhere reusable: %v", method, withNoGrad, i, method, decided, reusable)
				}
				buf.summarise()
			}
		}
	}
}
