package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO or a device named on the command line or met in a folder is
// reported and skipped, never read: /dev/zero reads forever and a FIFO
// blocks until a writer comes.
func TestDevicesAndFIFOsAreNotRead(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.py")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.py")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "ok.py"), leaky)
	done := make(chan struct{})
	var stderr string
	var code int
	go func() {
		defer close(done)
		_, stderr, code = vramlint(t, "check", fifo, "/dev/zero", dir)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("check blocked on a FIFO or a device")
	}
	if code != exitError || strings.Count(stderr, "not a regular file") < 3 {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

// A folder link back to a folder being checked is skipped with a note;
// every file was checked, so the exit status is that of the findings.
func TestSymlinkToAncestorIsANote(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "pkg", "data.py"), leaky)
	if err := os.Symlink("..", filepath.Join(dir, "pkg", "up")); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := vramlint(t, "check", dir)
	if code != exitFindings || !strings.Contains(stderr, "note: ") || !strings.Contains(stderr, "links back to") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

// --fix reports a read-only file and leaves it as it was.
func TestFixSkipsReadOnlyFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ro.py")
	src := "import torch\nfor step, b in enumerate(loader):\n    loss = model(b)\n    loss.backward()\n    torch.cuda.empty_cache()\n"
	writeFile(t, path, src)
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := vramlint(t, "check", "--fix", "--unsafe-fixes", path)
	got, _ := os.ReadFile(path)
	if code != exitError || !strings.Contains(stderr, "read-only") || string(got) != src {
		t.Errorf("exit %d, stderr %q, file now:\n%s", code, stderr, got)
	}
}
