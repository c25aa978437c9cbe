package rules

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/semantic"
)

// DeviceMoveInDataset reports tensors moved to a CUDA device inside the
// code DataLoader workers run: Dataset.__getitem__/__getitems__,
// IterableDataset.__iter__ and collate functions.
var DeviceMoveInDataset = &analysis.Rule{
	Code:            "GPU001",
	Name:            "device-move-in-dataset",
	Summary:         "A Dataset or collate function moves tensors to the GPU, inside DataLoader worker processes",
	DefaultSeverity: analysis.SeverityWarning,
	SeverityWhen: "error when a DataLoader that uses the code has a literal `num_workers` above 0, " +
		"so the move certainly runs in worker processes",
	Fixable: analysis.FixAlways,
	Doc: analysis.Doc{
		What: "Finds `.cuda()`, `.to(<cuda device>)` and tensor factories called with a CUDA `device=` " +
			"inside `__getitem__`/`__getitems__` of a `torch.utils.data.Dataset`, `__iter__` of an " +
			"`IterableDataset`, or a function passed to a DataLoader as `collate_fn`. " +
			"Dtype conversions such as `.to(torch.float32)` are not device moves and are not reported.",
		Why: "That code runs in the DataLoader's worker processes when `num_workers > 0`. " +
			"The CUDA runtime does not survive `fork`: with the `fork` start method (the Linux default " +
			"before Python 3.14), a worker forked after the parent initialised CUDA - the model is usually on " +
			"the GPU by then, and `torch.cuda.is_available()` alone is enough - dies with \"Cannot " +
			"re-initialize CUDA in forked subprocess\". Otherwise, and always with `spawn` or `forkserver` " +
			"(the Linux default from Python 3.14), every worker creates its own CUDA context, several hundred " +
			"MiB of GPU memory each (about 580 MiB on an H200: docs/GPU-MEASUREMENTS.md), and the tensors " +
			"reach the main process through CUDA IPC, which keeps the producing worker's memory alive; under " +
			"`fork` only until the parent uses a batch, which initialises CUDA there, and the next epoch's " +
			"workers die. " +
			"`pin_memory=True` fails outright: the pinning thread raises \"cannot pin " +
			"'torch.cuda.FloatTensor'\". With `num_workers=0` it runs, but makes one small synchronous copy per sample.\n\n" +
			"Return CPU tensors, let the DataLoader pin them (`pin_memory=True`), and move each batch " +
			"in the training loop with `.to(device, non_blocking=True)`. The exception is a dataset " +
			"preloaded onto the GPU once, in `__init__`, and read with `num_workers=0`.",
		Example: `import torch
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    def __len__(self):
        return 1024

    def __getitem__(self, idx):
        x = torch.tensor([float(idx)])
        return x.cuda(), (x * x).cuda()


loader = DataLoader(Squares(), batch_size=32, num_workers=4)
for x, y in loader:
    pass`,
		UseInstead: `import torch
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    def __len__(self):
        return 1024

    def __getitem__(self, idx):
        x = torch.tensor([float(idx)])
        return x, x * x


device = torch.device("cuda")
loader = DataLoader(Squares(), batch_size=32, num_workers=4, pin_memory=True)
for x, y in loader:
    x = x.to(device, non_blocking=True)
    y = y.to(device, non_blocking=True)`,
		FixSafety: "The fix is unsafe: it moves code between functions. It removes the device moves " +
			"from the worker code, so it returns CPU tensors; adds `pin_memory=True` to each DataLoader " +
			"built on it, in this file or in another module of the project (then the fix edits both files); " +
			"and in every loop over those DataLoaders, in whichever function of " +
			"the loader's file it is passed to, moves exactly the batch elements that were moved before, " +
			"right after they are bound, with `.to(device, non_blocking=True)`. The device is the one the " +
			"worker code named when the loop can see it, else a `device` parameter, a device variable, or " +
			"`next(model.parameters()).device` in a function that takes the model (`.cuda()` when none). " +
			"When the loader's batches may be consumed where the fix cannot see (passed to a library " +
			"trainer or to `iter()`, bound to another name, returned, or never looped over in the file), " +
			"the fix is display-only: removing the moves alone would feed CPU batches to a GPU model.",
	},
	Requires: []semantic.AnyFact{semantic.DeviceBindings},
	Run:      runDeviceMoveInDataset,
}

