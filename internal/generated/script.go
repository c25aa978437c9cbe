// Package generated writes the synthetic Python files that the benchmarks
// and the protocol benchmark client (tools/lspbench) measure with.
package generated

import (
	"fmt"
	"strings"
)

// Script returns a PyTorch training script of about n lines with its code
// at module level, as notebooks exported to Python and many research
// scripts have it: blocks that train a model in a loop keeping its losses
// with their graphs (GPU002, GPU003), then evaluate it without no_grad
// (GPU004, GPU002), four findings a block. Module code is one scope across
// its statements: every finding's verdict reads the whole file. Block i
// starts with the line "# Experiment i".
func Script(n int) string {
	var b strings.Builder
	b.WriteString("import torch\nimport torch.nn as nn\n\ndevice = torch.device(\"cuda\")\n")
	for i, lines := 0, strings.Count(b.String(), "\n"); lines < n; i++ {
		block := fmt.Sprintf(`

# Experiment %[1]d
model%[1]d = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
optimizer%[1]d = torch.optim.SGD(model%[1]d.parameters(), lr=0.1)
criterion%[1]d = nn.CrossEntropyLoss()
losses%[1]d = []
total%[1]d = 0
for step in range(100):
    x = torch.randn(32, 16, device=device)
    y = torch.randint(0, 4, (32,), device=device)
    loss = criterion%[1]d(model%[1]d(x), y)
    optimizer%[1]d.zero_grad()
    loss.backward()
    optimizer%[1]d.step()
    losses%[1]d.append(loss)
    total%[1]d += loss
model%[1]d.eval()
predictions%[1]d = []
for step in range(10):
    x = torch.randn(32, 16, device=device)
    predictions%[1]d.append(model%[1]d(x))
print(%[1]d, total%[1]d / 100, len(predictions%[1]d))
`, i)
		b.WriteString(block)
		lines += strings.Count(block, "\n")
	}
	return b.String()
}
