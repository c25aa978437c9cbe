package semantic

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/vramlint/vramlint/analysis/pyast"
)

// Step loops. Memory that grows per iteration only matters for a loop that
// runs many training or evaluation steps: over batches, steps or epochs.
// The loops inside a forward pass (over layers, levels, heads, time steps
// of an RNN cell), in a loss function (over loss terms, mini-batches whose
// losses are summed and returned), in a constructor (building layers) or
// over files and configurations run a bounded number of times per step, and
// whatever they collect is dropped or returned with the step's result.

var (
	// Iterables that hold batches.
	// (`batches` alone is not enough: a module splits one input into
	// batches too.)
	loaderName = regexp.MustCompile(`(?i)(loader|(^|_)dl$|^dl_|batch_iter|data_iter|(^|_)iterator$|(^|_)batch_gen)`)
	// Datasets and loaders counted through: range(len(train_ds)).
	datasetName = regexp.MustCompile(`(?i)(dataset|(^|_)ds$|(^|_)set$|^data$|loader|(^|_)dl$)`)
	// Base classes named like parts of a model.
	moduleBaseName = regexp.MustCompile(`(Module|Head|Net|Model|Layer|Block|Backbone|Neck|Encoder|Decoder|Loss|Attention|Embedding)$`)
	// Loop variables that hold a batch.
	batchName = regexp.MustCompile(`(?i)^(batch|batch_data|minibatch|mb|data|sample|inputs?|images?|imgs?|xb|x_batch)$`)
	// Loop variables and counts of steps, batches, epochs.
	stepName = regexp.MustCompile(`(?i)^(step|steps|global_step|it|iter|iters|iteration|iterations|n_iter|num_iters|num_steps|n_steps|total_steps|max_steps|train_steps|batch|batch_idx|batch_i|i_batch|batch_id|bidx|epoch|epochs|ep|n_epochs|num_epochs|max_epochs|episode|episodes|n_episodes|num_episodes|update|updates|num_updates)$`)
)

// StepKind says why a loop runs training or evaluation steps.
type StepKind uint8

// Step kinds, strongest first.
const (
	NotStepLoop StepKind = iota
	// TrainingLoop: the body runs a backward pass or an optimizer step,
	// directly or through a function of this file that does, or a
	// conventional step method (`model.training_step(batch)`).
	TrainingLoop
	// LoaderLoop: the loop iterates a data loader (`for x, y in loader`,
	// through enumerate, tqdm, zip, iter, or a local name bound to such a
	// wrapper).
	LoaderLoop
	// ModelLoop: the loop counts steps, batches or epochs (`for step in
	// range(n)`), binds a batch (`for x, y in data`), pulls batches with
	// next(), or feeds the model what it iterates (`for path in paths:
	// model(load(path))`), and its body runs a model, outside a module's
	// own code and without loading weights or building a DataLoader on
	// each iteration.
	ModelLoop
	// RunLoop: each iteration runs whole training runs or epochs in
	// functions that loop over their own steps (`for cfg in configs:
	// bench_one(cfg)`); the loop itself neither iterates a loader nor
	// counts steps or binds a batch.
	RunLoop
)

// IsStepLoop reports whether loop (a for or while statement) runs training
// or evaluation steps (see StepKind).
func (f *File) IsStepLoop(loop *pyast.Node) bool { return f.StepLoopKind(loop) != NotStepLoop }

// StepLoopKind says whether and why loop runs training or evaluation steps.
//
// The answer is remembered with the names it looked at, and carried to
// the next version of the buffer while those names' bindings, the
// functions it used and the file's imports and class headers stay the
// same (see File.carryOver): a keystroke recomputes only the loops it
// could have changed.
func (f *File) StepLoopKind(loop *pyast.Node) StepKind {
	return remember(f, &f.memos.stepLoops, loop, func() *stepFact {
		v := &stepFact{asked: asked{}, segment: f.segmentOf(loop)}
		v.kind = f.stepLoopKind(loop, v.asked)
		v.signature = askedSignatureOf(v.asked)
		return v
	}).kind
}

