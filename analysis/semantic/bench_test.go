package semantic

import (
	"context"
	"testing"

	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/internal/generated"
)

// BenchmarkSegmentIndexOfLargeClass measures indexing one top-level
// statement, a class of 400 methods (about 5,000 lines): what a keystroke
// in one of its methods builds again (see newSegmentIndex).
func BenchmarkSegmentIndexOfLargeClass(b *testing.B) {
	src := []byte(generated.TestClass(400))
	tree, err := pyast.ParseForEditing(context.Background(), src)
	if err != nil {
		b.Fatal(err)
	}
	var class *pyast.Segment
	for _, seg := range tree.Segments {
		if seg.Nodes[0].Is("class_definition") {
			class = seg
		}
	}
	if class == nil {
		b.Fatal("no class")
	}
	for b.Loop() {
		newSegmentIndex(class, tree)
	}
}
