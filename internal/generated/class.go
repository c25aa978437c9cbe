package generated

import (
	"fmt"
	"strings"
)

// TestClass returns a module holding one test class of n methods (about
// 13 lines each), as real test suites and backends have classes of
// thousands of lines: each method builds a model, trains it a few steps
// keeping its losses as floats, and checks them. The class is one
// top-level statement: an edit in one of its methods replaces it whole.
// Method i starts with the line "    def test_case<i>(self, device="cpu"):"
// and its body with "model = self.build_model(<i>)".
func TestClass(n int) string {
	var b strings.Builder
	b.WriteString("import torch\nfrom unittest import TestCase\n\n\nclass ModelTest(TestCase):\n")
	for i := range n {
		fmt.Fprintf(&b, `    def test_case%[1]d(self, device="cpu"):
        model = self.build_model(%[1]d).to(device)
        x = torch.randn(4, %[2]d, device=device)
        losses = []
        for step in range(3):
            loss = model(x).sum() * %[1]d
            loss.backward()
            losses.append(loss.item())
        self.assertEqual(len(losses), 3)
        with torch.no_grad():
            y = model(x)
        return self.check_case%[3]d(y)

`, i, i%7+1, (i+1)%n)
	}
	return b.String()
}