// stepFact is a loop's StepKind and what it was computed from.
type stepFact struct {
	kind      StepKind
	asked     asked
	signature askedSignature
	segment   *pyast.Segment
}

func (f *File) stepLoopKind(loop *pyast.Node, reads asked) StepKind {
	body := loop.Child("body")
	if body == nil || RunsOnce(loop) || overLiterals(loop) {
		return NotStepLoop
	}
	scope := Scope(loop)
	var calls []*pyast.Node
	for _, c := range f.CallsIn(body) {
		if InScope(c, scope) {
			calls = append(calls, c)
		}
	}
	// A backward pass or an optimizer step first: most step loops have
	// one, and finding it reads no binding but the optimizer's.
	for _, c := range calls {
		if isBackwardCall(f, c) {
			return TrainingLoop
		}
		if f.MethodName(c) == "step" {
			reads.name(f, Receiver(c))
			if isOptimizerStep(f, c) {
				return TrainingLoop
			}
		}
	}
	runsModel, feedsModel, runs := false, false, false
	for _, c := range calls {
		reads.call(f, c)
		if def := f.resolveCall(c); def != nil {
			s := f.summary(def)
			reads.summary(s)
			if s.Trains && !s.TrainsInLoop {
				return TrainingLoop
			}
			runs = runs || s.Trains
			runsModel = runsModel || s.RunsModel
		} else if facts, ok := f.projectCall(c); ok {
			if facts.Trains && !facts.TrainsInLoop {
				return TrainingLoop
			}
			runs = runs || facts.Trains
			runsModel = runsModel || facts.RunsModel
		}
		// `for model in self.members: model.loss(x, y)` sums an ensemble's
		// losses in one step, as a loop over layers runs a forward.
		if ConventionalStepCall(f, c) && !f.isLoopVar(loop, Receiver(c)) {
			return TrainingLoop
		}
		if f.IsModelCall(c) && !f.loopVarCalled(loop, c) {
			runsModel = true
			feedsModel = feedsModel || f.fedFromLoop(loop, c)
		}
	}
	if runs {
		// Training runs in called functions' own loops: this loop is over
		// runs or epochs, unless it hands them batches or counts steps.
		// One that builds a DataLoader for them is over datasets (data
		// files loaded one by one), whatever it iterates.
		if !buildsLoader(f, calls) && (loop.Is("for_statement") && f.loaderLike(loop.Child("right"), anyLoader, 0, reads) ||
			f.countsSteps(loop) || f.bindsBatch(loop) || pullsBatches(f, calls)) {
			return TrainingLoop
		}
		return RunLoop
	}
	switch {
	case loop.Is("for_statement") && f.loaderLike(loop.Child("right"), anyLoader, 0, reads):
		return LoaderLoop
	case runsModel && !f.inModuleCode(loop) && !loadsWeights(f, calls) && !buildsLoader(f, calls) &&
		!f.overInnerDimension(loop, reads) &&
		(f.countsSteps(loop) || f.bindsBatch(loop) || pullsBatches(f, calls) || feedsModel):
		// Inside a module's own code, what it calls are its submodules; a
		// loop that loads weights each time is over checkpoints or models;
		// one along an inner dimension runs one input's tiles.
		return ModelLoop
	}
	return NotStepLoop
}

// IteratesData reports whether a loop hands the model data it iterates: a
// for loop over a loader, one binding a batch or feeding a model call what
// it iterates (`for path in paths: model(load(path))`), a loop pulling
// batches with next(). Not a loop that only counts (`for i in
// range(iters): model(inp)`: a benchmark, a warm-up).
func (f *File) IteratesData(loop *pyast.Node) bool {
	body := loop.Child("body")
	if body == nil {
		return false
	}
	calls := f.CallsIn(body)
	if pullsBatches(f, calls) {
		return true
	}
	if !loop.Is("for_statement") {
		return false
	}
	if f.IteratesLoader(loop) || f.bindsBatch(loop) {
		return true
	}
	for _, c := range calls {
		if f.IsModelCall(c) && f.fedFromLoop(loop, c) {
			return true
		}
	}
	return false
}

