package semantic

import (
	"sync"

	"github.com/vramlint/vramlint/analysis/pyast"
)

// Facts a rule needs beyond File's own answers are declared, the way
// go/analysis analyzers declare Requires: a Fact names a computation over
// a File, and rules list the facts they use (analysis.Rule.Requires). A new
// fact is a new value, not a new field or method of File: it is computed
// once per file version, on first use, whichever rule asks first.

// AnyFact is a Fact of any result type, as rules declare them.
type AnyFact interface {
	// Name is the fact's name, for messages.
	Name() string
}

// Fact is a fact of type T about a file.
type Fact[T any] struct {
	name    string
	compute func(*File) T
}

// NewFact declares a fact: compute is called at most once per File.
func NewFact[T any](name string, compute func(*File) T) *Fact[T] {
	return &Fact[T]{name: name, compute: compute}
}

// Name implements AnyFact.
func (fa *Fact[T]) Name() string { return fa.name }

// Of returns the fact for f, computing it once.
func (fa *Fact[T]) Of(f *File) T {
	v, _ := f.facts.LoadOrStore(fa, &factValue{})
	fv := v.(*factValue)
	fv.once.Do(func() { fv.value = fa.compute(f) })
	return fv.value.(T)
}

type factValue struct {
	once  sync.Once
	value any
}

// DeviceBindings are the assignments of a device to a plain name
// (`device = torch.device("cuda")`), in source order.
var DeviceBindings = NewFact("device-bindings", func(f *File) []*pyast.Node {
	// Found per segment; a segment whose answers cannot have changed since
	// the version the model was built from keeps that version's (see
	// Reanalysed): the question is asked of every assigned call.
	focus, reusable := f.Reanalysed()
	var had *deviceBindings
	if reusable {
		had = f.carried.devices
	}
	f.carried.devices = nil // it holds segments this version may not have
	if had != nil && !f.assignsInFocus(focus) {
		// No segment that may answer otherwise assigns anything (a
		// keystroke in a function body, most often): prev's answer,
		// whole. The segments only prev had are in no focus: they must
		// assign nothing either.
		f.devices.Store(had)
		return had.all
	}
	found := &deviceBindings{perSegment: map[*pyast.Segment][]*pyast.Node{}}
	for i, ix := range f.indexes {
		seg := f.Tree.Segments[i]
		if len(ix.deviceCandidates) == 0 {
			continue
		}
		var devices []*pyast.Node
		var ok bool
		if had != nil && !focus[seg] {
			devices, ok = had.perSegment[seg]
		}
		if !ok {
			for _, a := range ix.deviceCandidates {
				// Only torch.device(...) and torch.cuda.current_device()
				// name devices; most assigned calls do not.
				right := a.Child("right")
				if right.Is("call") && !f.mayCall(right, "device", "current_device") {
					continue
				}
				if f.IsDeviceExpr(right) {
					devices = append(devices, a)
				}
			}
		}
		found.perSegment[seg] = devices
		found.all = append(found.all, devices...)
	}
	f.devices.Store(found)
	return found.all
})

// deviceBindings is a version's answer of DeviceBindings: per segment
// that has device candidates, and all of them in source order.
type deviceBindings struct {
	perSegment map[*pyast.Segment][]*pyast.Node
	all        []*pyast.Node
}

// assignsInFocus reports whether a segment in focus, or one that only the
// version the model was built from has, holds candidates of
// DeviceBindings.
func (f *File) assignsInFocus(focus Focus) bool {
	for seg := range focus {
		if ix := f.segments[seg]; ix != nil && len(ix.deviceCandidates) > 0 {
			return true
		}
	}
	return f.carried.removedDevices
}
