package rules

import (
	"strings"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/semantic"
)

// usedAsTensor reports whether the value held in name is later used in a
// way only tensors support: passed to a torch function (torch.stack(losses),
// torch.log(total)), or given a tensor method or attribute. For a container
// (elements true) that is an element's method, losses[-1].backward(); for a
// total, total.item(). Then `.item()`, which turns the values into Python
// floats, would break that code; `.detach()` does not.
func usedAsTensor(f *semantic.File, name string, scope *pyast.Node, elements bool) bool {
	if strings.Contains(name, ".") {
		scope = f.Tree.Root
	}
	used := false
	f.Tree.Walk(scope, func(n *pyast.Node) bool {
		switch {
		case used:
		case n.Is("call") && strings.HasPrefix(f.Callee(n), "torch."):
			used = semantic.MentionsName(f, n.Child("arguments"), name)
		case n.Is("attribute"):
			obj := n.Child("object")
			if elements {
				if !obj.Is("subscript") {
					return true
				}
				obj = obj.Child("value")
			}
			used = obj.Is("identifier", "attribute") && f.Text(obj) == name
		}
		return !used
	})
	return used
}

// wrapFix is a fix that calls method on the expression e.
func wrapFix(f *semantic.File, verb string, e *pyast.Node, method string, safety analysis.Applicability) analysis.Fix {
	text := f.Text(e)
	if !analysis.Primary(e) {
		text = "(" + text + ")"
	}
	return analysis.Fix{
		Title:         verb + " `" + text + "." + method + "`",
		Applicability: safety,
		Edits:         analysis.WrapMethod(e, method),
	}
}