// fedFromLoop reports whether the model call takes what the for loop
// iterates: an argument mentions the loop's variable, or a name the body
// assigned from it (`img = load(path); out = model(img)`).
func (f *File) fedFromLoop(loop, call *pyast.Node) bool {
	left, args := loop.Child("left"), call.Child("arguments")
	if !loop.Is("for_statement") || left == nil || args == nil {
		return false
	}
	target := left
	if it := loop.Child("right"); it.Is("call") && f.Text(it.Child("function")) == "enumerate" &&
		left.Is("pattern_list", "tuple_pattern") && len(left.NamedChildren()) == 2 {
		target = left.NamedChildren()[1] // enumerate's index only counts
	}
	vars := map[string]bool{}
	pyast.Walk(target, func(n *pyast.Node) bool {
		if n.Is("identifier") {
			vars[f.Text(n)] = true
		}
		return true
	})
	mentions := func(e *pyast.Node) bool {
		found := false
		pyast.Walk(e, func(n *pyast.Node) bool {
			found = found || n.Is("identifier") && vars[f.Text(n)]
			return !found
		})
		return found
	}
	for _, a := range f.AssignmentsIn(loop.Child("body")) {
		if a.End() > call.Start() {
			break
		}
		if right := a.Child("right"); right != nil && mentions(right) {
			for _, name := range targetNames(f, a.Child("left")) {
				if !strings.Contains(name, ".") {
					vars[name] = true
				}
			}
		}
	}
	return mentions(args)
}

// loadsWeights reports whether one of the calls loads a model's weights
// (`model.load_state_dict(...)`, `torch.load(...)`, `from_pretrained`).
func loadsWeights(f *File, calls []*pyast.Node) bool {
	for _, c := range calls {
		switch f.LastName(c.Child("function")) {
		case "load_state_dict", "from_pretrained", "load_checkpoint", "load_from_checkpoint":
			return true
		}
		if f.Callee(c) == "torch.load" {
			return true
		}
	}
	return false
}

// buildsLoader reports whether one of calls builds a DataLoader: a loop
// that builds one on each iteration (and pulls a batch from it) runs the
// model over a dataset or a configuration at a time, not over batches.
func buildsLoader(f *File, calls []*pyast.Node) bool {
	for _, c := range calls {
		if f.LastName(c.Child("function")) == "DataLoader" {
			return true
		}
	}
	return false
}

// inModuleCode reports whether n is in a method of an nn.Module subclass
// or of a class with a forward method.
func (f *File) inModuleCode(n *pyast.Node) bool {
	fn := outermostFunction(n)
	if fn == nil {
		return false
	}
	c := f.EnclosingClass(fn)
	if c == nil {
		return false
	}
	// A class with a forward method, or whose base is named like a
	// module (mmdet's `AutoAssignHead(FCOSHead)`), is a module even when
	// its base class comes from elsewhere in the project.
	if f.IsModule(c) || c.Methods["forward"] != nil {
		return true
	}
	for _, b := range c.Bases {
		if f.moduleLikeBase(b, 0) {
			return true
		}
	}
	return false
}

// moduleLikeBase reports whether the base class expression b makes a class
// module-like by name: a base of this file or of the project is followed
// to its own bases, and a base outside them (a library's) counts when it
// is named like a module. So mmdet's `AutoAssignHead(FCOSHead)` is a
// module (FCOSHead's bases end in mmengine's BaseModule), and DeepChem's
// `TorchModel(Model)`, a wrapper around a model, is not (its Model
// derives from object).
func (f *File) moduleLikeBase(b *pyast.Node, depth int) bool {
	if depth > 8 {
		return false
	}
	if b.Is("identifier") {
		if c := f.Classes[f.Text(b)]; c != nil {
			for _, cb := range c.Bases {
				if f.moduleLikeBase(cb, depth+1) {
					return true
				}
			}
			return false
		}
	}
	if q := f.QualifiedName(b); q != "" && f.Project != nil {
		if known, like := f.moduleLikeProjectBase(f.Path, q, depth); known {
			return like
		}
	}
	return moduleBaseName.MatchString(f.LastName(b))
}

