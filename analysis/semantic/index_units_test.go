package semantic

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/vramlint/vramlint/analysis/pyast"
)

// A class's index built from the last version's, the methods an edit left
// alone taken over (see indexUnits), is the index built afresh: after each
// of 400 random edits of classes with nested functions, lambdas, global
// and nonlocal declarations, nested classes, attributes on self,
// decorators (one in a loop of the class's body), imports, DataLoaders,
// grad switches and noqa comments, every fresh segment's index (with its
// calls by name, loop calls and import facts) is compared, list by list,
// with one built from nothing for the same tree, and with one built in a
// single walk (no units).
func TestTakenOverIndexEqualsAFreshOne(t *testing.T) {
	var b strings.Builder
	b.WriteString("import torch\ncounter = 0\n")
	for k := range 3 {
		fmt.Fprintf(&b, `

@dataclass_like
class Model%[1]d(torch.nn.Module):
    scale = 2  # noqa: E501
    act = lambda self, x: x * 2

    def __init__(self, dim, device="cuda"):
        super().__init__()
        self.net = torch.nn.Linear(dim, dim).to(device)
        self.device = device
        self.history, self.best = [], None

    def loaders(self, ds):
        torch.set_grad_enabled(False)
        return torch.utils.data.DataLoader(ds, num_workers=2)

    @torch.no_grad()
    def evaluate(self, loader):
        global counter
        counter += 1
        outs = []
        for x in loader:
            outs.append(self.net(x.to(self.device)))
        return outs

    def train_step(self, x, *args, **kwargs):
        import math
        total = 0
        def closure(y=x):
            nonlocal total
            total = total + self.net(y).sum()
            return total
        for _ in range(3):
            closure().backward()
        self.history.append(total)
        return math.sqrt(2)

    class Config:
        lr = 0.1

        def value(self):
            helper = _safe_import("torch.optim.SGD")
            return helper

    for _variant in range(2):
        @register(_variant)
        def variant(self, x):
            return x

    def make(self):
        class Local(torch.nn.Module):
            def forward(self, x):
                return x
        return Local()
`, k)
		for i := range 6 {
			fmt.Fprintf(&b, "\n    def helper%d(self, x):\n        y = torch.zeros(%d)\n        return len(x) + y.sum().item()\n", i, i)
		}
	}
	text := b.String()
	snippets := []string{"x", "\n", "(", ")", "    ", "        y = self.net(x)\n", "        global counter\n", "self.extra = 1", "lambda z: z",
		"        def inner(q):\n            return q\n", "# noqa\n", "\t", "        class Nested:\n            pass\n", "total += 1\n"}
	defer func(from int) { unitsFrom = from }(unitsFrom)
	unitsFrom = 0 // classes of a few dozen lines
	rng := rand.New(rand.NewSource(7))
	var buf *buffer
	takenOver, compared := 0, 0
	for i := range 400 {
		// Random edits soon leave no class whole (a line typed at column
		// 0 ends it): the text is made afresh every few.
		if i%8 == 0 {
			buf = newBuffer(t, text)
		}
		next, tree, typed, at := randomEdit(t, rng, buf.src, buf.tree, snippets)
		got := NewFileFrom(buf.f, "p.py", next, tree)
		for _, k := range got.carried.fresh {
			ix := got.indexes[k]
			if ix.units != nil {
				takenOver += ix.units.takenOver
			}
			fresh := newSegmentIndex(tree.Segments[k], tree)
			fresh.callIndex(got)
			ix.callIndex(got)
			fresh.importFacts(got)
			ix.importFacts(got)
			want := dumpIndex(fresh, true)
			if have := dumpIndex(ix, true); have != want {
				t.Fatalf("edit %d (%q at %d): segment %d's index differs from a fresh one's:\n%s", i, typed, at, k, firstDifference(have, want))
			}
			// And what it holds is what one walk of the segment finds.
			indexByUnits = false
			oneWalk := newSegmentIndex(tree.Segments[k], tree)
			oneWalk.callIndex(got)
			oneWalk.importFacts(got)
			want = dumpIndex(oneWalk, false)
			indexByUnits = true
			if have := dumpIndex(ix, false); have != want {
				t.Fatalf("edit %d (%q at %d): segment %d's index differs from one built in one walk:\n%s", i, typed, at, k, firstDifference(have, want))
			}
			compared++
		}
		buf.src, buf.tree, buf.f = next, tree, got
	}
	if takenOver < 600 {
		t.Errorf("%d methods' shares taken over in 400 edits (%d indexes compared)", takenOver, compared)
	}
}

