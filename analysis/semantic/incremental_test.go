package semantic

import (
	"context"
	"fmt"
	"maps"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/source"
)

// A version of a buffer patches the previous version's indexes rather than
// building them again: its functions by name, its bindings by name and its
// line index, and it takes the file's structure (imports, classes), its
// DataLoaders and its grad switches from the previous version when the
// edit left them alone (see NewModelFrom). After random edits that add,
// rename and remove functions, bindings, imports, classes, loaders,
// switches, line breaks and indentation, each must equal what a fresh
// model of the same tree builds.
func TestPatchedIndexesEqualFreshOnes(t *testing.T) {
	var b strings.Builder
	b.WriteString("import torch\nfrom torch.utils.data import DataLoader\n\n")
	for i := range 40 {
		fmt.Fprintf(&b, "\n\ndef f%d(x):\n    y = x + %d\n    self.w = y\n    return y\n", i%13, i)
		if i%5 == 0 {
			fmt.Fprintf(&b, "\n\nv%d = f%d(1)\n", i%7, i%13)
		}
		if i%9 == 0 {
			fmt.Fprintf(&b, "\n\nclass C%d(torch.utils.data.Dataset):\n    def __len__(self):\n        return %d\n", i%4, i)
			fmt.Fprintf(&b, "\n    def __getitem__(self, i):\n        return torch.zeros(%d)\n", i)
		}
		if i%6 == 0 {
			fmt.Fprintf(&b, "\n\ndevice%d = torch.device(\"cuda\")\n", i%4)
		}
	}
	snippets := []string{"def f3(a):\n    return a\n", "y = 2\n", "self.w = None\n", "v1 = f2(3)\n", "x", "\n", "(",
		"import os\n", "from torch import nn as tnn\n", "class D(C1):\n    pass\n",
		"L = DataLoader(C0(), num_workers=2)\n", "torch.set_grad_enabled(False)\n",
		"device1 = torch.device(\"cuda\")\n", "y = torch.device(\"cpu\")\n", "device2 = f1(0)\n",
		"class E(torch.utils.data.IterableDataset):\n    def __iter__(self):\n        yield 1\n",
		"    def __getitem__(self, i):\n        return i\n", "def g(a):\r\n\treturn a\r\n", "\r",
		"z = 3  # noqa: GPU002\n", "# NOQA\n", "ds = C1(4)\n", "ds = C0(2)\n", "L2 = DataLoader(ds, num_workers=1)\n"}
	rng := rand.New(rand.NewSource(7))
	src := []byte(b.String())
	tree, err := pyast.ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	prev := NewFile("p.py", src, tree)
	prev.Bindings("y")
	DeviceBindings.Of(prev)
	prev.WorkerMethods()
	reusedDevices := 0
	for i := range 200 {
		src, tree, _, _ = randomEdit(t, rng, src, tree, snippets)
		got := NewFileFrom(prev, "p.py", src, tree)
		want := NewFile("p.py", src, tree)
		checkSharedIndexes(t, i, prev, got)
		if !reflect.DeepEqual(got.Functions, want.Functions) {
			t.Fatalf("edit %d: functions %v, want %v", i, got.Functions, want.Functions)
		}
		got.Bindings("y")
		want.Bindings("y")
		if !reflect.DeepEqual(got.bindings.m, want.bindings.m) {
			t.Fatalf("edit %d: bindings %v, want %v", i, got.bindings.m, want.bindings.m)
		}
		if !reflect.DeepEqual(got.totals, want.totals) || got.indent != want.indent || got.lineEnding() != want.lineEnding() {
			t.Fatalf("edit %d: the line breaks and indentation %+v (step %d) differ from a fresh model's %+v (step %d)", i, got.totals, got.indent, want.totals, want.indent)
		}
		if !sameLines(got.Mapper, want.Mapper) {
			t.Fatalf("edit %d: the line index differs from a fresh one", i)
		}
		var noqa, listed []string
		for _, ix := range want.indexes {
			for _, c := range ix.noqaComments {
				noqa = append(noqa, want.Text(c))
			}
		}
		for _, c := range got.NoqaComments() {
			listed = append(listed, got.Text(c))
		}
		if !slices.Equal(noqa, listed) {
			t.Fatalf("edit %d: noqa comments %q, want %q", i, listed, noqa)
		}
		classes := func(f *File) map[string]*pyast.Node {
			m := map[string]*pyast.Node{}
			for name, c := range f.Classes {
				m[name] = c.Node
			}
			return m
		}
		if got.structure != want.structure || !reflect.DeepEqual(got.Imports, want.Imports) || !reflect.DeepEqual(classes(got), classes(want)) {
			t.Fatalf("edit %d: the structure %q, imports %v and classes %v differ from a fresh model's %q, %v and %v",
				i, got.structure, got.Imports, classes(got), want.structure, want.Imports, classes(want))
		}
		if !reflect.DeepEqual(got.gradSwitches, want.gradSwitches) || !reflect.DeepEqual(loaderCallsOf(got), loaderCallsOf(want)) {
			t.Fatalf("edit %d: the grad switches %v and loaders %v differ from a fresh model's %v and %v",
				i, got.gradSwitches, loaderCallsOf(got), want.gradSwitches, loaderCallsOf(want))
		}
		// What each loader was found to be (a version takes the last
		// one's description where the names it mentions are bound alike).
		loaders := func(f *File) (out []string) {
			for _, d := range f.DataLoaders {
				class := "none"
				if d.DatasetClass != nil {
					class = fmt.Sprint(d.DatasetClass.Node.Start())
				}
				out = append(out, fmt.Sprintf("%d %q %v %v %v class %s %q", d.Call.Start(), d.Var, d.Dataset, d.NumWorkers, d.PinMemory, class, d.DatasetType))
			}
			return out
		}
		if g, w := loaders(got), loaders(want); !reflect.DeepEqual(g, w) {
			t.Fatalf("edit %d: the loaders %v differ from a fresh model's %v", i, g, w)
		}
		for name, c := range want.Classes {
			var g, w []int
			for _, d := range got.LoadersOf(got.Classes[name]) {
				g = append(g, d.Call.Start())
			}
			for _, d := range want.LoadersOf(c) {
				w = append(w, d.Call.Start())
			}
			if !slices.Equal(g, w) {
				t.Fatalf("edit %d: the loaders of %s are at %v, a fresh model's at %v", i, name, g, w)
			}
		}

		// Asked of every version, as GPU001 does, so that each carries
		// its answers to the next.
		if _, reusable := got.Reanalysed(); reusable && got.carried.devices != nil {
			reusedDevices++
		}
		if g, w := DeviceBindings.Of(got), DeviceBindings.Of(want); !reflect.DeepEqual(g, w) {
			t.Fatalf("edit %d: the device bindings %v differ from a fresh model's %v", i, g, w)
		}
		workers := func(f *File) (out []string) {
			for _, m := range f.WorkerMethods() {
				out = append(out, fmt.Sprintf("%s.%s at %d (class at %d)", m.Class.Name, m.Name, m.Fn.Start(), m.Class.Node.Start()))
			}
			return out
		}
		if g, w := workers(got), workers(want); !reflect.DeepEqual(g, w) {
			t.Fatalf("edit %d: the dataset worker methods %v differ from a fresh model's %v", i, g, w)
		}
		prev = got
	}
	if reusedDevices == 0 {
		t.Error("no version started from the device bindings of the one before: the test no longer tests that")
	}
}

// randomEdit inserts one of snippets at a random offset of src, or
// deletes up to the end of a line from one, and parses the result
// incrementally from tree: the text inserted ("" for a deletion) and the
// offset are returned with the new text and tree.
func randomEdit(t *testing.T, rng *rand.Rand, src []byte, tree *pyast.Tree, snippets []string) ([]byte, *pyast.Tree, string, int) {
	t.Helper()
	return randomEditAt(t, rng, rng.Intn(len(src)+1), src, tree, snippets)
}

