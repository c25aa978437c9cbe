package rules_test

import (
	"context"
	"strings"
	"testing"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/rules"
)

// A file saved with a bracket left open before a dataset: the error ends
// at the class (see pyast's recoveries), whose worker-side .cuda() is
// found by `check` (Runner.Run) as by the server (a buffer's tree), with
// the same findings.
func TestABracketLeftOpenHidesNothingAfterIt(t *testing.T) {
	src := []byte(`import torch
from torch.utils.data import DataLoader, Dataset

broken = foo(

class Samples(Dataset):
    def __init__(self):
        self.x = torch.randn(100, 8)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i].cuda()


loader = DataLoader(Samples(), batch_size=4, num_workers=2)
`)
	runner := &analysis.Runner{Rules: rules.All()}
	checked, err := runner.Run(context.Background(), "left_open.py", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range checked.Diagnostics {
		found = found || d.Code == "GPU001" && strings.Contains(string(src[d.Start:d.End]), "cuda")
	}
	if !found {
		t.Errorf("check: no GPU001 on the dataset after the error: %+v", checked.Diagnostics)
	}
	tree, err := pyast.ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	compareResults(t, "the server's tree against check's", runner.AnalyzeTree(nil, "left_open.py", src, tree, nil), checked)
}
