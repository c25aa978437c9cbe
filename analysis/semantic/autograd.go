package semantic

import (
	"regexp"
	"sort"
	"strings"

	"github.com/vramlint/vramlint/analysis/pyast"
)

// This file answers the autograd questions the memory rules ask: which
// calls produce tensors that carry a graph, and which names hold them.

var (
	// Names a model object goes by (`model`, co-teaching's `model1`,
	// pix2pix's `netG`). A bare suffix (`...model`) is not enough:
	// `extract_from_model` is a function.
	modelName = regexp.MustCompile(`(?i)^(model|net|network|module|encoder|decoder|classifier|backbone|generator|discriminator|policy|critic|actor|teacher|student|head|ddp_model|unet|transformer|vae|gan)(s?|[0-9]+)$|^net[gd](_[ab])?$|^[a-z0-9]*_(model|net)$|^(model|net)_[a-z0-9_]*$|^[a-z]{0,6}model$`)
	// notModelName: names modelName matches that load, build or name
	// models (model_loader, net_builder, model_cls, model_template, with one
	// word between: model_wrapper_class) or are pydantic's
	// methods (Spec.model_validate(cfg), cfg.model_dump()), not models.
	// Functions named for what they do to a model (accelerator.unwrap_model(model),
	// get_model(cfg), save_model(model, path)) hand it over, load or store
	// it, or run a whole procedure on it and return its outcome
	// (evaluate_model(X, y) -> a score, quantize_model(m) -> a model): they
	// run no forward pass whose output they return. Not train_, eval_,
	// test_ or score_: `eval_model`, `score_model` also name models.
	notModelName  = regexp.MustCompile(`(?i)^(model|net)_([a-z0-9]+_)?(loader|load|builder|build|factory|cls|class|type|name|path|dir|file|config|cfg|registry|creator|provider|getter|template|constructor|maker|arch|architecture|spec)s?$|^model_(validate|validate_json|validate_strings|dump|dump_json|copy|construct|json_schema|rebuild|post_init|parametrized_name)$|^(get|load|build|create|make|prepare|unwrap|wrap|save|export|setup|compile|convert|freeze|unfreeze|register|restore|instantiate|construct|fetch|download|reset|print|log|summarize|describe|count|check|patch|deploy|serialize|deserialize|evaluate|validate|fit|finetune|benchmark|profile|quantize|prune|distill)_(model|net|network)s?$`)
	criterionName = regexp.MustCompile(`(?i)^(criterion|loss_fn|loss_func|loss_function|lossfn|objective)$|_(criterion|loss_fn|loss_func)$|^criterion_`)
	// Loss functions in torch.nn.functional that are not named *loss*.
	functionalLosses = map[string]bool{
		"cross_entropy": true, "binary_cross_entropy": true, "binary_cross_entropy_with_logits": true,
		"kl_div": true, "ctc_loss": true, "poisson_nll_loss": true, "cosine_embedding_loss": true,
	}
	// Methods whose result carries no autograd history.
	detachingMethods = map[string]bool{
		"item": true, "tolist": true, "numpy": true, "detach": true, "detach_": true,
		"argmax": true, "argmin": true, "size": true, "dim": true, "numel": true, "nelement": true,
		"data_ptr": true, "eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true,
		"isnan": true, "isinf": true, "isfinite": true, "long": true, "int": true, "bool": true,
		"element_size": true,
		// Module and container accessors: parameters are leaves, the rest
		// are not tensors.
		"parameters": true, "named_parameters": true, "buffers": true, "named_buffers": true,
		"state_dict": true, "modules": true, "named_modules": true, "children": true,
		"named_children": true, "keys": true, "nonzero": true,
	}
	// Hugging Face classes whose from_pretrained builds no model.
	notAModel = regexp.MustCompile(`(?i)(tokenizer|processor|config|extractor|scheduler)`)
	// Names of counts and sizes.
	countName = regexp.MustCompile(`(?i)(count|^num_|^n_|samples|_size$|^size$|len|steps|tokens$|^n$|total_num)`)
	// Builtins whose result is a plain Python value.
	plainBuiltins = map[string]bool{
		"float": true, "int": true, "bool": true, "len": true, "str": true, "round": true, "repr": true,
		"format": true, "isinstance": true, "type": true, "id": true, "hash": true,
	}
)

// LastName is the final identifier of an identifier or attribute chain
// (`empty_cache` in torch.cuda.empty_cache), or "".
func (f *File) LastName(e *pyast.Node) string {
	switch {
	case e.Is("identifier"):
		return f.Text(e)
	case e.Is("attribute"):
		return f.Text(e.Child("attribute"))
	}
	return ""
}

// unwrapModuleChain strips the calls that return the module itself:
// `Net().to(device).train()` is a Net.
func (f *File) unwrapModuleChain(e *pyast.Node) *pyast.Node {
	for e.Is("call") {
		switch f.MethodName(e) {
		case "to", "cuda", "cpu", "train", "eval", "half", "float", "double", "bfloat16", "requires_grad_":
			e = Receiver(e)
			continue
		}
		break
	}
	return e
}

// constructsModule reports whether e builds an nn.Module: a class of this
// file deriving from one, a torch.nn layer, a torchvision model.
func (f *File) constructsModule(e *pyast.Node) bool {
	e = f.unwrapModuleChain(e)
	if !e.Is("call") || f.constructsParameterlessLayer(e) {
		return false // a module applied as a function
	}
	fn := e.Child("function")
	if fn.Is("identifier") {
		if c := f.Classes[f.Text(fn)]; c != nil {
			return f.IsModule(c) && !strings.HasSuffix(c.Name, "Loss")
		}
	}
	q := f.QualifiedName(fn)
	switch {
	case strings.HasPrefix(q, "torch.nn.") && !strings.HasPrefix(q, "torch.nn.functional.") &&
		!strings.HasSuffix(q, "Loss") && isCapitalized(q):
		return true
	case q != "" && !strings.HasPrefix(q, "torch.") && isCapitalized(q) &&
		f.derivesFromProject(f.Path, q, map[string]bool{}, 0, isModuleBase):
		// A model class of another module of the project.
		return !strings.HasSuffix(q, "Loss")
	case q == "torch.compile":
		// A model compiled, not a function of this file.
		arg := compiledArg(f, e)
		return arg == nil || len(f.Functions[f.Text(arg)]) == 0
	case strings.HasPrefix(q, "torchvision.models."), strings.HasPrefix(q, "timm."),
		q == "torch.nn.parallel.DistributedDataParallel":
		return true
	case strings.HasSuffix(q, ".from_pretrained"):
		// AutoModel.from_pretrained builds a model; AutoTokenizer's and
		// AutoConfig's do not, nor optimum's ORTModel's (ONNX Runtime) or
		// a subclass's of it.
		return !notAModel.MatchString(q) && !f.constructsOtherRuntime(e)
	}
	return false
}

// parameterlessLayers are the torch.nn layers that hold no parameter:
// activations, dropout, pooling, padding, reshaping, resampling and
// distances. Calling one is applying a function: its output carries history
// only when its input does (haystack's `self.activation = nn.Sigmoid()`
// applied to scores computed under inference_mode records nothing).
// PReLU (a learned slope) and the normalisations (affine weights) are
// models.
var parameterlessLayers = regexp.MustCompile(`^(ReLU6?|LeakyReLU|RReLU|ELU|SELU|CELU|GELU|SiLU|Mish|Sigmoid|LogSigmoid|Hardsigmoid|Tanh|Hardtanh|Tanhshrink|Hardswish|Softmax|Softmax2d|LogSoftmax|Softmin|Softplus|Softsign|Softshrink|Hardshrink|Threshold|GLU|` +
	`Dropout[123]?d?|AlphaDropout|FeatureAlphaDropout|Identity|Flatten|Unflatten|` +
	`(Max|Avg|LP|AdaptiveMax|AdaptiveAvg|FractionalMax)Pool[123]d|MaxUnpool[123]d|` +
	`(Zero|Constant|Reflection|Replication|Circular)Pad[123]d|` +
	`Upsample|UpsamplingNearest2d|UpsamplingBilinear2d|PixelShuffle|PixelUnshuffle|ChannelShuffle|Fold|Unfold|` +
	`CosineSimilarity|PairwiseDistance)$`)

// parameterlessLayer reports whether q, a qualified torch.nn name, is one
// of parameterlessLayers.
func parameterlessLayer(q string) bool {
	// The last name: torch.nn.ReLU and torch.nn.modules.activation.ReLU.
	return strings.HasPrefix(q, "torch.nn.") && parameterlessLayers.MatchString(q[strings.LastIndexByte(q, '.')+1:])
}