// moduleLikeProjectBase is moduleLikeBase for a base qualified as the file
// at from sees it; known is false when it is not a class of the project.
func (f *File) moduleLikeProjectBase(from, q string, depth int) (known, like bool) {
	if depth > 8 {
		return false, false
	}
	path, name, ok := f.Project.Resolve(from, q)
	if !ok {
		return false, false
	}
	bases, ok := f.Project.ClassBases(path, name)
	if !ok {
		return false, false
	}
	for _, b := range bases {
		b = canonical(b)
		if isModuleBase(b) {
			return true, true
		}
		if known, like := f.moduleLikeProjectBase(path, b, depth+1); known {
			if like {
				return true, true
			}
			continue
		}
		if moduleBaseName.MatchString(b[strings.LastIndexByte(b, '.')+1:]) {
			return true, true
		}
	}
	return true, false
}

// InForward reports whether n is inside the forward method of a module
// (see inModuleCode): code that runs as one step of whoever calls the
// module, never a loop over batches of its own.
func (f *File) InForward(n *pyast.Node) bool {
	fn := outermostFunction(n)
	return fn != nil && f.Text(fn.Child("name")) == "forward" && f.inModuleCode(n)
}

// outermostFunction returns the outermost function definition holding n
// (a method, for code in a class), or nil.
func outermostFunction(n *pyast.Node) *pyast.Node {
	fn := n.Ancestor("function_definition")
	for fn != nil && fn.Ancestor("function_definition") != nil {
		fn = fn.Ancestor("function_definition")
	}
	return fn
}

// bindsBatch reports whether a for loop binds what a batch looks like: an
// input and a target (`for x, y in data`, `for i, (x, y) in ...`) or a name
// for a batch.
func (f *File) bindsBatch(loop *pyast.Node) bool {
	left := loop.Child("left")
	if !loop.Is("for_statement") || left == nil {
		return false
	}
	it := loop.Child("right")
	if it.Is("call") && f.Text(it.Child("function")) == "enumerate" && left.Is("pattern_list", "tuple_pattern", "tuple") {
		// for i, item in enumerate(...): the item decides.
		if elems := left.NamedChildren(); len(elems) == 2 {
			left = elems[1]
			if left.Is("parenthesized_expression") && len(left.NamedChildren()) == 1 {
				left = left.NamedChildren()[0]
			}
		}
	}
	if left.Is("identifier") {
		return batchName.MatchString(f.Text(left))
	}
	return left.Is("pattern_list", "tuple_pattern", "tuple") && len(left.NamedChildren()) >= 2
}

// overInnerDimension reports whether loop walks a tensor's inner
// dimension: `for j in range(0, z.shape[3], stride)`, `range(x.size(-1))`,
// or a size unpacked from a shape (`b, c, t, h, w = z.shape`, then
// `range(0, h, stride)`, or `range(t // chunk)`). Those are the tiles or
// windows of one input (a VAE's tiled decode, sliding-window inference,
// an RNN unrolled over time), whose outputs make one result, not batches;
// dimension 0 is the batch's, a loop over samples. The names it looks up
// go into reads.
func (f *File) overInnerDimension(loop *pyast.Node, reads asked) bool {
	it := loop.Child("right")
	if !loop.Is("for_statement") || !it.Is("call") || f.Text(it.Child("function")) != "range" || it.Child("arguments") == nil {
		return false
	}
	return f.innerDimension(it.Child("arguments"), reads, 0)
}