// tensorFactories are the torch functions that take a device= argument.
var tensorFactories = map[string]bool{
	"tensor": true, "as_tensor": true, "zeros": true, "ones": true, "empty": true, "full": true,
	"rand": true, "randn": true, "randint": true, "randperm": true, "arange": true, "linspace": true,
	"logspace": true, "eye": true, "zeros_like": true, "ones_like": true, "empty_like": true,
	"full_like": true, "rand_like": true, "randn_like": true, "randint_like": true, "from_numpy": true,
	"normal": true, "tril_indices": true, "triu_indices": true,
}

// workerCode is a function DataLoader workers run that moves tensors to a
// device, its moves, and how it is named in messages.
type workerCode struct {
	fn      *pyast.Node // function_definition or lambda
	moves   []deviceMove
	label   string // `CustomDataset.__getitem__`
	loaders []*semantic.DataLoader
	// remote are the DataLoaders other files of the project build over it.
	remote  []semantic.RemoteLoader
	collate bool // a collate_fn rather than a Dataset method
}

// anyWorkers reports whether one of the loaders may run worker processes:
// num_workers is not a literal 0 (or missing).
func anyWorkers(f *semantic.File, wc workerCode) bool {
	for _, l := range wc.loaders {
		if n, ok := l.Workers(f.Src); !ok || n > 0 {
			return true
		}
	}
	for _, l := range wc.remote {
		if !l.WorkersKnown || l.Workers > 0 {
			return true
		}
	}
	return false
}

// remoteLoaders are the DataLoaders of other files of the project that run
// the class or function named so at the top level of f, among remote (the
// project's answer for f).
func remoteLoaders(remote map[string][]semantic.RemoteLoader, def *pyast.Node, name string) []semantic.RemoteLoader {
	if len(remote) == 0 || def.Ancestor("class_definition", "function_definition") != nil {
		return nil
	}
	return remote[name]
}

func runDeviceMoveInDataset(pass *analysis.Pass) {
	var devices []*pyast.Node // read when a fix needs them
	for _, wc := range findWorkerCode(pass.File) {
		moves := wc.moves
		// One fix moves every transfer of the function, so all of its
		// diagnostics share it; transfers under `# noqa` stay as they are.
		var unsuppressed []deviceMove
		for _, m := range moves {
			if !pass.Suppressed(m.start) {
				unsuppressed = append(unsuppressed, m)
			}
		}
		if len(unsuppressed) == 0 {
			continue
		}
		if devices == nil {
			devices = analysis.FactOf(pass, semantic.DeviceBindings)
		}
		v := workerVerdictOf(pass, devices, wc, unsuppressed)
		fix := v.fix
		fix.Title = v.title.String(pass.File)
		for _, d := range v.diags {
			d.Fixes = []analysis.Fix{fix}
			pass.Report(d)
		}
	}
}

// workerVerdict is what GPU001 reports on one function DataLoader workers
// run, with what it was found from besides the code it read.
type workerVerdict struct {
	label   string
	moves   []deviceMove // not under `# noqa`
	loaders []*semantic.DataLoader
	devices []*pyast.Node
	diags   []analysis.Diagnostic // one a move, without the fix
	fix     analysis.Fix          // shared by diags, titled by title
	title   lineText
}