// metricClassName: module classes that compute a metric of predictions
// and targets (modelscope's `SSIM`, `FIDScore`; `PSNR`, `LPIPS`,
// `*Metric`), as a loss does: what parameters they have belong to a frozen
// feature network, and their output carries history only when their
// inputs do.
var metricClassName = regexp.MustCompile(`^[A-Za-z0-9_]*(Metric|Metrics|Score|SSIM|PSNR|FID|LPIPS)$`)

// constructsParameterlessLayer reports whether e builds one of
// parameterlessLayers (`nn.Sigmoid()`, `nn.Dropout(p).to(device)`) or a
// metric module (see metricClassName): a module applied as a function.
func (f *File) constructsParameterlessLayer(e *pyast.Node) bool {
	e = f.unwrapModuleChain(e)
	if !e.Is("call") {
		return false
	}
	fn := e.Child("function")
	if q := f.QualifiedName(fn); q != "" {
		return parameterlessLayer(q) || isCapitalized(q) && metricClassName.MatchString(q[strings.LastIndexByte(q, '.')+1:])
	}
	if c := f.Classes[f.Text(fn)]; fn.Is("identifier") && c != nil {
		return f.IsModule(c) && metricClassName.MatchString(c.Name)
	}
	return false
}

// callsParameterlessLayer reports whether call applies a name every
// binding of which (one at least) builds a parameterless layer or a
// metric.
func (f *File) callsParameterlessLayer(call *pyast.Node) bool {
	return f.everyBinding(call.Child("function"), f.constructsParameterlessLayer)
}

// everyBinding reports whether fn, a name or attribute chain, is bound to
// a value (one at least, None aside) and every value it is bound to
// satisfies is.
func (f *File) everyBinding(fn *pyast.Node, is func(*pyast.Node) bool) bool {
	if !fn.Is("identifier", "attribute") {
		return false
	}
	found := false
	for _, b := range f.BindingsOf(fn) {
		if b.Is("none") {
			continue
		}
		if !is(b) {
			return false
		}
		found = true
	}
	return found
}

// otherRuntimeModules run models outside PyTorch's autograd: the runtimes
// of exported or compiled models (ONNX Runtime, OpenVINO, TensorRT, AWS
// Neuron, and optimum's wrappers of them) and other frameworks.
var otherRuntimeModules = []string{
	"onnxruntime", "openvino", "tensorrt", "tflite_runtime", "tritonclient",
	"optimum.onnxruntime", "optimum.intel", "optimum.neuron", "optimum.exporters",
	"tensorflow", "jax", "flax", "paddle", "mindspore", "mxnet", "coremltools",
	"sklearn", "xgboost", "lightgbm", "catboost",
}

// otherRuntimeModule reports whether the qualified name q belongs to one of
// otherRuntimeModules.
func otherRuntimeModule(q string) bool {
	for _, m := range otherRuntimeModules {
		if q == m || strings.HasPrefix(q, m+".") {
			return true
		}
	}
	return false
}

// constructsOtherRuntime reports whether e builds a model another runtime
// runs: a call of such a runtime (`ort.InferenceSession(path)`), or of a
// class deriving from one of its classes, directly or through a class
// method (`NeuronModelForCausalLM.from_pretrained(...)`, lm-eval's
// subclass of it). Its outputs carry no autograd history, whatever the
// name holding it says.
func (f *File) constructsOtherRuntime(e *pyast.Node) bool {
	e = f.unwrapModuleChain(e)
	if !e.Is("call") {
		return false
	}
	callee := e.Child("function")
	if r := Receiver(e); r != nil && isClassName(f.LastName(r)) {
		callee = r // Class.from_pretrained(...), Class.load(...)
	}
	if callee.Is("identifier") && f.Classes[f.Text(callee)] != nil {
		return f.derivesFrom(f.Classes[f.Text(callee)], map[*Class]bool{}, otherRuntimeModule)
	}
	q := f.QualifiedName(callee)
	return q != "" && (otherRuntimeModule(q) || isClassName(f.LastName(callee)) &&
		f.derivesFromProject(f.Path, q, map[string]bool{}, 0, otherRuntimeModule))
}

// buildsPipeline reports whether e builds a Hugging Face pipeline
// (`transformers.pipeline(task, model=...)`, a `*Pipeline` class of
// transformers): calling one runs the model under no-grad itself and
// returns Python values (haystack's `self.model(batch, top_k=1)`, a list
// of label dicts).
func (f *File) buildsPipeline(e *pyast.Node) bool {
	e = f.unwrapModuleChain(e)
	if !e.Is("call") {
		return false
	}
	q := f.QualifiedName(e.Child("function"))
	return strings.HasPrefix(q, "transformers.") && (q[strings.LastIndexByte(q, '.')+1:] == "pipeline" ||
		strings.HasSuffix(q, "Pipeline"))
}

// constructsCriterion reports whether e builds a loss module (nn.*Loss or a
// local class named *Loss).
func (f *File) constructsCriterion(e *pyast.Node) bool {
	e = f.unwrapModuleChain(e)
	if !e.Is("call") {
		return false
	}
	fn := e.Child("function")
	if fn.Is("identifier") && f.Classes[f.Text(fn)] != nil {
		return strings.HasSuffix(f.Text(fn), "Loss")
	}
	q := f.QualifiedName(fn)
	return strings.HasPrefix(q, "torch.nn.") && strings.HasSuffix(q, "Loss")
}

func isCapitalized(q string) bool {
	last := q[strings.LastIndexByte(q, '.')+1:]
	return last != "" && last[0] >= 'A' && last[0] <= 'Z'
}

// IsModelCall reports whether call runs a model: `model(x)`, `self.net(x)`,
// a name bound to an nn.Module, or `model.forward(x)`.
//
// Building a model is not running one: a call of a class (`Net()`,
// `SSSModel()`, a name bound to one) is a construction, and so is a call
// whose arguments can be no input (`act_layer(inplace=True)`).
func (f *File) IsModelCall(call *pyast.Node) bool {
	fn := call.Child("function")
	if f.MethodName(call) == "forward" {
		fn = Receiver(call)
	} else if f.CallsClass(call) || !hasForwardInput(call) {
		return false
	}
	if generates(f, call) || fitted(f, call) {
		return false
	}
	return f.IsModelSelf(fn) || f.NamesModule(fn)
}

// IsModelSelf reports whether e is `self` in a method of a model class of
// the file: `self(x)` in a LightningModule's training_step, synthcity's
// `self.eval()` before `self(...)`.
func (f *File) IsModelSelf(e *pyast.Node) bool {
	return e.Is("identifier") && f.Text(e) == "self" && f.IsModule(f.EnclosingClass(e))
}

// generationKeywords are arguments of text generation (Hugging Face's
// generate, pipelines, TransformerLens's generate), which no forward pass
// takes.
var generationKeywords = map[string]bool{
	"max_new_tokens": true, "num_beams": true, "do_sample": true, "num_return_sequences": true,
}

// fitted reports whether call's value is fitted at once
// (`model(**model_args).fit(X, y)`, synthcity's cross-validation): the
// call builds an estimator from a class passed in, it runs no forward
// pass.
func fitted(f *File, call *pyast.Node) bool {
	p := call.Parent()
	return p.Is("attribute") && p.Child("object") == call && f.Text(p.Child("attribute")) == "fit" &&
		p.Parent().Is("call")
}

// generates reports whether call runs text generation rather than a
// forward pass: `generator(prompt, max_new_tokens=20)`, a model's bound
// `generate` under another name. Generation turns autograd off itself.
func generates(f *File, call *pyast.Node) bool {
	args := call.Child("arguments")
	if args == nil {
		return false
	}
	for _, a := range args.NamedChildren() {
		if a.Is("keyword_argument") && generationKeywords[f.Text(a.Child("name"))] {
			return true
		}
	}
	return false
}

// CallsClass reports whether call instantiates a class rather than calling
// an object: the callee is a class of this file or named like a class
// (CamelCase, the Python convention), possibly through an attribute chain.
func (f *File) CallsClass(call *pyast.Node) bool {
	fn := call.Child("function")
	if fn.Is("identifier") && f.Classes[f.Text(fn)] != nil {
		return true
	}
	return isClassName(f.LastName(fn))
}

// isClassName reports whether name follows the class naming convention:
// it starts with a capital and is not ALL_CAPS (a constant).
func isClassName(name string) bool {
	if name == "" || name[0] < 'A' || name[0] > 'Z' {
		return false
	}
	return !allCaps(name)
}

