package semantic

import (
	"strings"

	"github.com/vramlint/vramlint/analysis/pyast"
)

// Running-average meters (the ImageNet example's AverageMeter, copied into
// thousands of projects, and timm's) sum what they are given:
//
//	def update(self, val, n=1):
//	    self.val = val
//	    self.sum += val * n
//
// A loss passed as it is (`losses.update(loss, x.size(0))`) makes the sum a
// tensor whose graph links every step's, as `total += loss` does.

// libraryMeters are the meter classes of libraries whose update adds the
// value it is given as it is, by qualified name.
var libraryMeters = map[string]bool{
	"timm.utils.AverageMeter":         true,
	"timm.utils.metrics.AverageMeter": true,
}

// SumsArgument reports whether call runs a method that adds its first
// argument, as it is, into an attribute of its object (see
// sumsFirstArgument): a method of a class of this file the receiver is an
// instance of, of a class of another file of the project (through
// FunctionFacts), or a library meter's update.
func (f *File) SumsArgument(call *pyast.Node) bool {
	if def := f.resolveCall(call); def != nil {
		return f.summary(def).SumsFirstArgument
	}
	fn := call.Child("function")
	if !fn.Is("attribute") {
		return false
	}
	if f.Text(fn.Child("attribute")) == "update" && libraryMeters[f.typeOfInstance(fn.Child("object"), 0)] {
		return true
	}
	facts, ok := f.projectCall(call)
	return ok && facts.SumsFirstArgument
}

// sumsFirstArgument reports whether def, a method, adds its first
// parameter after self, as it is, into an attribute of self: `self.sum +=
// val * n`, `self.total += val`, never rebinding the parameter (`val =
// val.item()` first makes the sum a number), into a sum that no backward
// pass of the class takes.
func sumsFirstArgument(f *File, def *pyast.Node) bool {
	if !isMethod(def) {
		return false
	}
	params := plainParameters(f, def)
	if len(params) < 2 {
		return false // *args, **kwargs: not a meter's update
	}
	self, val := params[0], params[1]
	sums := false
	for _, a := range f.AssignmentsIn(def) {
		if !InScope(a, def) {
			continue
		}
		left := a.Child("left")
		if a.Kind() == "assignment" || f.Text(a.Child("operator")) != "+=" {
			for _, name := range targetNames(f, left) {
				if name == val {
					return false
				}
			}
			continue
		}
		if !left.Is("attribute") || f.Text(left.Child("object")) != self {
			continue
		}
		// A sum a method of the class backpropagates (a loss
		// accumulated for a later backward pass) keeps its graph on
		// purpose. Asked of the class, by the attribute's whole text:
		// the file's `loss.sum().backward()` says nothing of `self.sum`.
		if addsAsItIs(f, a.Child("right"), val) && !f.backwardSink(def.Ancestor("class_definition"), anyBackward, f.Text(left)) {
			sums = true
		}
	}
	return sums
}

// addsAsItIs reports whether the added value e is the name val or val
// times something (`val`, `val * n`, `n * val`).
func addsAsItIs(f *File, e *pyast.Node, val string) bool {
	if e.Is("binary_operator") && f.Text(e.Child("operator")) == "*" {
		return f.Text(e.Child("left")) == val || f.Text(e.Child("right")) == val
	}
	return f.Text(e) == val
}

// plainParameters returns the names of def's parameters, or nil when one
// is not a plain name (`*args`, `**kwargs`, `/`, `*`).
func plainParameters(f *File, def *pyast.Node) []string {
	var params []string
	for _, p := range def.Child("parameters").NamedChildren() {
		id := parameterName(p)
		if !id.Is("identifier") {
			return nil
		}
		params = append(params, f.Text(id))
	}
	return params
}

// StoredArguments reports which positional arguments of call (bit i: the
// i-th) the method it runs stores, as they are, in a list or dict on its
// object (see storedParameters): a method of a class of this file the
// receiver is an instance of (self included), or of a class of another
// file of the project (through FunctionFacts).
func (f *File) StoredArguments(call *pyast.Node) uint64 {
	if def := f.resolveCall(call); def != nil {
		return f.summary(def).StoredArguments
	}
	facts, ok := f.projectCall(call)
	if !ok {
		return 0
	}
	return facts.StoredArguments
}

// storedParameters reports which of def's parameters after self (bit i:
// the i-th) the method appends, as they are, to a container on self:
// `self.losses.append(loss)`, `self.history["loss"].append(loss)`,
// `self.last[k] = loss`, never rebinding the parameter. Not a container
// the method sets afresh (it lives one call), one the class takes elements
// from (`pop`: a window), hands to NumPy (which raises on tensors that
// require grad: code that runs stores none there), or backpropagates
// through (a loss kept for a later backward pass).
func storedParameters(f *File, def *pyast.Node) uint64 {
	// Asked of every function summarised: the cheap test first.
	if !isMethod(def) {
		return 0
	}
	class := def.Ancestor("class_definition")
	params := plainParameters(f, def)
	if class == nil || len(params) < 2 || len(params) > 64 {
		return 0
	}
	index := map[string]int{}
	for i, p := range params[1:] {
		index[p] = i
	}
	self := params[0]
	// The container on self a store goes into: `self.x` for `self.x`
	// and `self.x[k]`.
	onSelf := func(c *pyast.Node) string {
		if c.Is("subscript") {
			c = c.Child("value")
		}
		if c.Is("attribute") && f.Text(c.Child("object")) == self {
			return f.Text(c)
		}
		return ""
	}
	containers := map[string]uint64{}
	for _, c := range f.CallsIn(def) {
		switch f.MethodName(c) {
		case "append", "add", "appendleft":
		default:
			continue
		}
		arg := f.Arg(c, "", 0)
		i, isParam := index[f.Text(arg)]
		if container := onSelf(Receiver(c)); container != "" && arg.Is("identifier") && isParam && InScope(c, def) {
			containers[container] |= 1 << i
		}
	}
	afresh := map[string]bool{} // set on every call, wherever in the method
	for _, a := range f.AssignmentsIn(def) {
		if !InScope(a, def) {
			continue
		}
		left, right := a.Child("left"), a.Child("right")
		for _, name := range targetNames(f, left) {
			if _, isParam := index[name]; isParam {
				return 0 // rebound: `loss = loss.item()`
			}
			afresh[name] = true
		}
		if i, isParam := index[f.Text(right)]; a.Kind() == "assignment" && left.Is("subscript") && right.Is("identifier") && isParam {
			if container := onSelf(left); container != "" {
				containers[container] |= 1 << i
			}
		}
	}
	var stored uint64
	for container, bits := range containers {
		if afresh[container] || f.backwardSink(class, anyBackward, container) || containerTakenOrJoined(f, class, container) {
			continue
		}
		stored |= bits
	}
	return stored
}

// containerTakenOrJoined reports whether a method of class takes elements
// out of the container on self (`self.xs.pop(0)`) or hands it to NumPy
// (`np.array(self.xs)`, `np.mean(self.xs)`).
func containerTakenOrJoined(f *File, class *pyast.Node, container string) bool {
	for _, c := range f.CallsIn(class) {
		switch f.MethodName(c) {
		case "pop", "popleft", "popitem":
			if r := Receiver(c); r.Is("subscript") && f.Text(r.Child("value")) == container || f.Text(r) == container {
				return true
			}
		}
		if q := f.QualifiedName(c.Child("function")); strings.HasPrefix(q, "numpy.") && MentionsName(f, c.Child("arguments"), container) {
			return true
		}
	}
	return false
}