// workerVerdictOf returns GPU001's verdict on wc's moves. A large file has
// hundreds of datasets, each fix follows its loaders through the file,
// and a keystroke changes none of them: a version takes the last one's
// verdict while the code it read is unchanged (see
// semantic.RememberReading), and the loaders, moves and device variables
// are the same. Not for code other files' DataLoaders run, whose files
// the verdict reads too.
func workerVerdictOf(pass *analysis.Pass, devices []*pyast.Node, wc workerCode, moves []deviceMove) workerVerdict {
	compute := func(reads *semantic.Reads) workerVerdict {
		v := workerVerdict{label: wc.label, moves: moves, loaders: wc.loaders, devices: devices}
		v.fix, v.title = deviceMoveFix(pass, devices, wc, moves, reads)
		for _, move := range moves {
			v.diags = append(v.diags, deviceMoveDiagnostic(pass, wc, move, reads))
		}
		// The offsets are kept: each must lie in a statement read (an
		// insertion after the last line of a loop's function lies in the
		// next statement, which may move), else the verdict is not kept.
		settled := true
		for _, d := range v.diags {
			for start, end := range d.Ranges() {
				settled = settled && reads.Settled(start) && reads.Settled(end)
			}
		}
		for _, e := range v.fix.Edits {
			settled = settled && reads.Settled(e.Start) && reads.Settled(e.End)
		}
		if v.title.at >= 0 {
			settled = settled && reads.Settled(v.title.at)
		}
		if !settled {
			reads.Whole()
		}
		return v
	}
	if len(wc.remote) > 0 {
		return compute(nil)
	}
	holds := func(v workerVerdict) bool {
		// A loader is described anew when a name is bound anew; what the
		// verdict read of it is its call's code (see deviceMoveDiagnostic).
		sameCalls := slices.EqualFunc(v.loaders, wc.loaders, func(a, b *semantic.DataLoader) bool { return a.Call == b.Call })
		return sameCalls && v.label == wc.label && slices.Equal(v.moves, moves) && slices.Equal(v.devices, devices)
	}
	return semantic.RememberReading(pass.File, "GPU001 verdict", wc.fn, holds, compute)
}

// findWorkerCode lists the functions the file's DataLoaders run in workers
// that move tensors to a device. A function without moves is left before
// its label and loaders are looked up: a large file has hundreds of
// datasets, and this runs on every version.
func findWorkerCode(f *semantic.File) []workerCode {
	var out []workerCode
	var remote map[string][]semantic.RemoteLoader
	if f.Project != nil {
		remote = f.Project.LoadersUsing(f.Path)
	}
	methods := f.WorkerMethods()
	fns := make([]*pyast.Node, len(methods))
	for i, m := range methods {
		fns[i] = m.Fn
	}
	// Asked of every worker method on every version: one table.
	workerMoves := semantic.RememberEach(f, "GPU001 moves", fns, func(fn *pyast.Node) []deviceMove { return deviceMovesIn(f, fn) })
	for i, m := range methods {
		if moves := workerMoves[i]; len(moves) > 0 {
			c := m.Class
			out = append(out, workerCode{fn: m.Fn, moves: moves, label: "`" + c.Name + "." + m.Name + "`", loaders: f.LoadersOf(c), remote: remoteLoaders(remote, c.Node, c.Name)})
		}
	}
	seen := map[*pyast.Node]int{} // collate functions listed, or -1: no moves
	// Functions other files' DataLoaders run as collate_fn.
	for name := range remote {
		if defs := f.Functions[name]; len(defs) > 0 {
			fn := defs[len(defs)-1]
			if r := remoteLoaders(remote, fn, name); len(r) > 0 {
				moves := findDeviceMoves(f, fn)
				if len(moves) == 0 {
					seen[fn] = -1
					continue
				}
				seen[fn] = len(out)
				out = append(out, workerCode{fn: fn, moves: moves, label: "the collate function `" + name + "`", remote: r, collate: true})
			}
		}
	}
	for _, d := range f.DataLoaders {
		fn, label := collateFunction(f, d.CollateFn)
		if fn == nil {
			continue
		}
		if i, ok := seen[fn]; ok {
			if i >= 0 {
				out[i].loaders = append(out[i].loaders, d)
			}
			continue
		}
		moves := findDeviceMoves(f, fn)
		if len(moves) == 0 {
			seen[fn] = -1
			continue
		}
		seen[fn] = len(out)
		out = append(out, workerCode{fn: fn, moves: moves, label: label, loaders: []*semantic.DataLoader{d}, collate: true})
	}
	// A collate function that only loaders without workers run moves whole
	// batches in the main process, once per batch: a common, working way
	// to move batches.
	kept := out[:0]
	for _, wc := range out {
		if !wc.collate || anyWorkers(f, wc) {
			kept = append(kept, wc)
		}
	}
	out = kept
	// Map iteration order is random; report in source order.
	sort.Slice(out, func(i, j int) bool { return out[i].fn.Start() < out[j].fn.Start() })
	return out
}