// innerDimension reports whether e mentions the size of a tensor's
// dimension other than the first, directly or through names bound to one
// (two bindings deep).
func (f *File) innerDimension(e *pyast.Node, reads asked, depth int) bool {
	found := false
	pyast.Walk(e, func(n *pyast.Node) bool {
		if found {
			return false
		}
		var dim *pyast.Node
		switch {
		case n.Is("subscript") && n.Child("value").Is("attribute") && f.Text(n.Child("value").Child("attribute")) == "shape":
			dim = n.Child("subscript")
		case n.Is("call") && f.MethodName(n) == "size":
			dim = f.Arg(n, "dim", 0)
		case n.Is("identifier") && !n.Parent().Is("attribute", "keyword_argument") && depth < 2:
			// The assignments of its scope, tuples included (which
			// BindingsOf leaves out: no one value is the name's).
			reads.name(f, n)
			name, scope := f.Text(n), Scope(n)
			for _, a := range f.AssignmentsIn(scope) {
				if !InScope(a, scope) || a.Start() > n.Start() || a.Child("right") == nil {
					continue
				}
				left, right := a.Child("left"), a.Child("right")
				if left.Is("identifier") && f.Text(left) == name && f.innerDimension(right, reads, depth+1) ||
					f.unpackedInnerSize(left, right, name) {
					found = true
					break
				}
			}
			return false
		}
		found = dim.Is("integer", "unary_operator") && f.Text(dim) != "0"
		return !found
	})
	return found
}

// unpackedInnerSize reports whether the assignment `left = right` unpacks
// a tensor's shape into a tuple in which name is not first: `b, c, h, w =
// x.shape` binds h.
func (f *File) unpackedInnerSize(left, right *pyast.Node, name string) bool {
	args := right.Child("arguments")
	shape := right.Is("attribute") && f.Text(right.Child("attribute")) == "shape" ||
		right.Is("call") && f.MethodName(right) == "size" && args != nil && len(args.NamedChildren()) == 0
	if !shape || !left.Is("pattern_list", "tuple_pattern", "list_pattern") {
		return false
	}
	for i, el := range left.NamedChildren() {
		if el.Is("identifier") && f.Text(el) == name {
			return i > 0
		}
	}
	return false
}

// overLiterals reports whether loop is a for loop over a list, tuple or set
// written out of constants (`for reg in [None, "l1", "l2"]`): a sweep over
// configurations, each iteration a run of its own, as many as the
// literal's items.
func overLiterals(loop *pyast.Node) bool {
	if !loop.Is("for_statement") {
		return false
	}
	items := loop.Child("right")
	if !items.Is("list", "tuple", "set") || len(items.NamedChildren()) == 0 {
		return false
	}
	for _, item := range items.NamedChildren() {
		if !constant(item) {
			return false
		}
	}
	return true
}

// constant reports whether e is a literal: a string, a number, None, True
// or False, or a tuple of literals.
func constant(e *pyast.Node) bool {
	switch {
	case e.Is("string", "concatenated_string", "integer", "float", "none", "true", "false"):
		return true
	case e.Is("unary_operator"):
		return constant(e.FirstNamed())
	case e.Is("tuple", "parenthesized_expression"):
		for _, c := range e.NamedChildren() {
			if !constant(c) {
				return false
			}
		}
		return true
	}
	return false
}

// RunsOnce reports whether a loop's body ends in an unconditional break,
// return or raise: it runs at most once (`for batch in loader: init(batch);
// break`).
func RunsOnce(loop *pyast.Node) bool {
	return LastStatement(loop.Child("body")).Is("break_statement", "return_statement", "raise_statement")
}

// LastStatement returns the last statement of a block, past trailing
// comments, or nil.
func LastStatement(block *pyast.Node) *pyast.Node {
	if block == nil {
		return nil
	}
	stmts := block.NamedChildren()
	for len(stmts) > 0 && stmts[len(stmts)-1].Is("comment") {
		stmts = stmts[:len(stmts)-1]
	}
	if len(stmts) == 0 {
		return nil
	}
	return stmts[len(stmts)-1]
}

