package rules

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/semantic"
)

// This file builds GPU001's fix: return CPU tensors from the worker code,
// pin the DataLoader's memory and move the batch in the training loop.

// deviceMoveFix builds the fix for every move in one worker function. It
// is applicable (unsafe) only when every loop that consumes the loaders'
// batches is found, in whichever function of the file the loader is built
// in it is (the worker code's file, or another file of the project that
// builds a DataLoader over it), and each can take the transfer; otherwise
// it is display-only, with no edits, and its title says where the transfer
// must go: removing the moves alone would feed CPU batches to a model on
// the GPU. The fix's title is returned apart (it may cite a line), and
// what the fix read of the worker code's file is recorded in reads (nil:
// not recorded).
func deviceMoveFix(pass *analysis.Pass, devices []*pyast.Node, wc workerCode, moves []deviceMove, reads *semantic.Reads) (analysis.Fix, lineText) {
	f := pass.File
	displayOnly := func(why lineText) (analysis.Fix, lineText) {
		return analysis.Fix{Applicability: analysis.DisplayOnly},
			why.within("Return CPU tensors from "+wc.label+" and move each batch where it is used (", ")")
	}
	var shape *batchShape
	if len(moves) == len(wc.moves) {
		// All of the function's moves (none under `# noqa`): the shape
		// follows from its code and what names are bound to, as the moves
		// do, and the versions of a buffer share it.
		shape = semantic.Remember(f, "GPU001 shape", wc.fn, func() *batchShape { return movedShape(f, wc.fn, moves) })
	} else {
		shape = movedShape(f, wc.fn, moves)
	}
	if shape == nil {
		return displayOnly(plainText("the fix cannot tell which parts of a sample were moved"))
	}
	wd := devicesOfMoves(f, moves)
	// The loaders by the file they are in, this file first.
	type site struct {
		file    *semantic.File
		loaders []*semantic.DataLoader
	}
	sites := []site{{file: f, loaders: wc.loaders}}
	for _, r := range wc.remote {
		other := f.Project.Model(r.Path)
		loader := loaderAt(other, r.Start)
		if loader == nil {
			return displayOnly(plainText("the DataLoader in " + filepath.Base(r.Path) + " cannot be read"))
		}
		if sites[len(sites)-1].file != other {
			sites = append(sites, site{file: other})
		}
		sites[len(sites)-1].loaders = append(sites[len(sites)-1].loaders, loader)
	}
	var edits []analysis.Edit
	var others []analysis.FileEdits
	anyLoop := false
	for i, st := range sites {
		sf, where, siteReads := st.file, "", reads
		if i > 0 {
			// Another file: its lines are told now, and what is read
			// there is not this file's code (reads records this file's).
			where, siteReads = " in "+filepath.Base(sf.Path), nil
		}
		// Cites a line of sf.
		atLine := func(t lineText) lineText {
			if i > 0 {
				return plainText(t.String(sf))
			}
			return t
		}
		var loops []*pyast.Node
		for _, loader := range st.loaders {
			flow := followLoader(sf, loader, siteReads)
			if len(flow.escapes) > 0 {
				return displayOnly(atLine(flow.escapes[0]).within("the DataLoader"+where+" cannot be followed: ", ""))
			}
			loops = append(loops, flow.loops...)
		}
		siteDevices := devices
		if i > 0 {
			siteDevices = semantic.DeviceBindings.Of(sf)
		}
		var siteEdits []analysis.Edit
		for _, loop := range loops {
			siteReads.Code(loop)
			loopEdits, ok := moveBatchInLoop(sf, siteDevices, loop, shape, wd)
			if !ok {
				return displayOnly(atLine(lineText{"the loop on line ", loop.Start(), where + " binds the batch in a way the fix cannot follow"}))
			}
			siteEdits = append(siteEdits, loopEdits...)
		}
		anyLoop = anyLoop || len(loops) > 0
		for _, loader := range st.loaders {
			if loader.PinMemory == nil {
				siteEdits = append(siteEdits, addKeyword(sf, loader.Call, "pin_memory=True"))
			}
		}
		if i == 0 {
			edits = siteEdits
		} else if len(siteEdits) > 0 {
			pass.Other(sf)
			for k, e := range siteEdits {
				siteEdits[k] = analysis.Edit{Start: sf.ToSource(e.Start), End: sf.ToSource(e.End), NewText: e.NewText}
			}
			others = append(others, analysis.FileEdits{Path: sf.Path, Edits: siteEdits})
		}
	}
	if !anyLoop {
		return displayOnly(plainText("no loop over its batches in this file"))
	}
	edits = append(removeMoves(f, moves), edits...)
	return analysis.Fix{
		Applicability: analysis.Unsafe,
		Edits:         edits,
		Others:        others,
	}, plainText("Move the device transfer into the training loop")
}