// collateFunction resolves a collate_fn argument to the function it runs:
// a def in this file, a lambda, or functools.partial(def, ...).
func collateFunction(f *semantic.File, e *pyast.Node) (*pyast.Node, string) {
	switch {
	case e == nil:
		return nil, ""
	case e.Kind() == "lambda":
		return e, "the collate function (lambda)"
	case e.Kind() == "identifier":
		if defs := f.Functions[f.Text(e)]; len(defs) > 0 {
			return defs[len(defs)-1], "the collate function `" + f.Text(e) + "`"
		}
	case e.Kind() == "call" && f.Callee(e) == "functools.partial":
		return collateFunction(f, f.Arg(e, "func", 0))
	}
	return nil, ""
}

// deviceMove is one device transfer: the range to report, how to name it,
// and the call (with the device keyword, for factories) to rewrite.
type deviceMove struct {
	start, end int
	what       string
	call       *pyast.Node
	deviceKw   *pyast.Node // set for torch.zeros(..., device=...)
}

// findDeviceMoves returns the device moves in fn, the function (or
// lambda) workers run, and in the functions nested in it. What they are
// follows from fn's code and what names are bound to: an edited buffer's
// versions share the answer (a large file has hundreds of datasets, and
// a keystroke changes none of them).
func findDeviceMoves(f *semantic.File, fn *pyast.Node) []deviceMove {
	return semantic.Remember(f, "GPU001 moves", fn, func() []deviceMove { return deviceMovesIn(f, fn) })
}

func deviceMovesIn(f *semantic.File, fn *pyast.Node) []deviceMove {
	var moves []deviceMove
	for _, call := range f.CallsIn(fn) {
		switch method := f.MethodName(call); {
		case method == "cuda":
			moves = append(moves, deviceMove{start: semantic.Receiver(call).End(), end: call.End(), what: "`.cuda()`", call: call})
		case method == "to" && f.IsDeviceExpr(f.Arg(call, "device", 0)):
			moves = append(moves, deviceMove{start: semantic.Receiver(call).End(), end: call.End(), what: "`.to(...)`", call: call})
		default:
			name, ok := strings.CutPrefix(f.Callee(call), "torch.")
			if kw := f.KeywordArg(call, "device"); ok && tensorFactories[name] && kw != nil && f.IsDeviceExpr(kw.Child("value")) {
				moves = append(moves, deviceMove{start: kw.Start(), end: kw.End(), what: "`torch." + name + "(device=...)`", call: call, deviceKw: kw})
			}
		}
	}
	return moves
}

