package semantic

import (
	"slices"
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
	// Reanalysed): the question is asked of every assigned call. Only the
	// segments that bind a device are listed, and a version visits those
	// and the segments in focus, not the thousands a large file has.
	focus, reusable := f.Reanalysed()
	var had *deviceBindings
	if reusable {
		had = f.carried.devices
	}
	f.carried.devices = nil // it holds segments this version may not have
	found := &deviceBindings{}
	if had == nil {
		for i, ix := range f.indexes {
			if devices := f.devicesIn(ix); len(devices) > 0 {
				found.bySegment = append(found.bySegment, segmentDevices{f.Tree.Segments[i], devices})
			}
		}
	} else {
		found.bySegment = f.carryDevices(had, focus)
	}
	for _, s := range found.bySegment {
		found.all = append(found.all, s.devices...)
	}
	f.devices.Store(found)
	return found.all
})

// carryDevices returns the device bindings of the version f by segment:
// had's (an earlier version's) for the segments f shares with it outside
// focus, found again in focus (which holds every segment had lacks).
func (f *File) carryDevices(had *deviceBindings, focus Focus) []segmentDevices {
	var out, again []segmentDevices
	for _, s := range had.bySegment {
		if !focus[s.segment] && f.segmentNumber(s.segment) >= 0 {
			out = append(out, s)
		}
	}
	for seg := range focus {
		i := f.segmentNumber(seg)
		if i < 0 {
			continue
		}
		if devices := f.devicesIn(f.indexes[i]); len(devices) > 0 {
			again = append(again, segmentDevices{seg, devices})
		}
	}
	if len(again) == 0 {
		return out
	}
	out = append(out, again...)
	slices.SortFunc(out, func(a, b segmentDevices) int { return a.segment.Base - b.segment.Base })
	return out
}

// devicesIn returns the assignments of a device to a plain name in the
// segment indexed by ix.
func (f *File) devicesIn(ix *segmentIndex) []*pyast.Node {
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
	return devices
}

// deviceBindings is a version's answer of DeviceBindings: by segment, for
// the segments that bind a device, in offset order, and all of them in
// source order.
type deviceBindings struct {
	bySegment []segmentDevices
	all       []*pyast.Node
}

// segmentDevices are the device bindings of one segment.
type segmentDevices struct {
	segment *pyast.Segment
	devices []*pyast.Node
}