// loaderAt finds the DataLoader whose call starts at offset start of the
// file's source; nil when there is none (the file changed).
func loaderAt(f *semantic.File, start int) *semantic.DataLoader {
	if f == nil {
		return nil
	}
	for _, d := range f.DataLoaders {
		if f.ToSource(d.Call.Start()) == start {
			return d
		}
	}
	return nil
}

// removeMoves returns the edits that take each device move out, leaving
// the tensor on the CPU (and any dtype conversion in place).
func removeMoves(f *semantic.File, moves []deviceMove) []analysis.Edit {
	var edits []analysis.Edit
	for _, m := range moves {
		switch {
		case m.deviceKw != nil:
			edits = append(edits, removeArgument(m.call.Child("arguments"), m.deviceKw))
		case isSelfMove(f, m):
			edits = append(edits, analysis.RemoveStatement(f, m.call.Parent().Parent()))
		case f.MethodName(m.call) == "cuda":
			edits = append(edits, analysis.Edit{Start: m.start, End: m.end})
		default: // .to(device, ...): keep the arguments that are not about the device
			var kept []string
			args := m.call.Child("arguments")
			if args == nil {
				continue
			}
			for i, a := range args.NamedChildren() {
				switch {
				case a.Kind() == "keyword_argument":
					switch f.Text(a.Child("name")) {
					case "device", "non_blocking", "copy":
						continue
					}
				case i == 0 && f.IsDeviceExpr(a):
					continue
				}
				kept = append(kept, f.Text(a))
			}
			if len(kept) == 0 {
				edits = append(edits, analysis.Edit{Start: m.start, End: m.end})
			} else {
				edits = append(edits, analysis.Edit{Start: args.Start(), End: args.End(), NewText: "(" + strings.Join(kept, ", ") + ")"})
			}
		}
	}
	return edits
}

// isSelfMove reports whether the move is a whole statement `x = x.cuda()`
// (or `x = x.to(device)` with nothing but device arguments): without the
// move it would be `x = x`, so the statement goes.
func isSelfMove(f *semantic.File, m deviceMove) bool {
	a := m.call.Parent()
	if m.deviceKw != nil || !a.Is("assignment") || a.Child("right") != m.call || !a.Parent().Is("expression_statement") {
		return false
	}
	if f.Text(a.Child("left")) != f.Text(semantic.Receiver(m.call)) {
		return false
	}
	if f.MethodName(m.call) == "to" {
		for i, arg := range m.call.Child("arguments").NamedChildren() {
			isDevice := i == 0 && f.IsDeviceExpr(arg) ||
				arg.Is("keyword_argument") && strings.Contains(" device non_blocking copy ", " "+f.Text(arg.Child("name"))+" ")
			if !isDevice {
				return false
			}
		}
	}
	return true
}

// removeArgument deletes one argument and the comma that separates it.
func removeArgument(args, arg *pyast.Node) analysis.Edit {
	children := args.ChildList()
	for i, c := range children {
		if c != arg {
			continue
		}
		if i > 0 && children[i-1].Kind() == "," {
			return analysis.Edit{Start: children[i-1].Start(), End: arg.End()}
		}
		if i+1 < len(children) && children[i+1].Kind() == "," {
			end := children[i+1].End()
			if i+2 < len(children) {
				end = children[i+2].Start()
			}
			return analysis.Edit{Start: arg.Start(), End: end}
		}
	}
	return analysis.Edit{Start: arg.Start(), End: arg.End()}
}

// addKeyword appends a keyword argument to a call: inline, or on a line
// of its own when the arguments are one per line.
func addKeyword(f *semantic.File, call *pyast.Node, kw string) analysis.Edit {
	args := call.Child("arguments")
	named := args.NamedChildren()
	if len(named) == 0 {
		return analysis.Edit{Start: args.Start() + 1, End: args.Start() + 1, NewText: kw}
	}
	last := named[len(named)-1]
	if f.Mapper.LineOf(last.Start()) == f.Mapper.LineOf(args.Start()) {
		return analysis.Edit{Start: last.End(), End: last.End(), NewText: ", " + kw}
	}
	eol, indent := f.LineEnding(), f.IndentAt(last.Start())
	if comma := last.NextSibling(); comma.Is(",") {
		return analysis.Edit{Start: comma.End(), End: comma.End(), NewText: eol + indent + kw + ","}
	}
	return analysis.Edit{Start: last.End(), End: last.End(), NewText: "," + eol + indent + kw}
}