// firstDifference returns the first line where two dumps differ.
func firstDifference(have, want string) string {
	h, w := strings.Split(have, "\n"), strings.Split(want, "\n")
	for i := range min(len(h), len(w)) {
		if h[i] != w[i] {
			return fmt.Sprintf("line %d:\n  got  %s\n  want %s", i, h[i], w[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(h), len(w))
}

// dumpIndex writes out what a segment index holds, a node as its address
// (indexes of one tree hold the same nodes) and a scope as its function;
// where its methods' shares lie too with units.
func dumpIndex(ix *segmentIndex, units bool) string {
	var b strings.Builder
	node := func(n *pyast.Node) string {
		if n == nil {
			return "nil"
		}
		return fmt.Sprintf("%s@%d-%d/%p", n.Kind(), n.Start(), n.End(), n)
	}
	nodes := func(label string, ns []*pyast.Node) {
		fmt.Fprintf(&b, "%s:", label)
		for _, n := range ns {
			fmt.Fprintf(&b, " %s", node(n))
		}
		b.WriteString("\n")
	}
	nodes("calls", ix.calls)
	nodes("loops", ix.loops)
	nodes("assignments", ix.assignments)
	nodes("comments", ix.comments)
	nodes("noqa", ix.noqaComments)
	nodes("definitions", ix.definitions)
	nodes("imports", ix.imports)
	nodes("devices", ix.deviceCandidates)
	for _, fn := range ix.functions {
		fmt.Fprintf(&b, "function %q %s\n", fn.name, node(fn.node))
	}
	for _, c := range ix.classes {
		fmt.Fprintf(&b, "class %q %s", c.Name, node(c.Node))
		for _, m := range slices.SortedFunc(maps.Values(c.Methods), func(a, b *pyast.Node) int { return a.Start() - b.Start() }) {
			fmt.Fprintf(&b, " method %s", node(m))
		}
		for _, base := range c.Bases {
			fmt.Fprintf(&b, " base %s", node(base))
		}
		for _, m := range slices.Sorted(maps.Keys(c.Methods)) {
			fmt.Fprintf(&b, " %s=%s", m, node(c.Methods[m]))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "headers %q\n", ix.classHeaders)
	scopeOf := map[*localScope]*pyast.Node{}
	for fn, s := range ix.scopes {
		scopeOf[s] = fn
	}
	for _, bd := range ix.bindings {
		fmt.Fprintf(&b, "binding %q %s = %s class %q scope %s\n", bd.name, node(bd.target), node(bd.value), bd.class, node(scopeOf[bd.scope]))
	}
	fns := slices.SortedFunc(maps.Keys(ix.scopes), func(a, c *pyast.Node) int { return a.Start() - c.Start() })
	for _, fn := range fns {
		s := ix.scopes[fn]
		fmt.Fprintf(&b, "scope %s params %q global %v nonlocal %v names", node(fn), s.params, slices.Sorted(maps.Keys(s.global)), slices.Sorted(maps.Keys(s.nonlocal)))
		for name, values := range s.names.all() {
			fmt.Fprintf(&b, " %q:", name)
			for _, v := range values {
				fmt.Fprintf(&b, " %s", node(v))
			}
		}
		b.WriteString("\n")
	}
	for name, values := range ix.classAttributes.all() {
		fmt.Fprintf(&b, "attribute %q:", name)
		for _, v := range values {
			fmt.Fprintf(&b, " %s", node(v))
		}
		b.WriteString("\n")
	}
	if ix.byName != nil {
		for name, calls := range ix.byName.all() {
			fmt.Fprintf(&b, "calls of %q:", name)
			for _, c := range calls {
				fmt.Fprintf(&b, " %s", node(c))
			}
			b.WriteString("\n")
		}
		for _, lc := range ix.loopCalls {
			fmt.Fprintf(&b, "loop call %s in %s\n", node(lc.Call), node(lc.Loop))
		}
	}
	if ix.facts != nil {
		nodes("loaders", ix.facts.dataLoaders)
		nodes("grad switches", ix.facts.gradSwitches)
	}
	fmt.Fprintf(&b, "indent %d module code %v breaks %+v\nmentions %v\nlocal only %v\nbloom %v\n", ix.indent, ix.moduleCode, ix.breaks, ix.mentions, ix.localOnly, ix.bloom)
	if u := ix.units; u != nil && units {
		nodes("units", u.roots)
		for i, part := range u.parts {
			fmt.Fprintf(&b, "unit %d runs %v indent %d local %v other %v\n", i, part.runs, part.indent, part.local, part.other)
			nodes("scopes", part.scopes)
		}
		nodes("declarations", u.declarations)
		for _, p := range u.params {
			fmt.Fprintf(&b, "params %s %q\n", node(p.fn), p.names)
		}
	}
	return b.String()
}