// randomEditAt is randomEdit at offset at.
func randomEditAt(t *testing.T, rng *rand.Rand, at int, src []byte, tree *pyast.Tree, snippets []string) ([]byte, *pyast.Tree, string, int) {
	t.Helper()
	end := at
	text := snippets[rng.Intn(len(snippets))]
	if rng.Intn(3) == 0 { // delete up to the end of the line instead
		end = at + strings.IndexByte(string(src[at:])+"\n", '\n')
		text = ""
	}
	ed := pyast.NewEditor(tree, src)
	ed.Replace(at, min(end, len(src)), text)
	next, err := ed.Parse(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ed.Text(), next, text, at
}

// checkSharedIndexes checks that f, built from prev, took prev's index of
// every segment the two trees share and no other, and that what it says
// was removed and fresh is what a lookup by segment finds.
func checkSharedIndexes(t *testing.T, edit int, prev, f *File) {
	t.Helper()
	had := map[*pyast.Segment]*segmentIndex{}
	for j, seg := range prev.Tree.Segments {
		had[seg] = prev.indexes[j]
	}
	var fresh []*segmentIndex
	for i, seg := range f.Tree.Segments {
		if ix, ok := had[seg]; ok {
			if f.indexes[i] != ix {
				t.Fatalf("edit %d: segment %d is shared with the version before, but its index is not", edit, i)
			}
			delete(had, seg)
			continue
		}
		if slices.Contains(prev.indexes, f.indexes[i]) {
			t.Fatalf("edit %d: segment %d is new, but its index is the version before's", edit, i)
		}
		fresh = append(fresh, f.indexes[i])
	}
	if len(fresh) != len(f.carried.fresh) {
		t.Fatalf("edit %d: %d segments are new, the model says %d", edit, len(fresh), len(f.carried.fresh))
	}
	if len(had) != len(f.carried.gone) {
		t.Fatalf("edit %d: %d segments were removed, the model says %d", edit, len(had), len(f.carried.gone))
	}
	onlyPrev := map[*segmentIndex]bool{}
	for _, ix := range had { // what is left of had: prev's segments f lacks
		onlyPrev[ix] = true
	}
	for _, ix := range f.carried.gone {
		if !onlyPrev[ix] {
			t.Fatalf("edit %d: the model says a segment was removed that the version has", edit)
		}
	}
}

// DeviceBindings keeps the last version's answer for each statement the
// edit cannot have changed, and drops those of the statements it removed.
func TestDeviceBindingsGoWithTheirStatement(t *testing.T) {
	b := newBuffer(t, `import torch

device = torch.device("cuda")


def f(x):
    return x.to(device)


def g(y):
    z = y + 1
    return z
`+strings.Repeat("\n\ndef h(z):\n    return z\n", 6))
	first := DeviceBindings.Of(b.f)
	if len(first) != 1 {
		t.Fatalf("device bindings %v, want the one", first)
	}
	found := func() (out []*[]*pyast.Node) { // the segments' answers that found one
		for i := range b.f.devices.Load().bySegment {
			out = append(out, &b.f.devices.Load().bySegment[i].devices)
		}
		return out
	}
	had := *found()[0]
	b.replace("y + 1", "y + 2") // g assigns, and is analysed again
	if got := DeviceBindings.Of(b.f); len(got) != 1 || got[0] != first[0] {
		t.Fatalf("after an edit elsewhere: device bindings %v, want the last version's %v", got, first)
	}
	if now := found(); len(now) != 1 || &(*now[0])[0] != &had[0] {
		t.Fatal("the binding's statement was looked at again, not kept")
	}
	b.replace("device = torch.device(\"cuda\")\n", "")
	if _, reusable := b.f.Reanalysed(); !reusable {
		t.Fatal("the edit left nothing to reuse: the test no longer tests a removed statement")
	}
	if got := DeviceBindings.Of(b.f); len(got) != 0 {
		t.Fatalf("after the binding was deleted: device bindings %v, want none", got)
	}

	// A statement the edit left alone is looked at again when what it
	// reads changed.
	b = newBuffer(t, "import torch\n\nkind = \"cuda\"\n\n\ngpu = torch.device(kind)\n"+strings.Repeat("\n\ndef h(z):\n    return z\n", 6))
	if got := DeviceBindings.Of(b.f); len(got) != 2 {
		t.Fatalf("device bindings %v, want kind and gpu", got)
	}
	b.replace(`kind = "cuda"`, `kind = "cpu"`)
	if _, reusable := b.f.Reanalysed(); !reusable {
		t.Fatal("the edit left nothing to reuse: the test no longer tests a statement that reads another")
	}
	if got := DeviceBindings.Of(b.f); len(got) != 0 {
		t.Fatalf("with kind = \"cpu\": device bindings %v, want none", got)
	}
}

// An edit to what a function's own name is bound to is analysed again in
// that function alone, however many other functions have a name so named;
// an edit to a module's name still reaches every segment that mentions it.
func TestAFunctionsOwnNameStaysInItsFunction(t *testing.T) {
	var b strings.Builder
	b.WriteString("import torch\n\nscale = 2\n")
	for i := range 30 {
		fmt.Fprintf(&b, "\n\ndef step%d(model, x):\n    logits = model(x)\n    return logits.sum()", i)
		if i%5 == 0 {
			b.WriteString(" * scale")
		}
		b.WriteString("\n")
	}
	buf := newBuffer(t, b.String())
	edit := buf.replace
	f := edit("logits = model(x)\n    return logits.sum()\n\n\ndef step8", "logits = model(x).float()\n    return logits.sum()\n\n\ndef step8")
	focus, ok := f.Reanalysed()
	if !ok || len(focus) != 1 || !focus[f.SegmentAt(strings.Index(string(f.Tree.Src), "def step7"))] {
		t.Errorf("after editing step7's logits: %d segments to analyse again (ok %v), want step7's alone", len(focus), ok)
	}
	// Answers remembered by a local name's key go with its segment, once
	// maxStaleSerials segments have gone: over many versions, at most
	// that many gone segments' answers are left beside the live ones'.
	ask := func(f *File) {
		f.Tree.Walk(f.Tree.Root, func(n *pyast.Node) bool {
			if n.Kind() == "identifier" && f.Text(n) == "logits" {
				f.NamesModule(n)
			}
			return true
		})
	}
	ask(f)
	sizes := map[int]bool{}
	for i := range 3 * maxStaleSerials {
		f = edit(fmt.Sprintf("model(x).float()%s", strings.Repeat(" + 0", i)), fmt.Sprintf("model(x).float()%s", strings.Repeat(" + 0", i+1)))
		ask(f)
		got := len(f.memos.module)
		if got < 30 || got >= 30+maxStaleSerials {
			t.Fatalf("after %d edits, %d answers remembered about names, want one per function's logits (30) and fewer than %d of functions gone", i+1, got, maxStaleSerials)
		}
		sizes[got] = true
	}
	if !sizes[30] {
		t.Errorf("the answers of the functions gone were never dropped")
	}
	f = edit("scale = 2", "scale = 3")
	if focus, ok := f.Reanalysed(); !ok || len(focus) != 7 {
		t.Errorf("after editing the module's scale: %d segments to analyse again (ok %v), want its own and the 6 functions using it", len(focus), ok)
	}
}

// A function's parameter hides the module's binding of its name: an edit
// to that binding is analysed again in the functions that use the name
// freely (or as a parameter's default value), not in the many that take it
// as a parameter (all of them, before: more than half the file, so the
// whole file). A function's own name is
// still read wherever it is mentioned, a parameter so named included: a
// call of the name resolves to the function (see resolveCall).
func TestAParameterHidesTheModulesBinding(t *testing.T) {
	var b strings.Builder
	b.WriteString("import torch\nimport torch.nn as nn\n\nmodel = nn.Linear(4, 4)\n")
	for i := range 30 {
		if i%5 == 0 {
			fmt.Fprintf(&b, "\n\ndef free%d(x):\n    return model(x).sum()\n", i)
			continue
		}
		fmt.Fprintf(&b, "\n\ndef step%d(model, x):\n    return model(x).sum()\n", i)
	}
	b.WriteString("\n\ndef prepare(x):\n    return x.detach()\n\n\ndef run(prepare, items):\n    return [prepare(x) for x in items]\n")
	// A default value is evaluated where the function is defined: it reads
	// the module's model, though the body reads the parameter.
	b.WriteString("\n\ndef defaults(x, model=model):\n    return model(x)\n")
	buf := newBuffer(t, b.String())
	buf.summarise()
	f := buf.replace("model = nn.Linear(4, 4)", "model = nn.Linear(4, 8)")
	focus, ok := f.Reanalysed()
	if !ok || len(focus) != 8 || !focus[f.SegmentAt(strings.Index(string(f.Tree.Src), "def defaults"))] {
		t.Errorf("after editing the module's model: %d segments to analyse again (ok %v), want its own, the 6 functions using it freely and the one whose default value it is", len(focus), ok)
	}
	for seg := range focus {
		if text := string(seg.Text()); strings.Contains(text, "def step") {
			t.Errorf("a function taking model as a parameter is analysed again:\n%s", text)
		}
	}
	f = buf.replace("return x.detach()", "return model(x)")
	focus, ok = f.Reanalysed()
	if !ok || !focus[f.SegmentAt(strings.Index(string(f.Tree.Src), "def run"))] {
		t.Errorf("after editing prepare(): run(), whose parameter is so named, is not analysed again (%d segments, ok %v)", len(focus), ok)
	}
}

// An edit to what one class assigns to an attribute is analysed again in
// that class (and in the classes related to it) alone, however many other
// classes have an attribute so named.
func TestAClasssAttributeStaysInItsFamily(t *testing.T) {
	var b strings.Builder
	b.WriteString("import torch\nimport torch.nn as nn\n")
	for i := range 20 {
		fmt.Fprintf(&b, "\n\nclass Block%d(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.out = nn.Linear(4, %d)\n\n    def forward(self, x):\n        return self.out(x)\n", i, i+1)
	}
	b.WriteString("\n\nclass Wide(Block3):\n    def forward(self, x):\n        return self.out(x) * 2\n")
	buf := newBuffer(t, b.String())
	buf.summarise()
	f := buf.replace("nn.Linear(4, 4)", "nn.Linear(4, 8)")
	focus, ok := f.Reanalysed()
	in := func(class string) bool {
		return focus[f.SegmentAt(strings.Index(string(f.Tree.Src), "class "+class+"("))]
	}
	if !ok || len(focus) != 2 || !in("Block3") || !in("Wide") {
		t.Errorf("after editing Block3's self.out: %d segments to analyse again (ok %v), want Block3's and Wide's", len(focus), ok)
	}

	// A constructor that does more is what every class's
	// super().__init__() would call, were it not the base's (see
	// calledOnSuper).
	buf.summarise()
	f = buf.replace("nn.Linear(4, 8)\n", "nn.Linear(4, 8)\n        self.scale = torch.ones(1)\n")
	if !f.carried.changed["def:__init__"] {
		t.Fatal("the test needs Block3's __init__ to do something else")
	}
	focus, ok = f.Reanalysed()
	if !ok || len(focus) != 1 || !in("Block3") {
		t.Errorf("after adding to Block3's __init__: %d segments to analyse again (ok %v), want Block3's (Wide neither reads self.scale nor calls __init__)", len(focus), ok)
	}
}

// A class whose method mentions a function that does otherwise now is
// analysed again, and so is what reads that method or the class; but not
// what reads only its other methods (each a method name other classes use
// too: `__exit__`, `close`), which do as they did. What that method binds
// from its locals (`self.other = y`, `y = helper`), from a container it
// filled, under a with statement whose context it calls or under it as
// a decorator is read where the attribute is read; what it binds under
// an if that calls it binds the same value.
func TestAClassReachedReachesOnlyThroughTheMethodsAChangeReaches(t *testing.T) {
	buf := newBuffer(t, `import torch


def helper(x):
    return x * 2


class Shared:
    pass


class Patcher(Shared):
    def __enter__(self):
        self.fn = helper
        y = helper
        self.other = y
        items = []
        items.append(helper)
        self.items = items
        return self

    def __exit__(self, *args):
        self.fn = None

    def close(self):
        return 1

    def guarded(self):
        with helper(0):
            self.guarded_out = torch.ones(1)
        if helper(1):
            self.plain = torch.ones(1)

    @helper
    def decorated(self):
        self.decorated_out = torch.ones(1)


class ReadsDecorated(Shared):
    def get(self):
        return self.decorated_out


class ReadsGuarded(Shared):
    def get(self):
        return self.guarded_out


class ReadsPlain(Shared):
    def get(self):
        return self.plain


class ReadsOther(Shared):
    def get(self):
        return self.other


class ReadsItems(Shared):
    def get(self):
        return self.items


class Wrapper:
    def __exit__(self, *args):
        self.inner.__exit__(*args)

    def run(self):
        return self.inner.close()


class Caller:
    def go(self, p):
        return p.__enter__()


def make():
    return Patcher()
`+strings.Repeat("\n\ndef unrelated(x):\n    return x + 1\n", 12))
	buf.summarise()
	f := buf.replace("return x * 2", "return x.cuda()")
	if !f.carried.changed["def:helper"] {
		t.Fatal("the test needs helper to do something else")
	}
	focus, ok := f.Reanalysed()
	if !ok {
		t.Fatal("the edit is analysed as a whole")
	}
	var got []string
	for seg := range focus {
		header, _, _ := strings.Cut(string(seg.Text()), "\n")
		got = append(got, header)
	}
	slices.Sort(got)
	want := []string{"class Caller:", "class Patcher(Shared):", "class ReadsDecorated(Shared):", "class ReadsGuarded(Shared):", "class ReadsItems(Shared):", "class ReadsOther(Shared):", "def helper(x):", "def make():"}
	if !slices.Equal(got, want) {
		t.Errorf("segments analysed again:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// buffer makes successive versions of one file, each built from the last
// (NewFileFrom), as the server does while the user types.
type buffer struct {
	t    *testing.T
	src  []byte
	tree *pyast.Tree
	f    *File
}

func newBuffer(t *testing.T, text string) *buffer {
	t.Helper()
	src := []byte(text)
	tree, err := pyast.ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	return &buffer{t: t, src: src, tree: tree, f: NewFile("p.py", src, tree)}
}

// replace replaces the first old of the text with new, and returns the
// version that makes.
func (b *buffer) replace(old, new string) *File {
	b.t.Helper()
	at := strings.Index(string(b.src), old)
	if at < 0 {
		b.t.Fatalf("no %q to replace", old)
	}
	ed := pyast.NewEditor(b.tree, b.src)
	ed.Replace(at, at+len(old), new)
	next, err := ed.Parse(context.Background())
	if err != nil {
		b.t.Fatal(err)
	}
	b.src, b.tree = ed.Text(), next
	b.f = NewFileFrom(b.f, "p.py", b.src, b.tree)
	return b.f
}

// summarise computes the current version's function summaries, as an
// analysis does: the next version compares its own with them.
func (b *buffer) summarise() {
	for _, defs := range b.f.Functions {
		for _, d := range defs {
			b.f.summary(d)
		}
	}
}

// Remember's answers about a statement last while the versions of a
// buffer share it and bind every name alike: another statement's edit
// keeps them, a name bound anew or a new import asks again, and the
// edited statement's own nodes are asked about afresh.
func TestRememberedAnswersLastWhileNamesKeepTheirValues(t *testing.T) {
	b := newBuffer(t, `import torch

dev = "cuda"


def get(x):
    return x.to(dev)


def other():
    return 1
`)
	asked := 0
	ask := func() bool {
		t.Helper()
		var call *pyast.Node
		b.f.Tree.Walk(b.f.Tree.Root, func(n *pyast.Node) bool {
			if n.Kind() == "call" && b.f.MethodName(n) == "to" {
				call = n
			}
			return true
		})
		return Remember(b.f, "device move", call, func() bool {
			asked++
			return b.f.IsDeviceExpr(b.f.Arg(call, "device", 0))
		})
	}
	for _, step := range []struct {
		old, new string
		asks     int // how many times the answer is computed again
		device   bool
	}{
		{"", "", 1, true},
		{"return 1", "return 2", 0, true},                     // another statement
		{`dev = "cuda"`, `dev = "cpu"`, 1, false},             // dev bound anew
		{"import torch", "import torch\nimport os", 1, false}, // an import
		{"return x.to(dev)", "return x.to(dev) ", 1, false},   // the statement itself
	} {
		if step.old != "" {
			b.replace(step.old, step.new)
		}
		before := asked
		if got := ask(); got != step.device {
			t.Errorf("after %q: a device move %v, want %v", step.new, got, step.device)
		}
		ask() // the same version asks once
		if asked-before != step.asks {
			t.Errorf("after %q: computed %d times, want %d", step.new, asked-before, step.asks)
		}
	}
}

// The file's indentation step is the one most statements use: a line
// being indented one space at a time, or one odd block, changes neither
// the step the fixes indent by nor, with it, what every local rule must
// analyse again.
func TestIndentationFollowsMostStatements(t *testing.T) {
	var text strings.Builder
	text.WriteString("import torch\n")
	for i := range 5 {
		fmt.Fprintf(&text, "\n\ndef f%d(x):\n    if x:\n        return x\n    return %d\n", i, i)
	}
	text.WriteString("\n\ndef odd(x):\n  return x\n")
	b := newBuffer(t, text.String())
	if got := b.f.IndentUnit(); got != "    " {
		t.Fatalf("indent unit %q, want four spaces (one block of six indents by two)", got)
	}
	for _, typed := range []string{" ", "  ", "   "} {
		b.replace("def f3", typed+"def f3") // f3 becomes part of f2's body, indented by len(typed)
		if _, reusable := b.f.Reanalysed(); !reusable || b.f.indent != 4 {
			t.Errorf("after indenting a statement by %d: step %d, reusable %v; want 4 and true", len(typed), b.f.indent, reusable)
		}
		b.replace(typed+"def f3", "def f3")
	}
	b.replace("import torch\n", "import torch\n\n\ndef t(x):\n\treturn x\n")
	if b.f.indent != 4 {
		t.Errorf("with one function indented by a tab: step %d, want 4", b.f.indent)
	}
}

// RememberEach's answers last like Remember's: while the versions share a
// node's statement and bind every name alike. It reuses them by position,
// and by node when the list changed.
func TestRememberEachLastsWhileNamesKeepTheirValues(t *testing.T) {
	b := newBuffer(t, `import torch

dev = "cuda"


def get(x):
    return x.to(dev)


def put(y):
    return y.to(dev)


def other():
    return 1
`)
	var asked []string
	ask := func() []bool {
		t.Helper()
		var calls []*pyast.Node
		b.f.Tree.Walk(b.f.Tree.Root, func(n *pyast.Node) bool {
			if n.Kind() == "call" && b.f.MethodName(n) == "to" {
				calls = append(calls, n)
			}
			return true
		})
		return RememberEach(b.f, "device move", calls, func(call *pyast.Node) bool {
			asked = append(asked, b.f.Text(call))
			return b.f.IsDeviceExpr(b.f.Arg(call, "device", 0))
		})
	}
	for _, step := range []struct {
		old, new string
		asks     []string // the calls whose answer is computed again
		devices  []bool
	}{
		{"", "", []string{"x.to(dev)", "y.to(dev)"}, []bool{true, true}},
		{"return 1", "return 2", nil, []bool{true, true}},                                                                                                                     // another statement
		{`dev = "cuda"`, `dev = "cpu"`, []string{"x.to(dev)", "y.to(dev)"}, []bool{false, false}},                                                                             // dev bound anew
		{"return y.to(dev)", "return y.to(dev) ", []string{"y.to(dev)"}, []bool{false, false}},                                                                                // one statement itself
		{"return x.to(dev)", "return x.to(dev) + x.to(dev)", []string{"x.to(dev)", "x.to(dev)"}, []bool{false, false, false}},                                                 // one more before the other: found by node
		{"def other", "def early(z):\n    return z.to(dev)\n\n\ndef other", []string{"x.to(dev)", "x.to(dev)", "y.to(dev)", "z.to(dev)"}, []bool{false, false, false, false}}, // a new function binds a name
	} {
		if step.old != "" {
			b.replace(step.old, step.new)
		}
		asked = nil
		if got := ask(); !slices.Equal(got, step.devices) {
			t.Errorf("after %q: device moves %v, want %v", step.new, got, step.devices)
		}
		ask() // the same version asks once
		if !slices.Equal(asked, step.asks) {
			t.Errorf("after %q: computed %q again, want %q", step.new, asked, step.asks)
		}
	}
}

// A new version takes the previous one's answers about step loops and
// taints while nothing they asked about changed, and asks again once it
// did: here, an edit to another function keeps them, and an edit to the
// function the loop calls (its summary, which both answers used) drops
// them.
func TestCarriedAnswersGoWithWhatTheyAsked(t *testing.T) {
	b := newBuffer(t, `import torch


def update(model, x):
    loss = model(x).sum()
    loss.backward()


def run(model, loader):
    for x in loader:
        out = update(model, x)


def other():
    return 1
`)
	var loop, run *pyast.Node
	b.f.Tree.Walk(b.f.Tree.Root, func(n *pyast.Node) bool {
		switch {
		case n.Kind() == "for_statement":
			loop = n
		case n.Kind() == "function_definition" && b.f.Text(n.Child("name")) == "run":
			run = n
		}
		return true
	})
	if got := b.f.StepLoopKind(loop); got != TrainingLoop {
		t.Fatalf("the loop is %v, want a training loop", got)
	}
	b.f.TaintOf(run)
	fact, taint := b.f.memos.stepLoops[loop], b.f.memos.taintFacts[run]
	if fact == nil || taint == nil {
		t.Fatal("the answers were not remembered")
	}

	b.replace("return 1", "return 2")
	if loopKept, taintKept := b.f.memos.stepLoops[loop] == fact, b.f.memos.taintFacts[run] == taint; !loopKept || !taintKept {
		t.Errorf("an edit to another function kept the loop's answer: %v, the taint of run: %v", loopKept, taintKept)
	}
	if carried := b.f.TaintOf(run); carried.f != b.f || carried.taintFacts != taint {
		t.Error("the taint of run carried over is not the new version's, or was computed again")
	}

	b.replace("loss.backward()", "loss.item()")
	if loopKept, taintKept := b.f.memos.stepLoops[loop] != nil, b.f.memos.taintFacts[run] != nil; loopKept || taintKept {
		t.Errorf("the summary of the function the loop calls changed, and yet it kept the loop's answer: %v, the taint of run: %v", loopKept, taintKept)
	}
	fresh := NewFile("p.py", b.src, b.tree)
	if got, want := b.f.StepLoopKind(loop), fresh.StepLoopKind(loop); got != want {
		t.Errorf("after the edit the loop is %v, a fresh model says %v", got, want)
	}
}

// An asked set's signature may say two sets share a key when they do
// not, never the reverse; a signature not taken says they may.
func TestAskedSignaturesNeverHideASharedKey(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	set := func(n int) map[string]bool {
		m := map[string]bool{}
		for range n {
			m[fmt.Sprintf("name%d", r.Intn(400))] = true
		}
		return m
	}
	apart := 0
	for range 2000 {
		a, b := set(1+r.Intn(20)), set(1+r.Intn(4))
		shared := false
		for k := range b {
			shared = shared || a[k]
		}
		may := askedSignatureOf(a).mayShare(askedSignatureOf(b))
		if shared && !may {
			t.Fatalf("%v and %v share a key, and their signatures say they do not", a, b)
		}
		if !may {
			apart++
		}
	}
	if apart < 1000 {
		t.Errorf("the signatures told only %d of 2000 mostly disjoint pairs apart", apart)
	}
	if !(askedSignature{}).mayShare(askedSignatureOf(map[string]bool{"x": true})) {
		t.Error("a signature not taken says it shares no key")
	}
}

// A panic in one of InParallel's calls reaches its caller, whose recovery
// (the server's, check's) then sees it, instead of ending the process.
func TestInParallelRaisesPanicsInTheCaller(t *testing.T) {
	defer func() {
		if p := recover(); p != "boom" {
			t.Errorf("recovered %v, want the call's panic", p)
		}
	}()
	InParallel(100, func(i int) {
		if i == 7 {
			panic("boom")
		}
	})
	t.Error("InParallel returned after a call panicked")
}

// sameLines reports whether two line indexes have the same lines, starting
// at the same offsets.
func sameLines(a, b *source.Mapper) bool {
	if a.LineCount() != b.LineCount() {
		return false
	}
	for line := range a.LineCount() {
		if a.LineStart(line) != b.LineStart(line) {
			return false
		}
	}
	return true
}

// The method names of a version with its classes' headers unchanged are the
// last version's; a method added, renamed or removed gathers them again.
func TestMethodNamesFollowTheClasses(t *testing.T) {
	b := newBuffer(t, "class A:\n    def forward(self, x):\n        return x\n\n\ndef train():\n    y = 1\n    return y\n")
	if !b.f.hasMethod("forward") || b.f.hasMethod("step") {
		t.Fatal("version 1: want forward and not step")
	}
	first := b.f.methodNames.Load()
	f := b.replace("y = 1", "y = 2")
	if f.methodNames.Load() != first {
		t.Error("a function's body edited: the method names were gathered again")
	}
	f = b.replace("def forward(", "def step(")
	if f.hasMethod("forward") || !f.hasMethod("step") {
		t.Error("a method renamed: want step and not forward")
	}
	f = b.replace("    def step(self, x):\n        return x\n", "    pass\n")
	if f.hasMethod("step") {
		t.Error("the method removed: step is still a method")
	}
}

// The index of calls by name carries only the names it was asked about,
// and answers like a fresh version's for those, for a name asked for the
// first time after the carry, and for a name whose calls an edit adds or
// removes.
func TestCallIndexCarriesTheNamesAsked(t *testing.T) {
	text := "def helper(x):\n    return x.to('cuda')\n\n\ndef train(x):\n    y = helper(x)\n    z = x.to('cpu')\n    return y\n\n\ndef evaluate(x):\n    return helper(x).to('cpu')\n"
	b := newBuffer(t, text)
	fresh := func() *File {
		src := append([]byte(nil), b.src...)
		tree, err := pyast.ParseForEditing(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		return NewFile("p.py", src, tree)
	}
	same := func(what string, got, want []*pyast.Node, gotFile, wantFile *File) {
		t.Helper()
		texts := func(f *File, calls []*pyast.Node) []string {
			var out []string
			for _, c := range calls {
				out = append(out, fmt.Sprintf("%d:%s", f.Tree.Real(c.Start()), f.Text(c)))
			}
			slices.Sort(out)
			return out
		}
		if g, w := texts(gotFile, got), texts(wantFile, want); !slices.Equal(g, w) {
			t.Errorf("%s: calls %v, a fresh version's %v", what, g, w)
		}
	}
	if n := len(b.f.callsByName("helper")); n != 2 {
		t.Fatalf("version 1: %d calls to helper, want 2", n)
	}
	// An edit in train: the calls to helper move and one more comes.
	f := b.replace("    z = x.to('cpu')\n", "    z = helper(x).to('cpu')\n")
	f.memos.Lock()
	_, carriedHelper := f.memos.callsOf["helper"]
	_, carriedTo := f.memos.callsOf["to"]
	full := f.memos.allCalls != nil
	f.memos.Unlock()
	if !carriedHelper || carriedTo || full {
		t.Errorf("version 2 carried helper: %v, to: %v, every name: %v; want helper only", carriedHelper, carriedTo, full)
	}
	g := fresh()
	same("helper after the edit", f.callsByName("helper"), g.callsByName("helper"), f, g)
	// Asked for the first time after the carry: looked up in every segment.
	same("to, asked after the carry", f.callsByName("to"), g.callsByName("to"), f, g)
	// And carried from then on: an edit removes calls of both.
	f = b.replace("    return helper(x).to('cpu')\n", "    return x\n")
	g = fresh()
	same("helper after the second edit", f.callsByName("helper"), g.callsByName("helper"), f, g)
	same("to after the second edit", f.callsByName("to"), g.callsByName("to"), f, g)
	same("a name never called", f.callsByName("evaluate"), g.callsByName("evaluate"), f, g)
}

// What a version asks while it carries the last version's answers over
// (comparing the summaries of the functions an edit touched) is answered
// for that version: the classes it asks about are judged, and recorded,
// under an epoch of its own. All versions carried over at epoch 0, where
// a class nothing had asked about (its kind's zero value) passed for
// judged, neither a module nor a dataset: a summary compared there then
// said `self.head(x)` returns no graph, and GPU002 missed a finding in
// transformers' modeling_owlv2.py after a dozen edits that a fresh
// analysis of the same text reports.
func TestCarryingOverAnswersForItsOwnVersion(t *testing.T) {
	b := newBuffer(t, `import torch
from torch import nn


class Head(nn.Module):
    def forward(self, x):
        return x * 2


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = Head()

    def predict(self, x):
        return self.head(x)
`)
	b.summarise()
	b.replace("return self.head(x)", "return self.head(x) ")
	judged := 0
	for _, c := range b.f.Classes {
		k := c.kind.Load()
		if k == 0 {
			continue // not asked about
		}
		judged++
		if k>>8 == 0 {
			t.Errorf("class %s was judged under epoch 0, which every version carrying over shared", c.Name)
		}
	}
	if judged == 0 {
		t.Fatal("no class was judged: the test no longer tests that")
	}
	fresh := NewFile("p.py", b.src, b.tree)
	for name, c := range b.f.Classes {
		if got, want := b.f.classKind(c), fresh.classKind(fresh.Classes[name]); got != want {
			t.Errorf("class %s: kind %b, a fresh model's %b", name, got, want)
		}
	}
}

// A version takes the last one's description of a DataLoader where the
// names its statement mentions are bound alike, even when other names are
// bound anew: here the dataset variable one loader is built over is bound
// to another class, which that loader's description follows, while the
// other loader's is kept.
func TestLoaderDescriptionsFollowTheirNames(t *testing.T) {
	b := newBuffer(t, `import torch
from torch.utils.data import DataLoader, Dataset


class C0(Dataset):
    pass


class C1(Dataset):
    pass


ds = C0()
x = 1


def make():
    return DataLoader(ds, num_workers=2)


def other():
    return DataLoader(C1(), num_workers=1)
`)
	for _, step := range []struct {
		old, new     string
		class        string // of the first loader's dataset
		keptFirst    bool   // the first loader's description is the last version's
		keptSecond   bool
		namesChanged bool
	}{
		{"x = 1", "x = 2", "C0", true, true, true},
		{"ds = C0()", "ds = C1()", "C1", false, true, true},
		{"num_workers=1", "num_workers=3", "C1", true, false, false},
	} {
		had := b.f.DataLoaders
		f := b.replace(step.old, step.new)
		if len(f.DataLoaders) != 2 {
			t.Fatalf("after %q: %d loaders", step.new, len(f.DataLoaders))
		}
		if got := f.DataLoaders[0].DatasetClass; got == nil || got.Name != step.class {
			t.Errorf("after %q: the first loader's dataset class is %v, want %s", step.new, got, step.class)
		}
		if kept := f.DataLoaders[0] == had[0]; kept != step.keptFirst {
			t.Errorf("after %q: first loader's description kept %v, want %v", step.new, kept, step.keptFirst)
		}
		if kept := f.DataLoaders[1] == had[1]; kept != step.keptSecond {
			t.Errorf("after %q: second loader's description kept %v, want %v", step.new, kept, step.keptSecond)
		}
		if f.namesChanged() != step.namesChanged {
			t.Errorf("after %q: names changed %v, want %v", step.new, f.namesChanged(), step.namesChanged)
		}
	}
}

// The module's sets of names (NamesIn) are patched from the last
// version's: a keystroke collects the statements of the segments it
// touched only, and the set equals a fresh version's; an import, or a
// binding of torch, collects every statement again.
func TestModuleNamesArePatchedByTheSegmentsEdited(t *testing.T) {
	b := newBuffer(t, `import torch

a = torch.zeros(1)
b = a.sum()


def f(x):
    return torch.relu(x)


c = torch.stack(xs)
`)
	collected := 0
	names := func(f *File) Names {
		return NamesIn(f, "torch arguments", f.Tree.Root, func(stmt *pyast.Node, add func(string)) {
			collected++
			for _, call := range f.CallsIn(stmt) {
				if strings.HasPrefix(f.Callee(call), "torch.") {
					for _, arg := range call.Child("arguments").NamedChildren() {
						add(f.Text(arg))
					}
				}
			}
		})
	}
	for _, step := range []struct {
		old, new string
		collects int // statements collected
		want     []string
	}{
		{"", "", 5, []string{"1", "x", "xs"}},
		{"torch.stack(xs)", "torch.stack(ys)", 1, []string{"1", "x", "ys"}},
		{"a.sum()", "torch.mean(a)", 1, []string{"1", "a", "x", "ys"}},
		{"torch.relu(x)", "torch.relu(y)", 1, []string{"1", "a", "y", "ys"}},
		{"torch.zeros(1)", "torch.zeros(2)", 1, []string{"2", "a", "y", "ys"}},
		{"import torch\n", "import numpy as torch\n", 5, nil},
		{"import numpy as torch\n", "", 4, []string{"2", "a", "y", "ys"}}, // a star import's torch
		{"c = ", "torch = None\nc = ", 5, nil},                            // torch bound: no module
	} {
		if step.old != "" || step.new != "" {
			b.replace(step.old, step.new)
		}
		before := collected
		got := names(b.f)
		names(b.f) // once a version
		if collected-before != step.collects {
			t.Errorf("after %q: collected %d statements, want %d", step.new, collected-before, step.collects)
		}
		if len(got) != len(step.want) {
			t.Errorf("after %q: %d names, want %q", step.new, len(got), step.want)
		}
		for _, name := range step.want {
			if !got.Has(name) {
				t.Errorf("after %q: no %q", step.new, name)
			}
		}
		if fresh := names(NewFile("p.py", b.src, b.tree)); !maps.Equal(got, fresh) {
			t.Errorf("after %q: names %v, a fresh version's %v", step.new, got, fresh)
		}
	}
}

// Which names of a script reach a backward pass (ReachesBackward,
// FreedByBackward at module level) follows the statements edited: the
// passes' names and the flows between names are patched from the last
// version's (see moduleSinks), and every version answers as a fresh one.
func TestModuleSinksFollowTheStatementsEdited(t *testing.T) {
	b := newBuffer(t, `import torch

a = model(x)
b = a * 2
c = b + 1
losses = []
losses.append(c)
total = sum(losses)
total.backward()
d = other(y)
`)
	names := []string{"a", "b", "c", "d", "losses", "total", "w", "x", "y", "model", "other"}
	for _, step := range []struct {
		old, new string
		reach    string // the names that reach a backward pass
		freed    string // the names a freeing one runs through
	}{
		{"", "", "a b c losses total x model", "a b c losses total x model"},
		{"c = b + 1", "c = d + 1", "c d losses total y other", "c d losses total y other"},
		{"total.backward()", "total.backward(retain_graph=True)", "c d losses total y other", ""},
		{"total.backward(retain_graph=True)", "total.item()", "", ""},
		{"total.item()", "b.backward()", "a b x model", "a b x model"},
		{"losses.append(c)", "losses.append(c)\nb = losses", "a b c d losses x y model other", "a b c d losses x y model other"},
		{"b.backward()", "torch.autograd.grad(b, w)", "a b c d losses w x y model other", ""},
		{"import torch\n", "import numpy as torch\n", "", ""}, // no torch.autograd.grad then
		{"import numpy as torch\n", "import torch\n", "a b c d losses w x y model other", ""},
	} {
		if step.old != "" || step.new != "" {
			b.replace(step.old, step.new)
		}
		fresh := NewFile("p.py", b.src, b.tree)
		for _, name := range names {
			reach, freed := b.f.ReachesBackward(name, b.f.Tree.Root), b.f.FreedByBackward(name, b.f.Tree.Root)
			if want := slices.Contains(strings.Fields(step.reach), name); reach != want {
				t.Errorf("after %q: %s reaches a backward pass: %v, want %v", step.new, name, reach, want)
			}
			if want := slices.Contains(strings.Fields(step.freed), name); freed != want {
				t.Errorf("after %q: a freeing backward pass runs through %s: %v, want %v", step.new, name, freed, want)
			}
			if reach != fresh.ReachesBackward(name, fresh.Tree.Root) || freed != fresh.FreedByBackward(name, fresh.Tree.Root) {
				t.Errorf("after %q: %s answers differently from a fresh version", step.new, name)
			}
		}
	}
	// Two versions made from one (an edit given up for another) each
	// patch that version's sets, which neither may change: d's flows
	// come from two statements, so that an edit of one leaves d's set.
	b.replace("c = d + 1", "c = d + 1\nd = c")
	base, src, tree := b.f, b.src, b.tree
	if !base.ReachesBackward("d", base.Tree.Root) { // and its sets are found, to patch
		t.Fatal("d does not reach the backward pass")
	}
	for _, edit := range []string{"d = other(y) + z", "d = other( y)"} {
		b.f, b.src, b.tree = base, src, tree
		b.replace("d = other(y)", edit)
		fresh := NewFile("p.py", b.src, b.tree)
		for _, name := range append(names, "z") {
			if b.f.ReachesBackward(name, b.f.Tree.Root) != fresh.ReachesBackward(name, fresh.Tree.Root) {
				t.Errorf("%q made from the same version as another: %s answers differently from a fresh version", edit, name)
			}
		}
	}
}

// A script's taint is kept per segment (see buildModuleTaint): an edit
// recomputes its own statement and the later ones whose look-ups now find
// other events, or that asked about what changed, and every version's
// taint equals a fresh version's.
func TestModuleTaintFollowsTheStatementsEdited(t *testing.T) {
	b := newBuffer(t, `import torch

model = Net()
a = model(x)
b = a * 2
c = 1.0


def step(batch):
    return model(batch)


for batch in loader:
    with torch.no_grad():
        logits = model(batch)
    loss = criterion(logits.detach(), y)
    c += loss
d = step(x)
e = b.sum()
f = d + 1
c = c / 2
`)
	// Each name's events, at the source's offsets, as the rules see them.
	taintOf := func(f *File) map[string][]string {
		out := map[string][]string{}
		for name, events := range f.TaintOf(f.Tree.Root).events {
			for _, ev := range events {
				out[name] = append(out[name], fmt.Sprintf("%d %v %v %v %q", f.Tree.Real(ev.at), ev.tainted, ev.scalarLoss, ev.aug, f.Text(ev.value)))
			}
		}
		return out
	}
	// The statements whose part this version computed rather than took
	// from the last version's, by their first line.
	var lastParts []*moduleTaintPart
	recomputed := func(f *File) []string {
		var out []string
		for _, p := range f.TaintOf(f.Tree.Root).parts {
			if !slices.Contains(lastParts, p) {
				out = append(out, strings.SplitN(string(p.seg.Text()), "\n", 2)[0])
			}
		}
		lastParts = f.TaintOf(f.Tree.Root).parts
		return out
	}
	tainted := func(f *File) []string {
		var out []string
		for _, name := range []string{"model", "a", "b", "c", "logits", "loss", "d", "e", "f"} {
			if f.TaintOf(f.Tree.Root).nameTainted(name, len(f.Src)) {
				out = append(out, name)
			}
		}
		return out
	}
	for _, step := range []struct {
		old, new   string
		recomputed string // the statements recomputed, by first line, "|" between them
		tainted    string // the names holding history at the end
	}{
		{"", "", "model = Net()|a = model(x)|b = a * 2|c = 1.0|for batch in loader:|d = step(x)|e = b.sum()|f = d + 1|c = c / 2", "a b d e f"},
		// Its own statement, and the loop that reads c: a look-up finds
		// an event of another statement (the values that provablyDetached
		// follows are compared as nodes).
		{"c = 1.0", "c = 2.0", "c = 2.0|for batch in loader:", "a b d e f"},
		// A statement no other one reads.
		{"e = b.sum()", "e = b.sum( )", "e = b.sum( )", "a b d e f"},
		// a loses its history: b, then e, read it; d and f do not.
		{"a = model(x)", "a = model(x).detach()", "a = model(x).detach()|b = a * 2|e = b.sum( )", "d f"},
		{"a = model(x).detach()", "a = model(x)", "a = model(x)|b = a * 2|e = b.sum( )", "a b d e f"},
		// The loop's loss is computed from logits made under no_grad, and
		// c stays a number; out of no_grad the logits carry history, and
		// the loss and c with them.
		{"loss = criterion(logits.detach(), y)", "loss = criterion(logits, y)", "for batch in loader:|c = c / 2", "a b d e f"},
		{"    with torch.no_grad():\n        logits = model(batch)", "    logits = model(batch)", "for batch in loader:|c = c / 2", "a b c logits loss d e f"},
		// A summary that changes: the statement calling step asked about it.
		{"return model(batch)", "return model(batch).item()", "d = step(x)|f = d + 1", "a b c logits loss e"},
		// A switch turns autograd off for the statements after it, which
		// read nothing that changed.
		{"d = step(x)", "torch.set_grad_enabled(False)\nd = step(x)", "model = Net()|a = model(x)|b = a * 2|c = 2.0|for batch in loader:|d = step(x)|e = b.sum( )|f = d + 1|c = c / 2", "a b logits loss"},
		{"torch.set_grad_enabled(False)\n", "", "model = Net()|a = model(x)|b = a * 2|c = 2.0|for batch in loader:|d = step(x)|e = b.sum( )|f = d + 1|c = c / 2", "a b c logits loss e"},
		// A statement added before the others: nothing after it reads b2.
		{"b = a * 2", "b2 = a\nb = a * 2", "b2 = a", "a b c logits loss e"},
		// A statement removed: what read its events is recomputed.
		{"b2 = a\nb = a * 2\n", "", "e = b.sum( )", "a c logits loss"},
		{"import torch\n", "import torch\nimport numpy\n", "model = Net()|a = model(x)|c = 2.0|for batch in loader:|d = step(x)|e = b.sum( )|f = d + 1|c = c / 2", "a c logits loss"},
	} {
		if step.old != "" || step.new != "" {
			b.replace(step.old, step.new)
		}
		got := taintOf(b.f)
		if want := taintOf(NewFile("p.py", b.src, b.tree)); !reflect.DeepEqual(got, want) {
			t.Errorf("after %q: the module's taint\n%v\na fresh version's\n%v", step.new, got, want)
		}
		if parts := strings.Join(recomputed(b.f), "|"); parts != step.recomputed {
			t.Errorf("after %q: recomputed %q, want %q", step.new, parts, step.recomputed)
		}
		if names := strings.Join(tainted(b.f), " "); names != step.tainted {
			t.Errorf("after %q: tainted %q, want %q", step.new, names, step.tainted)
		}
	}
	// Two versions made from one (an edit given up for another): each
	// patches the events of that version, which neither may change.
	base, src, tree := b.f, b.src, b.tree
	before := taintOf(base)
	for _, edit := range []string{"a = model(x).detach()", "a = model(x)\nc = 3.0"} {
		b.f, b.src, b.tree = base, src, tree
		b.replace("a = model(x)", edit)
		if got, want := taintOf(b.f), taintOf(NewFile("p.py", b.src, b.tree)); !reflect.DeepEqual(got, want) {
			t.Errorf("%q made from the same version as another: the module's taint\n%v\na fresh version's\n%v", edit, got, want)
		}
	}
	if after := taintOf(base); !reflect.DeepEqual(before, after) {
		t.Errorf("the versions made from it changed the last version's taint:\n%v\nthen\n%v", before, after)
	}
}

// moduleEvents are the events of each name in f's module taint, as text.
func moduleEvents(f *File) map[string][]string {
	out := map[string][]string{}
	for name, evs := range f.TaintOf(f.Tree.Root).events {
		for _, ev := range evs {
			out[name] = append(out[name], fmt.Sprintf("%d %v %v %v %d %q", ev.at, ev.tainted, ev.scalarLoss, ev.aug, ev.from, f.Text(ev.value)))
		}
	}
	return out
}

// A version that asks nothing of the module (a keystroke in a function of
// a script, its module-level verdicts kept) still passes the module's
// taint on when told to (KeepModuleTaint): the version after it patches
// that taint instead of computing every statement's part again.
func TestKeptModuleTaintPassesOverVersionsThatDoNotAsk(t *testing.T) {
	b := newBuffer(t, `import torch

model = Net()
a = model(x)
b = a * 2


def step(batch):
    return batch


for batch in loader:
    loss = criterion(model(batch), y)
    total = loss
c = b.sum()
`)
	for _, keep := range []bool{true, false} {
		first := b.f.TaintOf(b.f.Tree.Root)
		b.replace("return batch", "return batch + 1") // nothing asks of the module
		if keep {
			b.f.KeepModuleTaint()
		}
		f := b.replace("c = b.sum()", "c = b.mean()")
		got := f.TaintOf(f.Tree.Root)
		reused := 0
		for _, p := range got.parts {
			if slices.Contains(first.parts, p) {
				reused++
			}
		}
		// Of five statements with assignments, the edited one is new.
		if want := map[bool]int{true: len(got.parts) - 1, false: 0}[keep]; reused != want || len(got.parts) < 4 {
			t.Errorf("kept %v: %d of %d parts taken from the first version, want %d", keep, reused, len(got.parts), want)
		}
		if g, w := moduleEvents(f), moduleEvents(NewFile("p.py", b.src, b.tree)); !reflect.DeepEqual(g, w) {
			t.Errorf("kept %v: the module's taint\n%v\na fresh version's\n%v", keep, g, w)
		}
		b.replace("c = b.mean()", "c = b.sum()")
	}
}

// After random edits of a script (assignments that pass history on or
// detach it, loops, no_grad blocks, functions whose summaries the module
// asks, imports, grad switches, broken code), each version's module taint
// equals a fresh version's, while most versions reuse most parts.
func TestModuleTaintEqualsAFreshOneAfterRandomEdits(t *testing.T) {
	var b strings.Builder
	b.WriteString("import torch\n\nmodel = Net()\nx = torch.randn(3)\n")
	for i := range 60 {
		switch i % 6 {
		case 0:
			fmt.Fprintf(&b, "v%d = model(x)\n", i%9)
		case 1:
			fmt.Fprintf(&b, "v%d = v%d * 2\n", i%9, (i+4)%9)
		case 2:
			fmt.Fprintf(&b, "\n\ndef f%d(a):\n    return model(a)\n\n\n", i%5)
		case 3:
			fmt.Fprintf(&b, "for batch in loader:\n    out = f%d(batch)\n    loss = criterion(out, y)\n    v%d += loss\n", i%5, i%9)
		case 4:
			fmt.Fprintf(&b, "with torch.no_grad():\n    v%d = model(v%d)\n", i%9, (i+2)%9)
		case 5:
			fmt.Fprintf(&b, "v%d, n = v%d.detach(), 1\n", i%9, (i+1)%9)
		}
	}
	snippets := []string{"v1 = model(x)\n", "v2 = v3.item()\n", "v4 += v5\n", "v3 = f1(x)\n", ".detach()", "(", "\n",
		"    return model(a).item()\n", "def f2(a):\n    return a.detach()\n", "import numpy as torch\n",
		"torch.set_grad_enabled(False)\n", "with torch.no_grad():\n    v6 = f3(v2)\n", "loss = criterion(v1, y)\n",
		"for b in loader:\n    v7 = model(b)\n", "v8 = torch.stack([v1, v2])\n", "model = None\n", "x"}
	rng := rand.New(rand.NewSource(11))
	src := []byte(b.String())
	tree, err := pyast.ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	prev := NewFile("p.py", src, tree)
	prev.TaintOf(prev.Tree.Root)
	events := moduleEvents
	reused, parts := 0, 0
	for i := range 300 {
		var text string
		var at int
		src, tree, text, at = randomEdit(t, rng, src, tree, snippets)
		got := NewFileFrom(prev, "p.py", src, tree)
		// Summaries are compared with the last version's (see carryOver),
		// as an analysis asks for them.
		for _, defs := range got.Functions {
			for _, d := range defs {
				got.summary(d)
			}
		}
		fresh := NewFile("p.py", src, tree)
		if g, w := events(got), events(fresh); !reflect.DeepEqual(g, w) {
			t.Fatalf("edit %d (%q at %d): the module's taint\n%v\na fresh version's\n%v\nsource:\n%s", i, text, at, g, w, src)
		}
		// No name left behind without events (typing leaves a name for
		// each prefix of one).
		if g, w := len(got.TaintOf(got.Tree.Root).events), len(fresh.TaintOf(fresh.Tree.Root).events); g != w {
			t.Fatalf("edit %d: the module's taint holds %d names, a fresh version's %d", i, g, w)
		}
		for _, p := range got.TaintOf(got.Tree.Root).parts {
			parts++
			if slices.Contains(prev.TaintOf(prev.Tree.Root).parts, p) {
				reused++
			}
		}
		prev = got
	}
	t.Logf("%d of %d parts reused", reused, parts)
	if reused < parts/2 {
		t.Errorf("%d of %d parts reused from the last version: the test no longer tests patching", reused, parts)
	}
}

// Whether a statement runs under no_grad may follow from a context manager
// of the file around it, in a with statement or as a decorator (see
// turnsGradOff): the taints carried over ask about those, and an edit of
// the context manager's body that turns autograd on or off again (the same
// calls, the same summary) is a change, so that every carried taint
// answers as a fresh version's.
func TestCarriedTaintsAskTheirContextManagers(t *testing.T) {
	b := newBuffer(t, `import contextlib
import torch


@contextlib.contextmanager
def quiet():
    with torch.set_grad_enabled(False):
        yield


@quiet()
def predict(model, loader):
    for x in loader:
        pred = model(x)


def evaluate(model, loader):
    for x in loader:
        with quiet():
            out = model(x)


with quiet():
    y = model(x)
`)
	scopes := map[string]*pyast.Node{"": b.f.Tree.Root}
	b.f.Tree.Walk(b.f.Tree.Root, func(n *pyast.Node) bool {
		if n.Kind() == "function_definition" {
			scopes[b.f.Text(n.Child("name"))] = n
		}
		return true
	})
	names := map[string]string{"predict": "pred", "evaluate": "out", "": "y"}
	check := func(step string, want bool) {
		b.summarise()
		fresh := NewFile("p.py", b.src, b.tree)
		for scope, name := range names {
			got := b.f.TaintOf(scopes[scope]).nameTainted(name, len(b.f.Src))
			if got != want || got != fresh.TaintOf(scopes[scope]).nameTainted(name, len(fresh.Src)) {
				t.Errorf("%s: %s holds history: %v, want %v (a fresh version: %v)", step, name, got, want, !got)
			}
		}
	}
	check("at first", false)
	b.replace("set_grad_enabled(False)", "set_grad_enabled(True)")
	check("autograd on", true)
	b.replace("set_grad_enabled(True)", "set_grad_enabled(False)")
	check("autograd off again", false)
}

// A function every call of which runs under no_grad runs under no_grad
// itself (calledOnlyUnderNoGrad): its carried taint asked about its
// callers, so that a call taken out of the no_grad block makes it hold
// history again, as in a fresh version.
func TestCarriedTaintsAskTheirCallers(t *testing.T) {
	b := newBuffer(t, `import torch


def helper(model, x):
    out = model(x)
    return 1


with torch.no_grad():
    helper(model, x)
`)
	var helper *pyast.Node
	b.f.Tree.Walk(b.f.Tree.Root, func(n *pyast.Node) bool {
		if n.Kind() == "function_definition" {
			helper = n
		}
		return true
	})
	for _, step := range []struct {
		old, new string
		want     bool // out holds history
	}{
		{"", "", false},
		{"with torch.no_grad():\n    helper(model, x)", "helper(model, x)", true},
		{"helper(model, x)", "with torch.no_grad():\n    helper(model, x)", false},
	} {
		if step.old != "" {
			b.replace(step.old, step.new)
		}
		fresh := NewFile("p.py", b.src, b.tree)
		got := b.f.TaintOf(helper).nameTainted("out", len(b.f.Src))
		if got != step.want || got != fresh.TaintOf(helper).nameTainted("out", len(fresh.Src)) {
			t.Errorf("after %q: out holds history: %v, want %v", step.new, got, step.want)
		}
	}
}

// A parameter's answers are remembered under its function's local key,
// but a parameter is judged by the module's functions of its name too (a
// parameter `model` names no model where the module defines a function
// `model`, see namesModule): when such a function comes or goes, the
// answers about the parameter are not carried. (A fuzzed file whose edit
// broke a def into an ERROR that tree-sitter read as a function `model`
// kept a parameter's answer that a fresh model did not give.)
func TestAParameterFollowsAFunctionOfItsName(t *testing.T) {
	buf := newBuffer(t, "import torch\n\n\ndef evaluate_one(model, loader):\n    for x in loader:\n        model(x)\n\n\ndef other():\n    return 1\n")
	callee := func(f *File) *pyast.Node {
		var found *pyast.Node
		f.Tree.Walk(f.Tree.Root, func(n *pyast.Node) bool {
			if n.Is("call") && f.Text(n) == "model(x)" {
				found = n.Child("function")
			}
			return found == nil
		})
		return found
	}
	if !buf.f.NamesModule(callee(buf.f)) {
		t.Fatal("a parameter named model: want a model")
	}
	for _, step := range []struct {
		old, new string
		want     bool
	}{{"def other():", "def model():", false}, {"def model():", "def other():", true}} {
		f := buf.replace(step.old, step.new)
		fresh := NewFile("p.py", buf.src, buf.tree).NamesModule(callee(buf.f))
		if got := f.NamesModule(callee(f)); got != fresh || got != step.want {
			t.Errorf("%q -> %q: the parameter names a model: %v, a fresh model says %v, want %v", step.old, step.new, got, fresh, step.want)
		}
	}
}

// A statement edited in its place takes the line starts before and after
// the change from the last version's index; a "\r" just before the change
// starts a line or not by the byte after it, which the edit may change.
func TestLinesOfAStatementEditedInPlace(t *testing.T) {
	b := newBuffer(t, "def f():\r\n    a = 1\r\n    b = 2\r\n    c = 3\r\n\r\n\r\ndef g():\r\n    return 4\r\n")
	for _, edit := range [][2]string{
		{"a = 1\r\n", "a = 1\r"},           // "\r\n" becomes a lone "\r": a line starts after it
		{"a = 1\r    b", "a = 1\r\n    b"}, // and back
		{"b = 2\r\n", "b = 2\r\n\r\n"},     // a line added
		{"c = 3\r\n", "c = 3\r\r\n"},       // a "\r" before the same "\n...": a break across the change
		{"c = 3\r\r\n", "c = 3\r\n"},
		{"c = 3", "c = [\n3,\n4]"}, // lines added with "\n" alone
		{"c = [\n3,\n4]", "c = 3"},
	} {
		f := b.replace(edit[0], edit[1])
		if f.Tree.Segments[0].Base != 0 || len(f.Tree.Segments) != 2 {
			t.Fatalf("after %q: the edited function moved or the file split (%d segments): the test edits a statement in its place", edit[1], len(f.Tree.Segments))
		}
		if !sameLines(f.Mapper, source.NewMapper(f.Tree.Src)) {
			t.Errorf("after %q: the line index differs from a fresh one", edit[1])
		}
	}
}

// Typing in a function after a script moves the script's last statement
// in the laid-out text every so often (see pyast.Segment.Code): that
// statement's code is unchanged, so the versions keep the verdicts on
// the script's module code (ModuleCodeKept) and the changed code does not
// reach the script's names (ChangedCodeReaches), though the moved
// statement itself is analysed again (its nodes are new).
func TestAStatementMovedUnchangedIsNoEditOfItsCode(t *testing.T) {
	b := newBuffer(t, "import torch\n\nlosses = []\nfor x in range(3):\n    losses.append(torch.ones(1) * x)\n\n\ndef report():\n    pass\n")
	losses := []uint64{nameHash("losses")}
	moves := 0
	for _, key := range "    # typed key by key after the script, until the room after it runs out, " + strings.Repeat("and on ", 40) {
		last := b.tree
		ed := pyast.NewEditor(b.tree, b.src)
		ed.Replace(len(b.src), len(b.src), string(key))
		next, err := ed.Parse(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		b.src, b.tree = ed.Text(), next
		b.f = NewFileFrom(b.f, "p.py", b.src, b.tree)
		if b.tree.Root != last.Root {
			break // past all the room there is: laid out afresh, every segment new
		}
		if !b.f.ModuleCodeKept() {
			t.Fatalf("typing %q in the function changed the module's code", b.src[strings.LastIndexByte(string(b.src), '\n')+1:])
		}
		if b.f.ChangedCodeReaches(losses) {
			t.Fatalf("typing %q in the function reaches the script's losses", b.src[strings.LastIndexByte(string(b.src), '\n')+1:])
		}
		focus, ok := b.f.Reanalysed()
		if !ok {
			t.Fatal("a comment typed in a function analyses the whole file again")
		}
		for _, seg := range b.tree.Segments {
			if !slices.Contains(last.Segments, seg) && slices.ContainsFunc(last.Segments, func(s *pyast.Segment) bool { return s.Code() == seg.Code() }) {
				moves++
				if !focus[seg] {
					t.Fatalf("the moved statement %q is not analysed again", seg.Text())
				}
			}
		}
	}
	if moves == 0 {
		t.Fatal("no statement moved: the test tests nothing")
	}
}

// The stores graph a version patches from the last one's (see storesGraph)
// holds what a graph built from its segments does, after random edits; a
// version that takes it over leaves the last one without, and a second
// version built from the same one builds its own.
func TestPatchedStoresGraphsEqualBuiltOnes(t *testing.T) {
	var b strings.Builder
	b.WriteString("import torch\n\nlosses, total = [], 0\n")
	for i := range 30 {
		fmt.Fprintf(&b, "\nfor x in loader%d:\n    loss = model(x)\n    losses.append(loss)\n    total += loss\n", i%4)
		if i%4 == 0 {
			fmt.Fprintf(&b, "\n\ndef f%d(a, b):\n    self.t = a\n    b.extend([a, total])\n    return b\n", i)
		}
	}
	snippets := []string{"kept = losses\n", "total += x\n", "outs.append(total)\n", "a, b = b, a\n", "x", "\n", "(", "for y in losses:\n    ",
		"def g(a):\n    q = a\n    return q\n", "self.u = total\n", "h.update(loss=loss)\n", "    losses.insert(0, loss)\n"}
	built := func(f *File) map[uint64][]uint64 {
		into := map[uint64][]uint64{}
		for _, ix := range f.indexes {
			pairs := f.storesOf(ix)
			for k := 0; k+1 < len(pairs); k += 2 {
				into[pairs[k]] = append(into[pairs[k]], pairs[k+1])
			}
		}
		return into
	}
	same := func(a, b map[uint64][]uint64) bool {
		for _, m := range []map[uint64][]uint64{a, b} {
			for h, froms := range m {
				if len(froms) == 0 {
					delete(m, h)
				} else {
					slices.Sort(froms)
				}
			}
		}
		return maps.EqualFunc(a, b, slices.Equal[[]uint64])
	}
	graphOf := func(f *File) map[uint64][]uint64 {
		var copied map[uint64][]uint64
		f.readStores(func(into map[uint64][]uint64) {
			copied = map[uint64][]uint64{}
			for h, froms := range into {
				copied[h] = slices.Clone(froms)
			}
		})
		return copied
	}
	rng := rand.New(rand.NewSource(11))
	buf := newBuffer(t, b.String())
	src, tree, prev := buf.src, buf.tree, buf.f
	graphOf(prev)
	patched := 0
	for i := range 150 {
		src, tree, _, _ = randomEdit(t, rng, src, tree, snippets)
		f := NewFileFrom(prev, "p.py", src, tree)
		if f.stores.last != nil {
			patched++
		}
		if i%10 == 0 {
			// A second version built from the same one: it builds its
			// own once the first took the graph over.
			other := NewFileFrom(prev, "p.py", src, tree)
			graphOf(f)
			if got := graphOf(other); !same(got, built(other)) {
				t.Fatalf("edit %d: a second version's graph differs from one built from its segments", i)
			}
		}
		if got := graphOf(f); !same(got, built(f)) {
			t.Fatalf("edit %d: the patched graph differs from one built from the segments", i)
		}
		prev.stores.mu.Lock()
		handedOn := prev.stores.into == nil
		prev.stores.mu.Unlock()
		if !handedOn {
			t.Fatalf("edit %d: the last version kept its graph", i)
		}
		prev = f
	}
	if patched < 140 {
		t.Fatalf("%d of 150 versions took the last one's graph over, want nearly all", patched)
	}
}

// Keeps tells the segments a version shares with the one it was built
// from as a lookup by offset does, after random edits (one or two
// segments removed, or many by a paste), and for a version it was not
// built from.
func TestKeepsTellsTheSegmentsShared(t *testing.T) {
	var b strings.Builder
	for i := range 60 {
		fmt.Fprintf(&b, "\n\ndef f%d(x):\n    return x + %d\n\ny%d = f%d(1)\n", i, i, i, i)
	}
	snippets := []string{"z = 1\n", "x", "\n", "(", "def g():\n    pass\n", "\n\nclass C:\n    pass\n"}
	rng := rand.New(rand.NewSource(5))
	buf := newBuffer(t, b.String())
	src, tree, first := buf.src, buf.tree, buf.f
	prev := first
	var err error
	removed := 0
	for i := range 120 {
		if i%30 == 29 { // a paste over many statements
			ed := pyast.NewEditor(tree, src)
			at := rng.Intn(len(src) / 2)
			ed.Replace(at, at+len(src)/3, "w = 2\n")
			if tree, err = ed.Parse(context.Background()); err != nil {
				t.Fatal(err)
			}
			src = ed.Text()
		} else {
			src, tree, _, _ = randomEdit(t, rng, src, tree, snippets)
		}
		f := NewFileFrom(prev, "p.py", src, tree)
		for _, last := range []*File{prev, first} {
			for _, seg := range last.Tree.Segments {
				want := f.SegmentAt(seg.Base) == seg
				if got := f.Keeps(last, seg); got != want {
					t.Fatalf("edit %d: Keeps says %v of a segment of the %s version, a lookup %v", i, got, map[bool]string{true: "last", false: "first"}[last == prev], want)
				}
				if last == prev && !want {
					removed++
				}
			}
		}
		prev = f
	}
	if removed == 0 {
		t.Fatal("no edit removed a segment: the test tests nothing")
	}
}