// batchShape says which parts of what the worker code returns were on the
// device: positions of a tuple, keys of a dict, or the single value.
type batchShape struct {
	positional []bool
	keys       []string // moved dict keys, in order, as written (quoted)
	single     bool
}

// movedShape finds which returned (or yielded) values carried a device
// move. It returns nil when the returns disagree or cannot be read.
func movedShape(f *semantic.File, fn *pyast.Node, moves []deviceMove) *batchShape {
	moved := movedNames(f, fn, moves)
	carries := func(e *pyast.Node) bool {
		for _, m := range moves {
			if e.Start() <= m.start && m.end <= e.End() {
				return true
			}
		}
		found := false
		pyast.Walk(e, func(n *pyast.Node) bool {
			if n.Is("identifier") && moved[f.Text(n)] {
				found = true
			}
			return !found
		})
		return found
	}
	var values []*pyast.Node
	if fn.Kind() == "lambda" {
		values = append(values, fn.Child("body"))
	} else {
		pyast.Walk(fn.Child("body"), func(n *pyast.Node) bool {
			switch n.Kind() {
			case "function_definition", "lambda", "class_definition":
				return false
			case "return_statement":
				if v := n.NamedChildren(); len(v) == 1 {
					values = append(values, v[0])
				}
			case "yield":
				if v := n.NamedChildren(); len(v) == 1 {
					values = append(values, v[0])
				}
			}
			return true
		})
	}
	var shape *batchShape
	for _, v := range values {
		s := &batchShape{}
		switch v.Kind() {
		case "expression_list", "tuple":
			for _, el := range v.NamedChildren() {
				s.positional = append(s.positional, carries(el))
			}
		case "dictionary":
			for _, pair := range v.NamedChildren() {
				key := pair.Child("key")
				if !pair.Is("pair") || !key.Is("string") {
					return nil
				}
				if carries(pair.Child("value")) {
					// A copy: the shape outlives this version's text (see
					// deviceMoveFix).
					s.keys = append(s.keys, strings.Clone(f.Text(key)))
				}
			}
		default:
			s.single = carries(v)
		}
		if shape == nil {
			shape = s
			continue
		}
		// Merge: the same kind of value from every return.
		switch {
		case len(s.positional) != len(shape.positional):
			return nil
		case s.positional != nil:
			for i := range s.positional {
				shape.positional[i] = shape.positional[i] || s.positional[i]
			}
		case s.keys != nil || shape.keys != nil:
			shape.keys = mergeKeys(shape.keys, s.keys)
		default:
			shape.single = shape.single || s.single
		}
	}
	if shape == nil || !shape.anyMoved() {
		return nil
	}
	return shape
}

func mergeKeys(a, b []string) []string {
	for _, k := range b {
		found := false
		for _, have := range a {
			found = found || have == k
		}
		if !found {
			a = append(a, k)
		}
	}
	return a
}

func (s *batchShape) anyMoved() bool {
	for _, m := range s.positional {
		if m {
			return true
		}
	}
	return s.single || len(s.keys) > 0
}

// movedNames are the names in fn that hold a moved tensor, or a value
// computed from one.
func movedNames(f *semantic.File, fn *pyast.Node, moves []deviceMove) map[string]bool {
	moved := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for _, a := range f.AssignmentsIn(fn) {
			if a.Kind() != "assignment" {
				continue
			}
			right := a.Child("right")
			if right == nil {
				continue
			}
			hit := false
			for _, m := range moves {
				hit = hit || right.Start() <= m.start && m.end <= right.End()
			}
			pyast.Walk(right, func(n *pyast.Node) bool {
				hit = hit || n.Is("identifier") && moved[f.Text(n)]
				return !hit
			})
			if left := a.Child("left"); hit && left.Is("identifier") && !moved[f.Text(left)] {
				moved[f.Text(left)], changed = true, true
			}
		}
	}
	return moved
}