// hasForwardInput reports whether call passes something a forward pass could
// take as input: a positional argument, a splat, or a keyword whose value
// is not a literal. `act_layer(inplace=True)` passes none.
func hasForwardInput(call *pyast.Node) bool {
	args := call.Child("arguments")
	if args == nil {
		return false
	}
	if args.Is("generator_expression") {
		return true
	}
	for _, a := range args.NamedChildren() {
		switch a.Kind() {
		case "comment":
		case "keyword_argument":
			if !a.Child("value").Is("true", "false", "none", "integer", "float", "string") {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// NamesModule reports whether the expression fn (an identifier or an
// attribute chain) names a model: bound to an nn.Module in this file, or
// named like one (model, net, self.encoder, ...). Not `self`, even in a
// model class: calls of its methods ask about their receiver, and a
// model's `self.loss(x)` is no conventional step (answering yes here made
// 80 false findings on the ecosystem's loss modules; see IsModelSelf).
func (f *File) NamesModule(fn *pyast.Node) bool {
	if !fn.Is("identifier", "attribute") || f.ownMethod(fn) || f.annotatedPlainObject(fn) {
		return false
	}
	key := f.NameKey(fn)
	return f.memo(&f.memos.module, key, func() bool {
		is, callees := f.namesModule(fn)
		if len(callees) > 0 {
			// The answer read those functions' returns: see carryOver.
			f.memos.Lock()
			if f.memos.moduleCallees == nil {
				f.memos.moduleCallees = map[string][]string{}
			}
			f.memos.moduleCallees[strings.Clone(key)] = callees
			f.memos.Unlock()
		}
		return is
	})
}

// ownMethod reports whether fn is `self.m` (or `cls.m`) for a method m the
// enclosing class defines (or a class of this file it derives from), not
// as a property: `self.eval_model(data)` runs the method, whatever its name
// says; its summary tells what it does. Judged on every question, not
// remembered with NamesModule's answer: a method may come or go without
// the name's bindings changing.
func (f *File) ownMethod(fn *pyast.Node) bool {
	if !fn.Is("attribute") {
		return false
	}
	recv, name := fn.Child("object"), f.Text(fn.Child("attribute"))
	if !recv.Is("identifier") || f.Text(recv) != "self" && f.Text(recv) != "cls" || !f.hasMethod(name) {
		return false
	}
	def := f.methodOf(f.EnclosingClass(fn), name, 0)
	if def == nil {
		return false
	}
	for _, d := range DecoratorsOf(def) {
		if n := f.LastName(d); n == "property" || n == "cached_property" {
			return false // self.model(x) calls what the property returns
		}
	}
	return true
}

// annotatedPlainObject reports whether fn is a parameter, never assigned
// in its function, annotated with a class known not to be a model: one of
// this file or of the project whose bases are all such classes or plain
// ones (object, ABC, Generic, Protocol), or a class of another runtime
// (anomalib's `nncf_model: CompiledModel`, OpenVINO's). DI-engine's
// `policy: Policy` is a wrapper whose forward turns autograd off itself;
// its name says model.
// Judged on every question, as ownMethod is: parameters of the same name
// in other functions share NamesModule's memo.
func (f *File) annotatedPlainObject(fn *pyast.Node) bool {
	if !fn.Is("identifier") {
		return false
	}
	var p *pyast.Node // the parameter, in fn's function or one around it (a closure)
	for def := EnclosingFunction(fn); def.Is("function_definition", "lambda") && p == nil; def = EnclosingFunction(def) {
		p = parameterNamed(f, def, f.Text(fn))
	}
	// Never assigned in its function: the annotation says what the
	// parameter is only while nothing else is bound to it.
	if !p.Is("typed_parameter", "typed_default_parameter") || f.assignedLocally(fn) {
		return false
	}
	var class, q string // the annotation's class as written, and qualified
	switch annotation := p.Child("type").FirstNamed(); {
	case annotation.Is("string"):
		// A forward reference (`model: "TRTInference"`, rfdetr's
		// TensorRT engine): the class named in the string.
		class = forwardReference(f, annotation)
		q = f.qualifiedText(class)
	case annotation.Is("identifier", "attribute"):
		class, q = f.Text(annotation), f.QualifiedName(annotation)
	}
	if class == "" || !isClassName(class[strings.LastIndexByte(class, '.')+1:]) {
		return false
	}
	if c := f.Classes[class]; c != nil {
		return f.plainLocalClass(c, 0)
	}
	return q != "" && (plainBase(q) || f.plainProjectClass(f.Path, q, 0))
}

// forwardReference returns the dotted name a string annotation holds
// (`"TRTInference"`, `'nn.Module'`), or "" when it holds anything else
// (`"list[Net]"`, an f-string).
func forwardReference(f *File, s *pyast.Node) string {
	text := f.Text(s)
	if len(text) < 2 || text[0] != text[len(text)-1] || text[0] != '"' && text[0] != '\'' {
		return "" // a prefixed or triple-quoted string, or an odd one
	}
	name := text[1 : len(text)-1]
	for part := range strings.SplitSeq(name, ".") {
		if !isIdentifier(part) {
			return ""
		}
	}
	return name
}

// qualifiedText is QualifiedName for a dotted name given as text (a
// forward reference): "" when its first name is not imported.
func (f *File) qualifiedText(name string) string {
	head, rest, dotted := strings.Cut(name, ".")
	q, ok := f.Imports[head]
	if !ok {
		return ""
	}
	if dotted {
		q += "." + rest
	}
	return canonical(q)
}

// parameterNamed returns def's parameter called name, or nil.
func parameterNamed(f *File, def *pyast.Node, name string) *pyast.Node {
	for _, p := range def.Child("parameters").NamedChildren() {
		if id := parameterName(p); id.Is("identifier") && f.Text(id) == name {
			return p
		}
	}
	return nil
}

// parameterName returns the node naming the parameter p: an identifier
// for a plain, typed or default parameter, something else for `*args`,
// `**kwargs` and the like.
func parameterName(p *pyast.Node) *pyast.Node {
	switch {
	case p.Is("typed_parameter"):
		return p.FirstNamed()
	case p.Is("default_parameter", "typed_default_parameter"):
		return p.Child("name")
	}
	return p
}

// plainBase reports whether the qualified base q makes no model: the
// bases of plain Python classes, and the classes of other runtimes
// (openvino's CompiledModel).
func plainBase(q string) bool {
	switch q {
	case "object", "abc.ABC", "typing.Generic", "typing.Protocol", "typing_extensions.Protocol":
		return true
	}
	return otherRuntimeModule(q)
}

// plainLocalClass reports whether c, a class of this file, derives only
// from plain bases, through classes of this file or of the project.
func (f *File) plainLocalClass(c *Class, depth int) bool {
	if depth > 16 {
		return false
	}
	for _, b := range c.Bases {
		if b.Is("subscript") {
			b = b.Child("value") // Generic[T]
		}
		if b.Is("identifier") && f.Text(b) == "object" && f.QualifiedName(b) == "" {
			continue // the builtin, which QualifiedName does not name
		}
		if b.Is("identifier") && f.Classes[f.Text(b)] != nil {
			if !f.plainLocalClass(f.Classes[f.Text(b)], depth+1) {
				return false
			}
			continue
		}
		q := f.QualifiedName(b)
		if q == "" || !plainBase(q) && !f.plainProjectClass(f.Path, q, depth+1) {
			return false
		}
	}
	return true
}

// plainProjectClass reports whether the class qualified as seen from the
// file at from is a class of the project deriving only from plain bases.
// A base the index could not qualify is left out of its list, so a class
// of the project with such a base may be taken for plain: the cost is a
// model call missed, never one invented.
func (f *File) plainProjectClass(from, qualified string, depth int) bool {
	if f.Project == nil || depth > 16 {
		return false
	}
	path, name, ok := f.Project.Resolve(from, qualified)
	if !ok {
		return false
	}
	bases, ok := f.Project.ClassBases(path, name)
	if !ok {
		return false
	}
	for _, b := range bases {
		if !plainBase(canonical(b)) && !f.plainProjectClass(path, b, depth+1) {
			return false
		}
	}
	return true
}

// namesModule answers NamesModule; callees are the names of the
// functions that calls bound to fn may run (see builderCall), whether
// or not the file defines them now: the answer goes stale once a function
// of such a name comes, goes, is bound anew or returns something else.
func (f *File) namesModule(fn *pyast.Node) (is bool, callees []string) {
	if f.QualifiedName(fn) != "" {
		return false, nil // torch.relu, np.mean, ...: an imported function
	}
	if fn.Is("identifier") && len(f.Functions[f.Text(fn)]) > 0 && len(f.BindingsOf(fn)) == 0 {
		return false, nil // a function defined in this file; its summary tells what it does
	}
	// Any module bound to the name makes it a model, whatever else it is
	// bound to: the answer must not depend on the order of the bindings.
	criterion, layer, otherRuntime := false, false, false
	for _, b := range f.BindingsOf(fn) {
		if f.constructsModule(b) {
			return true, callees
		}
		// A builder is judged by its own returns alone (returnsModule): no
		// chain of builders is followed, and no summary asked (summaries
		// ask NamesModule).
		if call, callee := builderCall(f, b); call != nil {
			callees = append(callees, callee)
			if def := f.resolveCall(call); def != nil && f.returnsModule(def) {
				return true, callees
			}
		}
		criterion = criterion || f.constructsCriterion(b)
		layer = layer || f.constructsParameterlessLayer(b)
		otherRuntime = otherRuntime || f.constructsOtherRuntime(b) || f.buildsPipeline(b)
	}
	last := f.LastName(fn)
	return !criterion && !layer && !otherRuntime && modelName.MatchString(last) && !notModelName.MatchString(last) &&
		!f.importsOtherFrameworkOnly(), callees
}

// builderCall returns the call the value e makes, its chain of
// `.to(device)` and the like aside, when it may run a builder of this
// file, and the callee's name: a plain name not imported, or a method on
// self or cls (merlion's `self.lstmed = self._build_model(dim).to(device)`,
// whose `_build_model` returns `LSTMEDModule(...)`); nil and "" otherwise.
// Methods of other objects are left out: which class an object is an
// instance of reads other names, which the answer would then depend on.
func builderCall(f *File, e *pyast.Node) (call *pyast.Node, callee string) {
	e = f.unwrapModuleChain(e)
	if !e.Is("call") {
		return nil, ""
	}
	switch fn := e.Child("function"); {
	case fn.Is("identifier") && f.QualifiedName(fn) == "":
		return e, f.Text(fn)
	case fn.Is("attribute") && fn.Child("object").Is("identifier"):
		if recv := f.Text(fn.Child("object")); recv == "self" || recv == "cls" {
			return e, f.Text(fn.Child("attribute"))
		}
	}
	return nil, ""
}

// returnsModule reports whether every return statement of def returns an
// nn.Module that def builds: a construction (see constructsModule), or a
// name def binds to one (`model = Net(); ...; return model.to(device)`).
// A generator, or a bare return, builds nothing.
func (f *File) returnsModule(def *pyast.Node) bool {
	return remember(f, &f.memos.returnsModule, def, func() bool {
		returns, modules, generator := 0, 0, false
		visitReturns(def, func(x *pyast.Node) {
			if x.Is("yield") {
				generator = true
				return
			}
			returns++
			if v := x.NamedChildren(); len(v) > 0 && f.buildsModuleIn(def, v[0]) {
				modules++
			}
		})
		return !generator && returns > 0 && modules == returns
	})
}

// buildsModuleIn reports whether v, returned by def, is a module def
// builds: a construction, or a name of def's bound to one.
func (f *File) buildsModuleIn(def, v *pyast.Node) bool {
	if f.constructsModule(v) {
		return true
	}
	v = f.unwrapModuleChain(v)
	if !v.Is("identifier") || Scope(v) != def {
		return false
	}
	for _, b := range f.BindingsOf(v) {
		if f.constructsModule(b) {
			return true
		}
	}
	return false
}

// torchFrameworks and otherFrameworks are the roots of the imports that
// say which deep-learning framework a file's models belong to.
var (
	torchFrameworks = map[string]bool{
		"torch": true, "torchvision": true, "torchaudio": true, "torchtext": true, "lightning": true,
		"pytorch_lightning": true, "timm": true, "accelerate": true, "deepspeed": true,
	}
	otherFrameworks = map[string]bool{
		"tensorflow": true, "keras": true, "tf_keras": true, "jax": true, "flax": true, "haiku": true,
		"mlx": true, "paddle": true, "mindspore": true, "mxnet": true, "oneflow": true,
	}
)

// MadeByOtherFramework reports whether e, or the value a name e is bound
// to, is a call of another deep-learning framework (`mx.stack(mels)`,
// `tf.concat(...)`): a model fed from it is that framework's (stable-ts's
// MLX branch in a PyTorch file).
func (f *File) MadeByOtherFramework(e *pyast.Node) bool {
	values := []*pyast.Node{e}
	if e.Is("identifier") {
		values = f.BindingsOf(e)
	}
	for _, v := range values {
		if v.Is("call") {
			root, _, _ := strings.Cut(f.QualifiedName(v.Child("function")), ".")
			if otherFrameworks[root] {
				return true
			}
		}
	}
	return false
}

// importsOtherFrameworkOnly reports whether the file imports another
// deep-learning framework (TensorFlow, Keras, JAX, MLX, ...) and nothing of
// PyTorch's: a name such as `model` there is that framework's model, which
// records no autograd graph (ART's and alibi-detect's TensorFlow
// estimators beside their PyTorch ones).
func (f *File) importsOtherFrameworkOnly() bool {
	other := false
	for _, q := range f.Imports {
		root, _, _ := strings.Cut(q, ".")
		if torchFrameworks[root] {
			return false
		}
		other = other || otherFrameworks[root]
	}
	return other
}

// IsLossCall reports whether call computes a loss: a criterion object, an
// nn.*Loss instance, or a torch.nn.functional loss.
func (f *File) IsLossCall(call *pyast.Node) bool {
	fn := call.Child("function")
	if q := f.QualifiedName(fn); q != "" {
		if name, ok := strings.CutPrefix(q, "torch.nn.functional."); ok {
			return strings.Contains(name, "loss") || functionalLosses[name]
		}
		return false
	}
	if !fn.Is("identifier", "attribute") {
		return false
	}
	return f.memo(&f.memos.loss, f.NameKey(fn), func() bool {
		for _, b := range f.BindingsOf(fn) {
			if f.constructsCriterion(b) {
				return true
			}
		}
		return criterionName.MatchString(f.LastName(fn))
	})
}

// Taint tracks, within one scope (a function or the module), which names
// hold tensors that carry autograd history, statement by statement.
type Taint struct {
	f *File
	*taintFacts
}

// taintFacts are what a Taint found. The versions of a buffer share them
// while what they were computed from stays the same (see carryOver), each
// version judging with its own File.
type taintFacts struct {
	events map[string][]taintEvent // name -> assignments in source order

	// What the events were computed from besides the scope's code: the
	// names asked about (whose bindings matter), while building.
	segment   *pyast.Segment // the scope's; nil for the module
	asked     asked
	signature askedSignature // of asked, once built
	building  bool
	// plain: calls of functions defined in this file are judged without
	// their summaries (see Summary).
	plain bool

	// The module's taint is kept by segment, so that the next version
	// recomputes only the segments whose reads changed (see
	// buildModuleTaint): parts, in source order, and what it was computed
	// with besides them.
	parts        []*moduleTaintPart
	gradSwitches []*pyast.Node
	// While a part is being built: the part, the names whose events this
	// taint owns rather than shares with the last version's (nil: it
	// owns them all), and the copies of names it keeps.
	part     *moduleTaintPart
	owned    map[string]bool
	interned map[string]string // see intern
}

type taintEvent struct {
	at      int // byte offset where the assignment takes effect
	tainted bool
	// scalarLoss: the value is a loss (or a reduction of one): a scalar.
	scalarLoss bool
	// value is what was assigned, judged by IsTensor when a fix asks (nil:
	// one of several names unpacked from one value); aug: `x += value`,
	// from: where the assignment starts.
	value *pyast.Node
	aug   bool
	from  int
}

// TaintOf returns the taint of the names assigned in scope, computed once
// per file and shared by the rules that ask.
func (f *File) TaintOf(scope *pyast.Node) *Taint {
	return f.taintOf(&f.memos.taint, &f.memos.taintFacts, scope, false)
}

// taintOf returns scope's taint from this version's (in taints), made
// from the facts carried from an earlier version or found now (in facts).
func (f *File) taintOf(taints *map[*pyast.Node]*Taint, facts *map[*pyast.Node]*taintFacts, scope *pyast.Node, plain bool) *Taint {
	return rememberShared(f, taints, scope, func() *Taint {
		f.memos.Lock()
		found := (*facts)[scope]
		f.memos.Unlock()
		if found != nil {
			return &Taint{f: f, taintFacts: found}
		}
		t := f.newTaint(scope, plain)
		f.memos.Lock()
		defer f.memos.Unlock()
		if *facts == nil {
			*facts = map[*pyast.Node]*taintFacts{}
		}
		(*facts)[scope] = t.taintFacts
		return t
	})
}

func (f *File) newTaint(scope *pyast.Node, plain bool) *Taint {
	t := &Taint{f: f, taintFacts: &taintFacts{events: map[string][]taintEvent{}, asked: asked{}, building: true, plain: plain}}
	defer func() { t.building, t.signature = false, askedSignatureOf(t.asked) }()
	if scope == f.Tree.Root {
		f.buildModuleTaint(t)
		return t
	}
	t.segment = f.segmentOf(scope)
	for _, a := range f.AssignmentsIn(scope) {
		if InScope(a, scope) {
			t.assign(a)
		}
	}
	return t
}

// assign records the events of the assignment a, in the taint's scope;
// the assignments before it in the scope are recorded already.
func (t *Taint) assign(a *pyast.Node) {
	f := t.f
	left, right := a.Child("left"), a.Child("right")
	if left == nil || right == nil {
		return
	}
	at := a.End()
	if a.Kind() == "augmented_assignment" {
		// x += y keeps x tainted if either side is.
		for _, name := range targetNames(f, left) {
			tainted := t.Tainted(right) || t.nameTainted(name, a.Start())
			t.add(name, taintEvent{at: at, tainted: tainted, value: right, aug: true, from: a.Start()})
		}
		return
	}
	names := targetNames(f, left)
	// a, b = x, y: element-wise when the shapes match.
	if elems := right.NamedChildren(); right.Is("expression_list", "tuple") && len(elems) == len(names) && left.Is("pattern_list", "tuple_pattern") {
		for i, name := range names {
			t.add(name, taintEvent{at: at, tainted: t.Tainted(elems[i]), scalarLoss: t.IsScalarLoss(elems[i]), value: elems[i], from: a.Start()})
		}
		return
	}
	tainted, scalar := t.Tainted(right), t.IsScalarLoss(right)
	value := right
	if len(names) != 1 {
		value = nil
	}
	// loss, acc = step(batch), where step returns `loss, acc` and only
	// loss has history: element-wise too.
	var returned TupleGraph
	if tainted && len(names) > 1 && flatTargets(left, len(names)) {
		returned = t.returnedTuple(right)
	}
	for i, name := range names {
		// loss, n_samples = model.forward_loss(batch): a count beside
		// the loss is a number.
		graph := tainted && !(len(names) > 1 && countName.MatchString(name[strings.LastIndexByte(name, '.')+1:]))
		if element, ok := returned.Element(i, len(names)); ok {
			graph = element
		}
		t.add(name, taintEvent{at: at, tainted: graph, scalarLoss: scalar && len(names) == 1, value: value, from: a.Start()})
	}
}

// flatTargets reports whether left is a tuple of n plain targets (names
// or attributes, no nested tuple, no starred name): then target i takes
// element i.
func flatTargets(left *pyast.Node, n int) bool {
	if !left.Is("pattern_list", "tuple_pattern") {
		return false
	}
	elems := left.NamedChildren()
	if len(elems) != n {
		return false
	}
	for _, e := range elems {
		if !e.Is("identifier", "attribute") {
			return false
		}
	}
	return true
}

// returnedTuple is what the function a call runs returns, element by
// element (see Summary.Returned), when its summary is what makes the
// call's value tainted (see Tainted); the zero TupleGraph otherwise.
func (t *Taint) returnedTuple(call *pyast.Node) TupleGraph {
	f := t.f
	if !call.Is("call") || t.plain {
		return TupleGraph{}
	}
	if m := f.MethodName(call); m != "" && t.Tainted(Receiver(call)) {
		return TupleGraph{}
	}
	if f.CallsClass(call) || f.IsModelCall(call) || f.IsLossCall(call) {
		return TupleGraph{}
	}
	if def := f.resolveCall(call); def != nil {
		return f.summary(def).Returned
	}
	if facts, ok := f.projectCall(call); ok {
		return facts.Returned
	}
	return TupleGraph{}
}

// targetNames lists the names (identifiers and attribute chains such as
// self.x) an assignment target binds.
func targetNames(f *File, left *pyast.Node) []string {
	switch left.Kind() {
	case "identifier", "attribute":
		return []string{f.Text(left)}
	case "pattern_list", "tuple_pattern", "list_pattern", "tuple", "list", "parenthesized_expression":
		var out []string
		for _, c := range left.NamedChildren() {
			out = append(out, targetNames(f, c)...)
		}
		return out
	case "list_splat_pattern":
		if c := left.NamedChildren(); len(c) > 0 {
			return targetNames(f, c[0])
		}
	}
	return nil
}

// last returns the last assignment to name that takes effect at or before
// at. A name's events are in source order (assignments of one scope, each
// at its end), so a binary search finds it: a function that assigns one
// name thousands of times asked a linear scan for each of them.
func (t *Taint) last(name string, at int) (ev taintEvent, found bool) {
	events := t.events[name]
	if i := sort.Search(len(events), func(i int) bool { return events[i].at > at }); i > 0 {
		ev, found = events[i-1], true
	}
	if t.part != nil {
		t.read(name, at, ev, found)
	}
	return ev, found
}

func (t *Taint) nameTainted(name string, at int) bool {
	ev, _ := t.last(name, at)
	return ev.tainted
}

// Tainted reports whether the expression e evaluates to a tensor that
// carries autograd history. .item(), .detach(), float(), .tolist(),
// .numpy() and .data clear it; .cpu() and .to() do not.
func (t *Taint) Tainted(e *pyast.Node) bool {
	f := t.f
	if e == nil {
		return false
	}
	switch e.Kind() {
	case "identifier", "attribute":
		if e.Kind() == "attribute" && historyFreeAttributes[f.Text(e.Child("attribute"))] {
			return false
		}
		if _, ok := t.last(f.Text(e), e.Start()); ok {
			return t.nameTainted(f.Text(e), e.Start())
		}
		if e.Kind() == "attribute" {
			return t.Tainted(e.Child("object"))
		}
		return false
	case "call":
		fn := e.Child("function")
		if m := f.MethodName(e); m != "" {
			if detachingMethods[m] {
				return false
			}
			if t.Tainted(Receiver(e)) {
				return sameObjectMethods[m] || strings.HasSuffix(m, "_") || !t.inNoGrad(e)
			}
		}
		if fn.Is("identifier") && plainBuiltins[f.Text(fn)] {
			return false
		}
		t.ask(e)
		q := f.QualifiedName(fn)
		if q == "torch.autograd.grad" && !mayCreateGraph(f, e) {
			// Gradients are computed without a graph of their own unless
			// create_graph is set, whatever their inputs carry.
			return false
		}
		if f.CallsClass(e) && !strings.HasPrefix(q, "torch.distributions.") {
			// Building an object (a module, an optimizer, a process) is not
			// computing a tensor; distributions built from tensors keep
			// their graph.
			return false
		}
		if f.IsModelCall(e) {
			if f.frozenModel(e) {
				// No parameter records a graph: only inputs that carry
				// one make the output carry one.
				return !t.inNoGrad(e) && t.taintedArgument(e)
			}
			return !t.inNoGrad(e)
		}
		if q == "" && f.callsParameterlessLayer(e) {
			// Not an imported function: a name bound to such a layer.
			return !t.inNoGrad(e) && t.taintedArgument(e)
		}
		if f.IsLossCall(e) {
			// A loss of detached predictions (`criterion(pred.detach(), y)`)
			// has no history; a loss of values we know nothing about is
			// taken to have it.
			return !t.inNoGrad(e) && !t.detachedInputs(e)
		}
		if def := f.resolveCall(e); def != nil {
			if t.plain {
				// One level deep: what the function is called does not
				// tell what it returns.
				return false
			}
			s := f.summary(def)
			t.askDef(s)
			return s.ReturnsGraph && !t.inNoGrad(e)
		}
		if !t.plain {
			// A function of another module: its summary there (the index's
			// generation changes when it does, see Project). Not one level
			// down, as for this file's functions: a summary never asks
			// another file (so summaries cannot call each other in a circle).
			if facts, ok := f.projectCall(e); ok {
				return facts.ReturnsGraph && !t.inNoGrad(e)
			}
		}
		if ConventionalStepCall(f, e) {
			return !t.inNoGrad(e) && !f.trainingStepOnItsOwn(e)
		}
		// A torch function (torch.stack, F.softmax, Categorical(...)) of a
		// tainted tensor is tainted, unless computed under no_grad.
		if strings.HasPrefix(q, "torch.") {
			if args := e.Child("arguments"); args != nil {
				for _, a := range args.NamedChildren() {
					if a.Kind() == "keyword_argument" {
						a = a.Child("value")
					}
					if t.Tainted(a) {
						return sameObjectFunctions[q] || !t.inNoGrad(e)
					}
				}
			}
		}
		return false
	case "binary_operator", "unary_operator", "parenthesized_expression", "list", "tuple", "expression_list",
		"conditional_expression", "list_splat":
		for _, c := range e.NamedChildren() {
			if e.Kind() == "conditional_expression" && c == e.NamedChildren()[1] {
				continue // the condition
			}
			if t.Tainted(c) {
				// Arithmetic under no_grad makes a new tensor without
				// history; the other forms hold the tensors themselves.
				return !e.Is("binary_operator", "unary_operator") || !t.inNoGrad(e)
			}
		}
		return false
	case "subscript":
		return t.Tainted(e.Child("value"))
	}
	return false
}

// trainingStepOnItsOwn reports whether call, a conventional training step
// (`model_w.train_step(batch)`), runs in a function that differentiates
// nothing: then the step runs its own backward and optimizer step, and
// what it returns is whatever it reports (`loss.item()` in most
// `train_step` methods; cogdl's return the embeddings they trained, as
// arrays), not a graph the caller keeps for a backward of its own.
func (f *File) trainingStepOnItsOwn(call *pyast.Node) bool {
	if m := f.MethodName(call); m != "train_step" && m != "training_step" {
		return false
	}
	def := EnclosingFunction(call)
	if def == nil {
		return false // a script's steps: its module is too wide a scope to judge
	}
	for _, c := range f.CallsIn(def) {
		if isBackwardCall(f, c) {
			return false
		}
	}
	return true
}

// mayCreateGraph reports whether a torch.autograd.grad call may build a
// graph for the gradients it returns: create_graph set to True, or
// positional or unpacked arguments that may reach it. A name or an
// expression there (`create_graph=self.training`, an option of the
// caller's) is left to whoever sets it: code written for its default keeps
// no graph, and one asked for is the point.
func mayCreateGraph(f *File, call *pyast.Node) bool {
	args := call.Child("arguments")
	if args == nil {
		return false
	}
	positional := 0
	for _, a := range args.NamedChildren() {
		switch {
		case a.Kind() == "keyword_argument":
			if f.Text(a.Child("name")) == "create_graph" && f.Text(a.Child("value")) == "True" {
				return true
			}
		case a.Kind() == "list_splat" || a.Kind() == "dictionary_splat":
			return true
		default:
			positional++
		}
	}
	return positional >= 5
}

// Calls that may return the very object they are given (so its history
// too), even under no_grad: moves and casts that are no-ops when nothing
// changes, in-place methods (`x.add_(y)`, any method ending in `_`), and
// container lookups. Every other tensor operation under no_grad makes a
// tensor without history.
var (
	sameObjectMethods = map[string]bool{
		"to": true, "cpu": true, "cuda": true, "float": true, "double": true, "half": true, "bfloat16": true,
		"int": true, "long": true, "type": true, "type_as": true, "contiguous": true, "pin_memory": true,
		"get": true, "pop": true, "popitem": true, "setdefault": true, "values": true, "items": true, "copy": true,
	}
	sameObjectFunctions = map[string]bool{"torch.as_tensor": true, "torch.asarray": true}
)

// historyFreeAttributes are the tensor attributes that carry no autograd
// history (`.data`, `.shape`).
var historyFreeAttributes = map[string]bool{
	"data": true, "grad": true, "shape": true, "device": true, "dtype": true, "requires_grad": true,
	"grad_fn": true, "is_cuda": true, "ndim": true,
}

// NeverTainted reports whether Taint.Tainted answers false for e whatever
// the names in it hold and whatever the functions it calls do: a literal,
// an attribute such as `.shape`, a method that detaches (`.item()`,
// `.detach()`), a builtin with a plain result (`float(...)`), and
// operators over such values. It follows Tainted's cases and reads only
// e's own syntax, so rules ask it before the taint of e's scope and the
// kind of its loop, which analyse the whole function (a training loop's
// `total += loss.item()` needs neither).
func NeverTainted(f *File, e *pyast.Node) bool {
	if e == nil {
		return true
	}
	switch e.Kind() {
	case "identifier":
		return false
	case "attribute":
		return historyFreeAttributes[f.Text(e.Child("attribute"))]
	case "call":
		if m := f.MethodName(e); m != "" {
			return detachingMethods[m]
		}
		fn := e.Child("function")
		return fn.Is("identifier") && plainBuiltins[f.Text(fn)]
	case "binary_operator", "unary_operator", "parenthesized_expression", "list", "tuple", "expression_list",
		"conditional_expression", "list_splat":
		for i, c := range e.NamedChildren() {
			if e.Kind() == "conditional_expression" && i == 1 {
				continue // the condition
			}
			if !NeverTainted(f, c) {
				return false
			}
		}
		return true
	case "subscript":
		return NeverTainted(f, e.Child("value"))
	}
	return true
}

// taintedArgument reports whether an argument of call carries history.
func (t *Taint) taintedArgument(call *pyast.Node) bool {
	args := call.Child("arguments")
	if args == nil {
		return false
	}
	for _, a := range args.NamedChildren() {
		switch a.Kind() {
		case "keyword_argument":
			a = a.Child("value")
		case "list_splat", "dictionary_splat", "parenthesized_list_splat":
			a = a.FirstNamed()
		}
		if t.Tainted(a) {
			return true
		}
	}
	return args.Is("generator_expression")
}

// frozenModel reports whether model call runs a model built with every
// parameter's gradient off: each binding of the name it calls (one at
// least) ends in `.requires_grad_(False)`, maybe followed by `.eval()`,
// `.to(device)` and the like (modelscope's `self.net =
// Inception(...).eval().requires_grad_(False).to(device)`, a frozen
// feature extractor). A model frozen by a statement of its own is not
// taken for one: adapters added later (LoRA) train again.
func (f *File) frozenModel(call *pyast.Node) bool {
	fn := call.Child("function")
	if f.MethodName(call) == "forward" {
		fn = Receiver(call)
	}
	return f.everyBinding(fn, func(b *pyast.Node) bool { return frozenChain(f, b) })
}

// frozenChain reports whether e is a call chain that ends by turning its
// module's gradients off: `Net().requires_grad_(False).to(device)`.
func frozenChain(f *File, e *pyast.Node) bool {
	for e.Is("call") {
		if FreezesParameters(f, e) {
			return true
		}
		switch f.MethodName(e) {
		case "to", "cuda", "cpu", "train", "eval", "half", "float", "double", "bfloat16":
			e = Receiver(e)
			continue
		}
		return false
	}
	return false
}

// detachedInputs reports whether a loss call's inputs are known to carry
// no history: none is tainted and at least one (the prediction) is
// detached explicitly.
func (t *Taint) detachedInputs(call *pyast.Node) bool {
	args := call.Child("arguments")
	if args == nil {
		return false
	}
	detached := false
	for _, a := range args.NamedChildren() {
		if a.Kind() == "keyword_argument" {
			a = a.Child("value")
		}
		if t.Tainted(a) {
			return false
		}
		detached = detached || t.provablyDetached(a, 0)
	}
	return detached
}

// provablyDetached reports whether e has no history whatever it was
// computed from: `.detach()`, `.item()`, a copy, view or slice of such a
// value, or a name last assigned under no-grad (`with torch.no_grad():
// logits = model(x)`) or from such a value.
func (t *Taint) provablyDetached(e *pyast.Node, depth int) bool {
	f := t.f
	if depth > 8 {
		return false
	}
	switch e.Kind() {
	case "call":
		m := f.MethodName(e)
		if detachingMethods[m] {
			return true
		}
		switch m {
		case "cpu", "to", "float", "double", "half", "long", "view", "reshape", "squeeze", "unsqueeze", "flatten", "contiguous":
			return t.provablyDetached(Receiver(e), depth+1)
		}
	case "subscript":
		return t.provablyDetached(e.Child("value"), depth+1)
	case "identifier", "attribute":
		ev, ok := t.last(f.Text(e), e.Start())
		if !ok {
			if e.Is("attribute") {
				return t.provablyDetached(e.Child("object"), depth+1) // out.logits
			}
			return false
		}
		if ev.value == nil || ev.aug || ev.tainted {
			return false
		}
		return t.inNoGrad(ev.value) || t.provablyDetached(ev.value, depth+1)
	}
	return false
}

// add records an assignment to name. Names are copies: a taint outlives
// the version whose text it was computed from (see File.carryOver).
func (t *Taint) add(name string, e taintEvent) {
	switch {
	case t.part == nil:
		appendOwned(t.events, name, e)
	case t.owned == nil: // the module's, computed afresh: in order
		name = t.assigned(name)
		t.events[name] = append(t.events[name], e)
	default: // the module's, patched (see buildModuleTaint)
		t.insert(t.assigned(name), e)
	}
}

// ask records, while the taint is being built, what judging call reads.
func (t *Taint) ask(call *pyast.Node) {
	if t.building {
		t.asked.call(t.f, call)
	}
}

// inNoGrad is File.InNoGrad, recording while the taint is built what the
// answer read: the callers of the enclosing functions it asked about (a
// function only ever called under no_grad runs without autograd), and what
// the context managers of the with statements and decorators around n are
// bound to or do (`with quiet():`, a function of the file that turns
// autograd off around its yield, see turnsGradOff).
func (t *Taint) inNoGrad(n *pyast.Node) bool {
	if !t.building {
		return t.f.InNoGrad(n)
	}
	return t.f.inNoGrad(n, 0, func(c *pyast.Node) {
		if c.Is("function_definition") {
			t.asked["calls:"+t.f.Text(c.Child("name"))] = true
			return
		}
		if v, target := contextTarget(c); v.Is("call") {
			t.asked.call(t.f, v)
		} else {
			t.asked.name(t.f, target)
		}
	})
}

// askDef records, while the taint is being built, that it used the summary
// of a function, and so what that summary read.
func (t *Taint) askDef(s *Summary) {
	if t.building {
		t.asked.summary(s)
	}
}

// IsScalarLoss reports whether e is a loss value: a loss call, a
// reduction (.sum(), .mean()) of a tainted tensor, or a name holding one.
func (t *Taint) IsScalarLoss(e *pyast.Node) bool {
	f := t.f
	switch e.Kind() {
	case "call":
		t.ask(e)
		if f.IsLossCall(e) {
			return true
		}
		switch f.MethodName(e) {
		case "sum", "mean":
			return t.Tainted(Receiver(e)) && f.Arg(e, "dim", 0) == nil
		case "cpu", "to", "float", "squeeze":
			return t.IsScalarLoss(Receiver(e))
		}
	case "identifier":
		ev, _ := t.last(f.Text(e), e.Start())
		return ev.tainted && ev.scalarLoss
	case "binary_operator":
		// loss / accumulation_steps, loss * weight, loss_a + loss_b. Each
		// operand is judged once: a chain `a + b + c ...` nests to the
		// left, and judging it twice a level is exponential in its length.
		l, r := e.Child("left"), e.Child("right")
		leftLoss := t.IsScalarLoss(l)
		if leftLoss && !t.Tainted(r) {
			return true
		}
		return t.IsScalarLoss(r) && (leftLoss || !t.Tainted(l))
	case "parenthesized_expression":
		return e.FirstNamed() != nil && t.IsScalarLoss(e.FirstNamed())
	}
	return false
}

// ReachesBackward reports whether the value held in name flows, within
// scope, into `.backward()` or `torch.autograd.grad/backward`: then keeping
// its graph is the point (gradient accumulation, REINFORCE log-probs,
// `torch.stack(losses).sum().backward()`). For attributes (self.x), the
// whole file is the scope, because methods share them.
func (f *File) ReachesBackward(name string, scope *pyast.Node) bool {
	if strings.Contains(name, ".") {
		scope = f.Tree.Root
		name = name[strings.LastIndexByte(name, '.')+1:]
	}
	return f.backwardSink(scope, anyBackward, name)
}

// FreedByBackward reports whether a backward pass within scope (a step
// loop's body) runs through the value held in name, or a value computed
// from it, and frees its graph's saved tensors: `.backward()`,
// `accelerator.backward(loss)` or `manual_backward`, neither retaining the
// graph nor creating one (torch.autograd.grad is left out: it keeps them
// with create_graph).
func (f *File) FreedByBackward(name string, scope *pyast.Node) bool {
	return f.backwardSink(scope, freeingBackward, name)
}

// falseOrAbsent reports whether an argument is missing, False or None.
func (f *File) falseOrAbsent(arg *pyast.Node) bool {
	return arg == nil || f.Text(arg) == "False" || f.Text(arg) == "None"
}

// backwardKind is which calls backwardSinks counts as backward passes.
type backwardKind int

const (
	anyBackward     backwardKind = iota // isBackwardCall
	freeingBackward                     // see FreedByBackward
)

// question names the answer of backwardSinks for k (see OfVersion).
func (k backwardKind) question() string {
	if k == anyBackward {
		return "backward sinks"
	}
	return "freeing backward sinks"
}

func (k backwardKind) is(f *File, call *pyast.Node) bool {
	if k == anyBackward {
		return isBackwardCall(f, call)
	}
	switch f.MethodName(call) {
	case "backward", "manual_backward":
		return f.falseOrAbsent(f.Arg(call, "retain_graph", -1)) && f.falseOrAbsent(f.Arg(call, "create_graph", -1))
	}
	return false
}

// backwardSinks are the names whose values a backward pass of kind within
// scope takes (as its receiver or an argument), directly or through values
// derived from them: assigned from them, a loop variable over them
// (`for log_prob in saved_log_probs`), or a container filled from them
// (`policy_loss.append(-log_prob * R)`). A name counts as an identifier's
// text, an attribute's whole text, or an attribute's last name. Found once
// per scope and version, backwards from the backward passes: GPU002 and
// GPU003 ask it of every candidate, and at module level the scope is the
// whole file (a walk of it per candidate made a keystroke's cost grow with
// the file's findings).
func (f *File) backwardSinks(scope *pyast.Node, kind backwardKind) map[string]bool {
	return OfVersion(f, kind.question(), scope, func() map[string]bool {
		sinks := map[string]bool{}
		var added []string // sinks whose flows are still to follow
		sink := func(name string) {
			if !sinks[name] {
				sinks[name] = true
				added = append(added, name)
			}
		}
		calls := f.CallsIn(scope)
		for _, call := range calls {
			passNames(f, kind, call, sink)
		}
		if len(added) == 0 {
			return sinks
		}
		flowsInto := map[string][]*pyast.Node{}
		eachFlow(f, append(f.AssignmentsIn(scope), f.LoopsIn(scope)...), calls, func(into string, from *pyast.Node) {
			flowsInto[into] = append(flowsInto[into], from)
		})
		followed := map[*pyast.Node]bool{}
		for len(added) > 0 {
			name := added[len(added)-1]
			added = added[:len(added)-1]
			for _, from := range flowsInto[name] {
				if !followed[from] {
					followed[from] = true
					mentionedNames(f, from, sink)
				}
			}
		}
		return sinks
	})
}

// passNames adds the names a backward pass of kind takes, when call is
// one: `loss.backward()`, `accelerator.backward(loss)`,
// `self.manual_backward(loss)`, `torch.autograd.grad(loss, ...)`.
func passNames(f *File, kind backwardKind, call *pyast.Node, add func(string)) {
	if kind.is(f, call) {
		mentionedNames(f, call.Child("arguments"), add)
		if f.MethodName(call) == "backward" {
			mentionedNames(f, Receiver(call), add)
		}
	}
}

// eachFlow calls flow for what flows into a name, as backwardSinks follows
// it: an assignment's value (or a for loop's iterable, of stores) into its
// targets, a container's new elements (of calls) into the container.
func eachFlow(f *File, stores, calls []*pyast.Node, flow func(into string, from *pyast.Node)) {
	for _, a := range stores {
		if right := a.Child("right"); right != nil && a.Kind() != "while_statement" {
			for _, name := range targetNames(f, a.Child("left")) {
				flow(name, right)
			}
		}
	}
	for _, c := range calls {
		switch f.MethodName(c) {
		case "append", "extend", "insert", "add":
			flow(f.Text(Receiver(c)), c.Child("arguments"))
		}
	}
}

// mentionedNames adds the names e mentions, as backwardSinks counts them:
// each identifier's text, and each attribute's whole text and last name.
func mentionedNames(f *File, e *pyast.Node, add func(string)) {
	pyast.Walk(e, func(n *pyast.Node) bool {
		switch n.Kind() {
		case "identifier":
			add(f.Text(n))
		case "attribute":
			add(f.Text(n))
			if last := f.Text(n.Child("attribute")); last != "" {
				add(last)
			}
		}
		return true
	})
}

// backwardSink reports whether name is one of scope's backward sinks of
// kind (see backwardSinks).
func (f *File) backwardSink(scope *pyast.Node, kind backwardKind, name string) bool {
	if scope == f.Tree.Root {
		return f.moduleSinks(kind).Has(name)
	}
	return f.backwardSinks(scope, kind)[name]
}

// moduleSinks is backwardSinks for the module, the scope of a script's
// candidates, every one of which asks on every version: the names the
// backward passes take (NamesIn) and what flows into what (moduleFlows)
// are patched from the last version's by the segments an edit changed,
// and only the walk from the one along the other is made again.
func (f *File) moduleSinks(kind backwardKind) Names {
	return OfVersion(f, kind.question()+" of the module", f.Tree.Root, func() Names {
		passes := NamesIn(f, kind.question()+": what the passes take", f.Tree.Root, func(stmt *pyast.Node, add func(string)) {
			for _, call := range f.CallsIn(stmt) {
				passNames(f, kind, call, add)
			}
		})
		sinks := Names{}
		if len(passes) == 0 {
			return sinks
		}
		into := f.moduleFlows()
		follow := make([]uint64, 0, len(passes)) // sinks whose flows are still to follow
		for name := range passes {
			sinks[name] = 1
			follow = append(follow, name)
		}
		for len(follow) > 0 {
			name := follow[len(follow)-1]
			follow = follow[:len(follow)-1]
			for from := range into[name] {
				if sinks[from] == 0 {
					sinks[from] = 1
					follow = append(follow, from)
				}
			}
		}
		return sinks
	})
}

// LoopBodyHasBackward reports whether the body of loop calls .backward() or
// torch.autograd.grad.
func (f *File) LoopBodyHasBackward(loop *pyast.Node) bool {
	for _, call := range f.CallsIn(loop.Child("body")) {
		if f.MethodName(call) == "backward" || f.Callee(call) == "torch.autograd.grad" || f.Callee(call) == "torch.autograd.backward" {
			return true
		}
	}
	return false
}

// AssignedIn reports whether name is assigned (plainly, not augmented)
// somewhere inside node.
func (f *File) AssignedIn(name string, node *pyast.Node) bool {
	for _, a := range f.AssignmentsIn(node) {
		if a.Kind() == "assignment" {
			for _, n := range targetNames(f, a.Child("left")) {
				if n == name {
					return true
				}
			}
		}
	}
	return false
}

// Value kinds, for the fixes: `.detach()` and `.item()` exist on tensors
// only, so a fix calls them only on a value known to be one tensor. A model's
// output may be a tuple, a dict or a ModelOutput; a container of tensors
// is not a tensor.

var (
	// torch functions and tensor methods that return tuples or lists.
	tupleReturning = map[string]bool{
		"split": true, "chunk": true, "unbind": true, "sort": true, "topk": true, "kthvalue": true,
		"mode": true, "std_mean": true, "var_mean": true, "lu": true, "qr": true, "svd": true, "eig": true,
		"eigh": true, "slogdet": true, "meshgrid": true, "broadcast_tensors": true, "tensor_split": true,
		"hsplit": true, "vsplit": true, "dsplit": true, "aminmax": true, "frexp": true, "histogram": true,
		"unique_consecutive": true, "tolist": true, "item": true, "numpy": true, "size": true,
		"unique": true, "nonzero": true, "where": true, "max": true, "min": true, "median": true,
		"cummax": true, "cummin": true, "lstsq": true,
	}
	// Reductions that return a tuple only when given a dimension.
	reductionsWithIndices = map[string]bool{"max": true, "min": true, "median": true}
	// torch.nn layers whose forward returns a tuple.
	tupleModules = map[string]bool{
		"RNN": true, "LSTM": true, "GRU": true, "MultiheadAttention": true, "AdaptiveLogSoftmaxWithLoss": true,
	}
)

// IsTensor reports whether e is known to evaluate to one tensor: a loss, a
// torch function or tensor method that returns a tensor, arithmetic on
// one, a torch.nn layer's output, a name last assigned one of those.
// read, when not nil, is told each function definition whose returns the
// answer read (a function of the file the value calls, a model's
// forward), which its summary does not describe: an edit there may change
// the answer, also for a value that calls nothing itself (`out = net(x)`,
// then `out`). It is told nil for a function of another file.
func (t *Taint) IsTensor(e *pyast.Node, read func(def *pyast.Node)) bool {
	if read == nil {
		read = func(*pyast.Node) {}
	}
	return t.isTensor(e, 0, read)
}

func (t *Taint) isTensor(e *pyast.Node, depth int, read func(def *pyast.Node)) bool {
	f := t.f
	if e == nil || depth > 12 {
		return false
	}
	switch e.Kind() {
	case "parenthesized_expression":
		return t.isTensor(e.FirstNamed(), depth+1, read)
	case "identifier":
		return t.nameIsTensor(f.Text(e), e.Start(), depth, read)
	case "attribute":
		// A model output's loss and logits (Hugging Face's ModelOutput).
		switch f.Text(e.Child("attribute")) {
		case "loss", "logits":
			return t.Tainted(e.Child("object"))
		}
	case "subscript":
		return t.isTensor(e.Child("value"), depth+1, read)
	case "binary_operator":
		switch f.Text(e.Child("operator")) {
		case "+", "-", "*", "/", "//", "**", "@", "%":
			// A tensor and a tensor or a number, or a number and a tensor;
			// each operand judged once (see IsScalarLoss).
			l, r := e.Child("left"), e.Child("right")
			leftTensor := t.isTensor(l, depth+1, read)
			if leftTensor && isNumber(r) {
				return true
			}
			return (leftTensor || isNumber(l)) && t.isTensor(r, depth+1, read)
		}
	case "unary_operator":
		return t.isTensor(e.FirstNamed(), depth+1, read)
	case "call":
		model, loss := f.IsModelCall(e), f.IsLossCall(e)
		if m := f.MethodName(e); m != "" && !model && !loss {
			if tupleReturning[m] && !(reductionsWithIndices[m] && f.Arg(e, "dim", 0) == nil) {
				return false
			}
			if facts, ok := f.projectCall(e); ok && !t.plain {
				// `metrics.batch_error(...)`, or a model's method, in
				// another module.
				read(nil)
				return facts.ReturnsTensor
			}
			if q := f.Callee(e); q != "" {
				return t.torchFunctionTensor(q, e)
			}
			return t.isTensor(Receiver(e), depth+1, read)
		}
		switch {
		case loss:
			return true
		case model:
			fn := e.Child("function")
			if c := f.classOfInstance(fn, 0); c != nil {
				forward := f.methodOf(c, "forward", 0)
				if forward == nil || t.plain {
					return false
				}
				read(forward)
				return f.returnsTensor(forward, depth+1)
			}
			if facts, ok := f.projectCall(e); ok && !t.plain {
				read(nil)
				return facts.ReturnsTensor // a model of another module: its forward
			}
			return f.layerReturnsTensor(fn)
		}
		if def := f.resolveCall(e); def != nil {
			if t.plain {
				return false
			}
			read(def)
			return f.returnsTensor(def, depth+1)
		}
		if facts, ok := f.projectCall(e); ok && !t.plain {
			read(nil)
			return facts.ReturnsTensor
		}
		if q := f.Callee(e); q != "" {
			return t.torchFunctionTensor(q, e)
		}
	}
	return false
}

// nameIsTensor reports whether name, at offset at, holds one tensor: its
// last assignment assigned one (`x += y` keeps a tensor a tensor when y is
// a tensor or a number). Judged on demand, with the file's current model.
func (t *Taint) nameIsTensor(name string, at, depth int, read func(def *pyast.Node)) bool {
	ev, ok := t.last(name, at)
	if !ok || ev.value == nil || depth > 12 {
		return false
	}
	if ev.aug {
		return t.nameIsTensor(name, ev.from, depth+1, read) && (t.isTensor(ev.value, depth+1, read) || isNumber(ev.value))
	}
	return t.isTensor(ev.value, depth+1, read)
}

func (t *Taint) torchFunctionTensor(q string, call *pyast.Node) bool {
	name, ok := strings.CutPrefix(q, "torch.")
	if !ok {
		return false
	}
	name, _ = strings.CutPrefix(name, "nn.functional.")
	if strings.Contains(name, ".") || isClassName(name) || tupleReturning[name] && !(reductionsWithIndices[name] && t.f.Arg(call, "dim", 1) == nil) {
		return false
	}
	return true
}

// layerReturnsTensor reports whether fn names a torch.nn layer (bound in
// this file) whose forward returns one tensor.
func (f *File) layerReturnsTensor(fn *pyast.Node) bool {
	if !fn.Is("identifier", "attribute") {
		return false
	}
	binds := f.BindingsOf(fn)
	if len(binds) == 0 {
		return false
	}
	for _, b := range binds {
		b = f.unwrapModuleChain(b)
		q := ""
		if b.Is("call") {
			q = f.Callee(b)
		}
		name, ok := strings.CutPrefix(q, "torch.nn.")
		if !ok || strings.Contains(name, ".") || tupleModules[name] || name == "Sequential" || name == "ModuleList" || name == "ModuleDict" {
			return false
		}
	}
	return true
}

func isNumber(e *pyast.Node) bool { return e.Is("integer", "float") }