// pullsBatches reports whether one of a loop's calls takes the next item of
// an iterator (`x = next(data_iter)`): a loop over batches by hand.
func pullsBatches(f *File, calls []*pyast.Node) bool {
	for _, c := range calls {
		if fn := c.Child("function"); fn.Is("identifier") && f.Text(fn) == "next" {
			return true
		}
	}
	return false
}

// loopVarCalled reports whether call calls the loop's own variable
// (`for layer in self.layers: x = layer(x)`).
func (f *File) loopVarCalled(loop, call *pyast.Node) bool {
	fn := call.Child("function")
	if f.MethodName(call) == "forward" {
		fn = Receiver(call)
	}
	return f.isLoopVar(loop, fn)
}

// isLoopVar reports whether e is a name the loop binds.
func (f *File) isLoopVar(loop, e *pyast.Node) bool {
	left := loop.Child("left")
	return left != nil && e.Is("identifier") && MentionsName(f, left, f.Text(e))
}

// countsSteps reports whether a loop's variable or bound is named like
// steps, batches, epochs or episodes.
func (f *File) countsSteps(loop *pyast.Node) bool {
	var names []*pyast.Node
	if loop.Is("for_statement") {
		names = append(names, loop.Child("left"))
		it := loop.Child("right")
		if it.Is("call") && f.Text(it.Child("function")) == "range" {
			if args := it.Child("arguments"); args != nil {
				names = append(names, args.NamedChildren()...)
				// for i in range(len(dataset)): one sample per step.
				for _, a := range args.NamedChildren() {
					if a.Is("call") && f.Text(a.Child("function")) == "len" && datasetName.MatchString(f.LastName(f.Arg(a, "", 0))) {
						return true
					}
				}
			}
		}
	} else if cond := loop.Child("condition"); cond != nil {
		names = append(names, cond)
	}
	found := false
	for _, n := range names {
		pyast.Walk(n, func(m *pyast.Node) bool {
			if m.Is("identifier") && stepName.MatchString(f.Text(m)) ||
				m.Is("attribute") && stepName.MatchString(f.Text(m.Child("attribute"))) {
				found = true
			}
			return !found && !m.Is("attribute")
		})
	}
	return found
}

// IteratesLoader reports whether a for loop iterates a data loader: its
// iterable, past enumerate/tqdm/zip/iter and local bindings, is bound to
// a DataLoader or named like a loader (`train_loader`, `self.val_dl`,
// `trainer.train_dataloader()`).
func (f *File) IteratesLoader(loop *pyast.Node) bool {
	return f.loaderLike(loop.Child("right"), anyLoader, 0, nil)
}

// IsEvalLoader reports whether the iterable e is a loader named like
// validation or test data (`val_loader`, `self.test_dl`, through
// enumerate/tqdm/zip or a local name bound to such a wrapper: `bar =
// tqdm(self.val_dl)`). ALL_CAPS names are configuration
// (`cfg.DATASETS.TEST`), not loaders.
func (f *File) IsEvalLoader(e *pyast.Node) bool { return f.loaderLike(e, evalLoader, 0, nil) }

type loaderKind uint8

// loaderKey is how loaderLike remembers its answer for a name.
type loaderKey struct {
	kind loaderKind
	name string
}

type loaderReadsKey struct {
	kind  loaderKind
	name  string
	depth int
}

// allCaps reports whether name has no lower-case letter (a constant such
// as TEST), without allocating.
func allCaps(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c >= 'a' && c <= 'z' {
			return false
		}
	}
	return true
}

const (
	anyLoader loaderKind = iota
	evalLoader
)

var evalLoaderName = regexp.MustCompile(`(?i)^(val|valid|validation|test|testing|eval|evaluation)(_.*|loader|dl|ds|set|data|iter|batches|_dataloader)?$`)

// metricName: `val_losses`, `test_acc`, `eval_scores` hold numbers.
var metricName = regexp.MustCompile(`(?i)(loss|acc|metric|score|error|result|perf|f1|auc|iou|map)`)

