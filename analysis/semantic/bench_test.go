package semantic

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/vramlint/vramlint/analysis/pyast"
)

// BenchmarkSegmentIndexOfLargeClass measures indexing one top-level
// statement, a class of 400 methods (about 5,000 lines): what a keystroke
// in one of its methods builds again (see newSegmentIndex).
func BenchmarkSegmentIndexOfLargeClass(b *testing.B) {
	var class strings.Builder
	class.WriteString("class ModelTest(TestCase):\n")
	for i := range 400 {
		fmt.Fprintf(&class, `    def test_case%[1]d(self, device="cpu"):
        model = self.build_model(%[1]d).to(device)
        x = torch.randn(4, %[1]d, device=device)
        losses = []
        for step in range(3):
            loss = model(x).sum() * %[1]d
            loss.backward()
            losses.append(loss.item())
        self.assertEqual(len(losses), 3)
        return self.check_case(model(x), step=step)

`, i)
	}
	tree, err := pyast.ParseForEditing(context.Background(), []byte(class.String()))
	if err != nil {
		b.Fatal(err)
	}
	seg := tree.Segments[0]
	for b.Loop() {
		newSegmentIndex(seg, tree)
	}
}
