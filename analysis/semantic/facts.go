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
	// Reanalysed): the question is asked of every assigned call. (Nothing
	// is hashed per segment: at 50,000 lines thousands of segments assign
	// something, and this is asked on every version.)
	focus, reusable := f.Reanalysed()
	var had *deviceBindings
	if reusable {
		had = f.carried.devices
	}
	f.carried.devices = nil // it holds segments this version may not have
	segments := f.Tree.Segments
	found := &deviceBindings{segments: segments, perSegment: make([][]*pyast.Node, len(segments))}
	var inHad segmentsByOffset
	if had != nil {
		inHad.old = had.segments
	}
	for i, ix := range f.indexes {
		if len(ix.deviceCandidates) == 0 {
			continue
		}
		seg := segments[i]
		if j := inHad.find(seg); j >= 0 && !focus[seg] {
			found.perSegment[i] = had.perSegment[j]
			found.all = append(found.all, found.perSegment[i]...)
			continue
		}
		var devices []*pyast.Node
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
		found.perSegment[i] = devices
		found.all = append(found.all, devices...)
	}
	f.devices.Store(found)
	return found.all
})

// deviceBindings is a version's answer of DeviceBindings: per segment of
// its tree (nil for those without candidates), and all of them in source
// order.
type deviceBindings struct {
	segments   []*pyast.Segment
	perSegment [][]*pyast.Node
	all        []*pyast.Node
}