// bindsLocally reports whether fn (a function or lambda) binds name
// itself: as a parameter, or by assigning it or looping over it in its own
// code.
func bindsLocally(f *semantic.File, fn *pyast.Node, name string) bool {
	found := false
	pyast.Walk(fn.Child("parameters"), func(n *pyast.Node) bool {
		found = found || n.Is("identifier") && f.Text(n) == name
		return !found
	})
	for _, a := range f.AssignmentsIn(fn) {
		if !found && semantic.InScope(a, fn) && a.Kind() == "assignment" && f.AssignedIn(name, a) {
			found = true
		}
	}
	for _, l := range f.LoopsIn(fn) {
		if !found && semantic.InScope(l, fn) && l.Kind() == "for_statement" {
			pyast.Walk(l.Child("left"), func(n *pyast.Node) bool {
				found = found || n.Is("identifier") && f.Text(n) == name
				return !found
			})
		}
	}
	return found
}

// unwrapIterable strips enumerate(), tqdm() and iter() from a loop's
// iterable and says whether enumerate was among them.
func unwrapIterable(f *semantic.File, it *pyast.Node) (*pyast.Node, bool) {
	enumerated := false
	for it.Is("call") && iterWrappers[f.Text(it.Child("function"))] {
		arg := f.Arg(it, "iterable", 0)
		if arg == nil {
			break
		}
		enumerated = enumerated || f.Text(it.Child("function")) == "enumerate"
		it = arg
	}
	return it, enumerated
}

// moveBatchInLoop returns the edits that move the batch elements of shape
// to the device inside loop, right after they are bound.
func moveBatchInLoop(f *semantic.File, devices []*pyast.Node, loop *pyast.Node, shape *batchShape, wd workerDevice) ([]analysis.Edit, bool) {
	target := loop.Child("left")
	if _, enumerated := unwrapIterable(f, loop.Child("right")); enumerated {
		parts := target.NamedChildren()
		if !target.Is("pattern_list", "tuple_pattern") || len(parts) != 2 {
			return nil, false
		}
		target = parts[1]
	}
	body := loop.Child("body")
	if body == nil || target == nil {
		return nil, false
	}
	stmts := body.NamedChildren()
	if len(stmts) == 0 || f.Mapper.LineOf(stmts[0].Start()) == f.Mapper.LineOf(loop.Start()) {
		return nil, false // a one-line loop: no line to insert on
	}
	device := deviceAtLoop(f, devices, loop, wd)
	move := func(e string) string {
		if device == "" {
			return e + ".cuda(non_blocking=True)"
		}
		return e + ".to(" + device + ", non_blocking=True)"
	}
	var lines []string
	anchor := stmts[0]
	after := false // insert after anchor rather than before it
	switch {
	case target.Is("pattern_list", "tuple_pattern", "list_pattern"):
		names := target.NamedChildren()
		if len(names) != len(shape.positional) {
			return nil, false
		}
		for i, n := range names {
			if shape.positional[i] {
				if !n.Is("identifier") {
					return nil, false
				}
				lines = append(lines, f.Text(n)+" = "+move(f.Text(n)))
			}
		}
	case target.Is("identifier"):
		batch := f.Text(target)
		anchor = skipBatchGuards(f, stmts, batch)
		if anchor == nil {
			return nil, false
		}
		switch {
		case shape.single:
			lines = append(lines, batch+" = "+move(batch))
		case len(shape.keys) > 0:
			for _, k := range shape.keys {
				el := batch + "[" + k + "]"
				lines = append(lines, el+" = "+move(el))
			}
		default:
			// images, labels = batch on a later line: move right after it.
			if unpack := findUnpack(f, stmts, batch, len(shape.positional)); unpack != nil {
				anchor, after = unpack, true
				for i, n := range unpack.Child("left").NamedChildren() {
					if shape.positional[i] {
						lines = append(lines, f.Text(n)+" = "+move(f.Text(n)))
					}
				}
				break
			}
			for i, m := range shape.positional {
				if m {
					el := batch + "[" + strconv.Itoa(i) + "]"
					lines = append(lines, el+" = "+move(el))
				}
			}
		}
	default:
		return nil, false
	}
	// A loop that already moves the batch so (the fix of another worker
	// function of the same DataLoader, its collate_fn or its Dataset, put
	// the move there) is not given a second one.
	present := map[string]bool{}
	for _, st := range stmts {
		present[strings.Join(strings.Fields(f.Text(st)), " ")] = true
	}
	indent, eol := f.IndentAt(anchor.Start()), f.LineEnding()
	text := ""
	for _, l := range lines {
		if !present[l] {
			text += indent + l + eol
		}
	}
	if text == "" {
		return nil, true
	}
	if after {
		return []analysis.Edit{analysis.InsertLinesAfter(f, anchor.End(), text)}, true
	}
	start, _ := f.LineBounds(anchor.Start())
	return []analysis.Edit{{Start: start, End: start, NewText: text}}, true
}

