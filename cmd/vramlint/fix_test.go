package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, mode); err != nil {
		t.Fatal(err)
	}
}

// `vramlint check --fix --unsafe-fixes` turns the article's program into
// its fixed version in substance; a second run changes nothing; the result
// is clean.
func TestFixSeedArticleProgram(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dataloader_leak.py")
	copyFile(t, filepath.Join("..", "..", "testdata", "seed", "dataloader_leak.py"), path, 0o755)
	out, errOut, code := vramlint(t, "check", "--fix", "--unsafe-fixes", path)
	if code != exitClean || errOut != "" || !strings.Contains(out, "Found 3 problems (3 fixed, 0 remaining).") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	fixed, _ := os.ReadFile(path)
	src := string(fixed)
	getitem := src[strings.Index(src, "def __getitem__"):strings.Index(src, "data_paths = [")]
	checks := []struct {
		what string
		ok   bool
	}{
		{"__getitem__ returns CPU tensors", !strings.Contains(getitem, ".cuda(") && strings.Contains(getitem, "image = torch.tensor(image)\n")},
		{"images and labels are moved in the loop right after unpacking",
			strings.Contains(src, "        images, labels = batch\n        images = images.to(device, non_blocking=True)\n        labels = labels.to(device, non_blocking=True)\n")},
		{"the DataLoader pins memory", strings.Contains(src, "DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=True)")},
		{"empty_cache runs once per epoch, after the batch loop",
			regexp.MustCompile(`\n    torch\.cuda\.empty_cache\(\)\n\n    print\(f"--- Epoch`).MatchString(src)},
		{"no per-batch empty_cache on the normal path", !strings.Contains(src, "\n        torch.cuda.empty_cache()\n")},
		{"the out-of-memory handler keeps its call", strings.Contains(src, "\n            torch.cuda.empty_cache()\n            continue\n")},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s:\n%s", c.what, src)
		}
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o755 {
		t.Errorf("mode changed to %v", info.Mode().Perm())
	}
	// A second run changes nothing, and the result is clean.
	out, _, code = vramlint(t, "check", "--fix", "--unsafe-fixes", path)
	again, _ := os.ReadFile(path)
	if code != exitClean || string(again) != src || out != "All checks passed!\n" {
		t.Errorf("second run: exit %d, output %q, changed: %v", code, out, string(again) != src)
	}
}

func TestFixSafeOnlyAndDiff(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "train.py")
	copyFile(t, filepath.Join("..", "..", "examples", "train.py"), path, 0o644)
	original, _ := os.ReadFile(path)

	// --diff prints what --unsafe-fixes would do and writes nothing.
	out, errOut, code := vramlint(t, "check", "--diff", "--unsafe-fixes", path)
	if code != exitFindings || !strings.HasPrefix(out, "--- "+path+"\n+++ "+path+"\n@@ ") || !strings.Contains(errOut, "Would fix 6 problems in 1 file.") {
		t.Errorf("--diff: exit %d\n%s\n%s", code, out, errOut)
	}
	if now, _ := os.ReadFile(path); string(now) != string(original) {
		t.Fatal("--diff wrote the file")
	}

	// --fix alone applies only safe fixes: GPU003's `.detach()`.
	out, _, code = vramlint(t, "check", "--fix", path)
	now, _ := os.ReadFile(path)
	if code != exitFindings || !strings.Contains(out, "Found 6 problems (1 fixed, 5 remaining).") ||
		!strings.Contains(string(now), "epoch_loss += loss.detach()") || !strings.Contains(string(now), "history.append(loss)\n") {
		t.Errorf("--fix: exit %d\n%s", code, out)
	}
}

func TestUnsafeFixesFromConfig(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "pyproject.toml"), "[tool.vramlint]\nunsafe-fixes = true\n")
	path := filepath.Join(dir, "a.py")
	writeFile(t, path, "import torch\n\nfor x in loader:\n    x = torch.ones(1)\n    torch.cuda.empty_cache()\n")
	if _, _, code := vramlint(t, "check", "--fix", path); code != exitClean {
		t.Errorf("exit %d", code)
	}
	got, _ := os.ReadFile(path)
	if string(got) != "import torch\n\nfor x in loader:\n    x = torch.ones(1)\ntorch.cuda.empty_cache()\n" {
		t.Errorf("fixed:\n%s", got)
	}
}