// notDataName: what a test iterates that is not data (`testing_elements`
// of a symmetry group, `test_cases`, `test_configs`, `val_shapes`), or
// what a model scores its input against (modelscope OFA's candidate
// answers and their masks, `self.val_ans_l`, `self.val_masks_l`), maybe
// as a list (`_l`, `_list`).
var notDataName = regexp.MustCompile(`(?i)_(elements?|cases?|configs?|configurations?|params|parameters|settings|shapes?|sizes?|dims?|modes?|names?|keys?|types?|dtypes?|devices?|kwargs|args|options|fns|funcs?|functions?|groups?|ans|answers?|candidates?|masks?|labels?|classes)(_l|_list)?$`)

func (k loaderKind) named(name string) bool {
	if k == evalLoader {
		return !allCaps(name) && evalLoaderName.MatchString(name) && !metricName.MatchString(name) && !notDataName.MatchString(name)
	}
	return loaderName.MatchString(name)
}

// loaderLike answers IteratesLoader and IsEvalLoader; the answer for a
// name is remembered per version (a file may bind `loader` hundreds of
// times). The names whose bindings it reads go into reads (when not nil).
func (f *File) loaderLike(e *pyast.Node, kind loaderKind, depth int, reads asked) bool {
	if e == nil || depth > 4 {
		return false
	}
	switch e.Kind() {
	case "call":
		switch f.LastName(e.Child("function")) {
		case "enumerate", "tqdm", "trange", "iter", "zip", "list", "islice", "TQDM", "track", "progress_bar", "chain":
			args := e.Child("arguments")
			if args == nil {
				return false
			}
			for _, a := range args.NamedChildren() {
				if a.Kind() == "keyword_argument" {
					if f.Text(a.Child("name")) != "iterable" {
						continue
					}
					a = a.Child("value")
				}
				if f.loaderLike(a, kind, depth+1, reads) {
					return true
				}
				if kind == evalLoader {
					break // enumerate(val_loader, 1): the first argument
				}
			}
			return false
		case "DataLoader":
			return kind == anyLoader
		}
		// trainer.train_dataloader(), get_loader(...)
		return kind.named(f.LastName(e.Child("function")))
	case "identifier", "attribute":
		if kind.named(f.LastName(e)) {
			return true
		}
		if kind == evalLoader && allCaps(f.LastName(e)) {
			return false
		}
		if reads != nil {
			reads.name(f, e)
			// The bindings' own names, to the depth the answer reads:
			// found once per name (a file may bind `loader` in every
			// function, and every loop asks).
			names := remember(f, &f.memos.loaderReads, loaderReadsKey{kind, f.NameKey(e), depth}, func() []string {
				inner := asked{}
				for _, b := range f.BindingsOf(e) {
					f.loaderLike(b, kind, depth+1, inner)
				}
				return slices.Collect(maps.Keys(inner))
			})
			for _, name := range names {
				reads[name] = true
			}
		}
		return remember(f, &f.memos.loaders, loaderKey{kind, f.NameKey(e)}, func() bool {
			for _, b := range f.BindingsOf(e) {
				if f.loaderLike(b, kind, depth+1, nil) {
					return true
				}
			}
			return false
		})
	}
	return false
}

// InnermostStepLoop returns the innermost loop holding n (in n's function)
// that runs training or evaluation steps, or nil.
func (f *File) InnermostStepLoop(n *pyast.Node) *pyast.Node {
	for _, l := range EnclosingLoops(n) {
		if f.IsStepLoop(l) {
			return l
		}
	}
	return nil
}

// MentionsName reports whether e refers to name (an identifier or an
// attribute chain such as self.losses).
func MentionsName(f *File, e *pyast.Node, name string) bool {
	found := false
	pyast.Walk(e, func(n *pyast.Node) bool {
		found = found || n.Is("identifier", "attribute") && f.Text(n) == name
		return !found
	})
	return found
}