// skipBatchGuards returns the first statement after leading guards such as
// `if batch is None: continue`, where the batch can first be used.
func skipBatchGuards(f *semantic.File, stmts []*pyast.Node, batch string) *pyast.Node {
	for _, s := range stmts {
		if s.Is("if_statement") && strings.Contains(f.Text(s.Child("condition")), batch) {
			continue
		}
		return s
	}
	return nil
}

// findUnpack finds `a, b = batch` among the loop body's statements.
func findUnpack(f *semantic.File, stmts []*pyast.Node, batch string, n int) *pyast.Node {
	for _, s := range stmts {
		if !s.Is("expression_statement") || len(s.NamedChildren()) != 1 {
			continue
		}
		a := s.NamedChildren()[0]
		if a.Is("assignment") && f.Text(a.Child("right")) == batch {
			if left := a.Child("left"); left.Is("pattern_list", "tuple_pattern") && len(left.NamedChildren()) == n {
				for _, el := range left.NamedChildren() {
					if !el.Is("identifier") {
						return nil
					}
				}
				return a
			}
		}
	}
	return nil
}

// deviceAtLoop names the device to move the batch to, the clearest one
// the loop can see: the device the worker code named, when it is a literal
// ("cuda", torch.device("cuda:1")) or a variable visible there; else a `device` parameter of the loop's function (a loader
// passed to train(model, loader, device)); else the nearest device
// variable assigned before the loop in its function or at module level;
// else, when the worker code's device cannot be named at the loop (say
// self.device) and the loop's function takes the model, the model's own
// device (`next(model.parameters()).device`); "" when there is none (then
// .cuda() is used, as the worker code's move was to a CUDA device).
func deviceAtLoop(f *semantic.File, devices []*pyast.Node, loop *pyast.Node, wd workerDevice) string {
	scope := semantic.Scope(loop)
	var visible []string // in source order
	for _, a := range devices {
		if a.End() > loop.Start() {
			break
		}
		if s := semantic.Scope(a); s == scope || s == f.Tree.Root {
			visible = append(visible, f.Text(a.Child("left")))
		}
	}
	var params []string
	if scope.Is("function_definition") {
		params = parameterNames(f, scope)
	}
	for _, c := range wd.named {
		if c.literal || slices.Contains(visible, c.text) || slices.Contains(params, c.text) {
			return c.text
		}
	}
	switch {
	case slices.Contains(params, "device"):
		return "device"
	case len(visible) > 0:
		return visible[len(visible)-1]
	case wd.unnamed && slices.Contains(params, "model"):
		return "next(model.parameters()).device"
	}
	return ""
}

// workerDevice is what the worker code's moves say about their device,
// read in the worker code's file (the loop may be in another).
type workerDevice struct {
	// named are the devices the moves named, in order: literals ("cuda:1",
	// torch.device("cuda")) valid anywhere, plain names valid where the
	// loop sees them too.
	named []struct {
		text    string
		literal bool
	}
	// unnamed: some move named a device the loop may not see (such as
	// self.device): only then is the model's own device the best guess;
	// .cuda() in the worker code is .cuda() at the loop.
	unnamed bool
}

func devicesOfMoves(f *semantic.File, moves []deviceMove) workerDevice {
	var wd workerDevice
	for _, m := range moves {
		if f.MethodName(m.call) != "to" {
			continue
		}
		d := f.Arg(m.call, "device", 0)
		wd.unnamed = wd.unnamed || d.Is("identifier", "attribute", "subscript", "call")
		switch {
		case d.Is("string") && d.ChildOfKind("interpolation") == nil:
			wd.add(f.Text(d), true) // "cuda:1", not an f-string
		case d.Is("call") && f.Callee(d) == "torch.device" && len(d.Child("arguments").NamedChildren()) == 1 &&
			d.Child("arguments").NamedChildren()[0].Is("string"):
			wd.add(f.Text(d), true)
		case d.Is("identifier"):
			wd.add(f.Text(d), false)
		}
	}
	return wd
}

func (wd *workerDevice) add(text string, literal bool) {
	wd.named = append(wd.named, struct {
		text    string
		literal bool
	}{text, literal})
}
