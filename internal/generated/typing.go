package generated

import (
	"fmt"
	"strings"
)

// What the benchmarks' typing sessions type, and where: lspbench's
// through a server, typebench's in its own process.

// TypedFunction is what the typing sessions type, key by key: a
// training function with its evaluation, as a user writes one.
const TypedFunction = `def train_typed(model, loader, optimizer, device):
    model.train()
    losses = []
    total = 0.0
    for step, (x, y) in enumerate(loader):
        x = x.to(device, non_blocking=True)
        y = y.to(device, non_blocking=True)
        optimizer.zero_grad()
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out, y)
        loss.backward()
        optimizer.step()
        losses.append(loss)
        total += loss
        if step % 100 == 0:
            print(f"step {step}: {loss.item():.4f}")
            torch.cuda.empty_cache()
    with torch.no_grad():
        model.eval()
        correct = 0
        for x, y in loader:
            pred = model(x.to(device)).argmax(1)
            correct += (pred == y.to(device)).sum().item()
    history = {
        "losses": [l.item() for l in losses],
        "total": float(total),
        "accuracy": correct / max(1, len(loader.dataset)),
    }
    return history

`

// TypingAt returns where in text a typing session types, as where says:
// "middle", at the top-level line nearest the middle; "end", after the
// last line; "method", before the first method past the middle (see
// MethodLine).
func TypingAt(text, where string) (int, error) {
	switch where {
	case "method":
		at, _, err := MethodLine(text)
		return at, err
	case "end":
		return len(text), nil
	}
	at := strings.Index(text[len(text)/2:], "\n\n\n")
	if at < 0 {
		return len(text), nil
	}
	return at + len(text)/2 + 2, nil
}

// TypedText returns what a typing session types into text, as where
// says (see TypingAt): custom (the text of a file given) or, when it is
// "", TypedFunction; indented as the method it goes before when where is
// "method" (see AsMethod).
func TypedText(custom, text, where string) (string, error) {
	typed := TypedFunction
	if custom != "" {
		typed = custom
	}
	if where != "method" {
		return typed, nil
	}
	_, indent, err := MethodLine(text)
	if err != nil {
		return "", err
	}
	return AsMethod(typed, indent), nil
}

// MethodLine returns where the first line past the middle of text that
// defines a method (an indented "def ") starts, and its indentation.
func MethodLine(text string) (at int, indent string, err error) {
	for at = len(text) / 2; ; {
		k := strings.Index(text[at:], "\n")
		if k < 0 {
			return 0, "", fmt.Errorf("no method (an indented line \"def \") past the middle of the file")
		}
		at += k + 1
		line := text[at:]
		body := strings.TrimLeft(line, " \t")
		if len(body) < len(line) && strings.HasPrefix(body, "def ") {
			return at, line[:len(line)-len(body)], nil
		}
	}
}

// AsMethod returns text, a top-level definition, indented as a method by
// indent, with a blank line after it.
func AsMethod(text, indent string) string {
	lines := strings.SplitAfter(strings.TrimRight(text, "\n"), "\n")
	for i, line := range lines {
		if strings.TrimSpace(line) != "" {
			lines[i] = indent + line
		}
	}
	return strings.Join(lines, "") + "\n\n"
}
