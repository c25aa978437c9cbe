package semantic

import (
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
		return sumsFirstArgument(f, def)
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
	var params []string
	for _, p := range def.Child("parameters").NamedChildren() {
		id := p
		switch {
		case p.Is("typed_parameter"):
			id = p.FirstNamed()
		case p.Is("default_parameter", "typed_default_parameter"):
			id = p.Child("name")
		}
		if !id.Is("identifier") {
			return false // *args, **kwargs: not a meter's update
		}
		params = append(params, f.Text(id))
	}
	if len(params) < 2 {
		return false
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
		right := a.Child("right")
		if right.Is("binary_operator") && f.Text(right.Child("operator")) == "*" {
			right = right.Child("left")
			if f.Text(right) != val {
				right = a.Child("right").Child("right")
			}
		}
		// A sum a method of the class backpropagates (a loss
		// accumulated for a later backward pass) keeps its graph on
		// purpose. Asked of the class, by the attribute's whole text:
		// the file's `loss.sum().backward()` says nothing of `self.sum`.
		if f.Text(right) == val && !f.backwardSinks(def.Ancestor("class_definition"), anyBackward)[f.Text(left)] {
			sums = true
		}
	}
	return sums
}