// deviceMoveDiagnostic reports one move, recording the code it reads in
// reads (nil: not recorded).
func deviceMoveDiagnostic(pass *analysis.Pass, wc workerCode, move deviceMove, reads *semantic.Reads) analysis.Diagnostic {
	f := pass.File
	d := analysis.Diagnostic{Start: move.start, End: move.end}
	maxWorkers, unknown, pinned := 0, "", false
	for _, l := range wc.loaders {
		reads.Code(l.Call)
		if n, ok := l.Workers(f.Src); ok {
			maxWorkers = max(maxWorkers, n)
		} else {
			unknown = f.Text(l.NumWorkers)
		}
		if l.PinMemory != nil && f.Text(l.PinMemory) == "True" {
			pinned = true
		}
		d.Related = append(d.Related, analysis.Related{
			Start: l.Call.Start(), End: l.Call.End(),
			Message: "this DataLoader runs " + wc.label + " " + workersPhrase(f, l),
		})
	}
	for _, l := range wc.remote {
		phrase := "in worker processes (num_workers=" + l.WorkersText + ")"
		switch {
		case !l.WorkersKnown:
			unknown = l.WorkersText
		case l.Workers == 0:
			phrase = "in the main process (num_workers=0)"
		default:
			maxWorkers = max(maxWorkers, l.Workers)
			phrase = fmt.Sprintf("in %d worker processes (num_workers=%d)", l.Workers, l.Workers)
		}
		pinned = pinned || l.Pinned
		other := f.Project.Model(l.Path)
		if other == nil {
			continue // unreadable since it was indexed
		}
		pass.Other(other)
		d.Related = append(d.Related, analysis.Related{
			Path: l.Path, Start: l.Start, End: l.End,
			Message: "this DataLoader (" + filepath.Base(l.Path) + ") runs " + wc.label + " " + phrase,
		})
	}
	const consequences = "Under the `fork` start method with CUDA already initialised in the parent " +
		"(`torch.cuda.is_available()` is enough) the worker crashes (\"Cannot re-initialize CUDA in forked " +
		"subprocess\"); under `spawn`/`forkserver` each worker creates its own CUDA context (hundreds of MiB of " +
		"GPU memory each)"
	// The message names the worker code when it fits; the squiggle shows
	// which move it is, and the detail quotes it.
	where := func(format string, args ...any) string {
		rest := fmt.Sprintf(format, args...)
		return analysis.ShortestFit(move.what+" in "+wc.label+" "+rest, move.what+" "+rest)
	}
	const advice = "move it to the training loop"
	detail := "The device move is " + analysis.Code(f.Text(move.call)) + ". "
	switch {
	case maxWorkers > 0:
		workers := "workers"
		if maxWorkers == 1 {
			workers = "worker"
		}
		d.Message = where("runs in %d DataLoader %s; %s", maxWorkers, workers, advice)
		detail += consequences
		d.Severity = analysis.SeverityError
	case unknown != "":
		d.Message = where("may run in DataLoader workers; %s", advice)
		detail += "It runs in the DataLoader's worker processes when " + analysis.Code(unknown) + " > 0. " + consequences
	case len(wc.loaders)+len(wc.remote) > 0:
		d.Message = where("copies one sample at a time; %s", advice)
		detail += "The DataLoader has `num_workers=0`, so this makes one small synchronous host-to-device copy " +
			"per sample, and moving the loading to worker processes would crash or cost a CUDA context per worker"
	default:
		d.Message = where("runs in DataLoader workers; %s", advice)
		detail += "With `num_workers > 0` it runs in the DataLoader's worker processes. " + consequences
	}
	if pinned {
		detail += "; `pin_memory=True` raises, since it cannot pin CUDA tensors"
	}
	d.Detail = detail + ". Return CPU tensors and move the batch in the training loop with `.to(device, non_blocking=True)`."
	return d
}

func workersPhrase(f *semantic.File, l *semantic.DataLoader) string {
	if n, ok := l.Workers(f.Src); ok {
		if n == 0 {
			return "in the main process (num_workers=0)"
		}
		return fmt.Sprintf("in %d worker processes (num_workers=%d)", n, n)
	}
	return "in worker processes (num_workers=" + f.Text(l.NumWorkers) + ")"
}
