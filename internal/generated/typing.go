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
// "middle", on a blank line between the top-level statements nearest the
// middle; "end", after the last line; "method", on the blank line above
// the first method past the middle (see MethodLine), as a user types a
// method between two others. (Until 2026-12-07 it typed at the start of
// the method's own line, so that every key's line went on with that
// method's header, `    def train_typed(    def update(self, ...`: a
// syntax error on nearly every key, which no user types through.)
func TypingAt(text, where string) (int, error) {
	switch where {
	case "method":
		at, _, err := MethodLine(text)
		if err != nil {
			return 0, err
		}
		return strings.LastIndex(text[:at-1], "\n") + 1, nil
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
// defines a method (an indented "def ") right below a blank line starts,
// and its indentation.
func MethodLine(text string) (at int, indent string, err error) {
	at = len(text) / 2
	// The middle's own line is only partly seen: not taken for blank.
	for whole := false; ; whole = true {
		k := strings.Index(text[at:], "\n")
		if k < 0 {
			return 0, "", fmt.Errorf("no method (an indented line \"def \" below a blank line) past the middle of the file")
		}
		aboveBlank := whole && strings.TrimSpace(text[at:at+k]) == ""
		at += k + 1
		line := text[at:]
		body := strings.TrimLeft(line, " \t")
		if aboveBlank && len(body) < len(line) && strings.HasPrefix(body, "def ") {
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
