//go:build linux

package codeactions

import (
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const (
	originalText = "import torch\nx = 1\n"
	fixedText    = "import torch\nx = 2\n"
	userText     = "import torch\nx = 'saved by the user'\n" // an editor's save racing the fixes
)

func writeOriginal(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(originalText), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func content(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// leftovers lists the temporary and backup files left beside path.
func leftovers(t *testing.T, path string) []string {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*vramlint*"))
	return matches
}

func TestReadOnlyFileIsNotWritten(t *testing.T) {
	path := writeOriginal(t, "ro.py")
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := WriteFixed(path, []byte(originalText), []byte(fixedText)); !errors.Is(err, ErrReadOnly) {
		t.Errorf("err = %v, want ErrReadOnly", err)
	}
	if content(t, path) != originalText {
		t.Error("a read-only file was rewritten")
	}
}

func TestModeOwnerAndXattrsKept(t *testing.T) {
	path := writeOriginal(t, "keep.py")
	uid, gid := os.Getuid(), os.Getgid()
	if os.Geteuid() == 0 {
		uid, gid = 1234, 5678 // root can give the file away; the fix must keep that
		if err := os.Chown(path, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(path, 0o750|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	xattrs := unix.Setxattr(path, "user.vramlint.test", []byte("kept"), 0) == nil
	if err := WriteFixed(path, []byte(originalText), []byte(fixedText)); err != nil {
		t.Fatal(err)
	}
	if content(t, path) != fixedText {
		t.Fatalf("not written: %q", content(t, path))
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode() != 0o750|os.ModeSetgid {
		t.Errorf("mode %v, want %v", info.Mode(), 0o750|os.ModeSetgid)
	}
	st := info.Sys().(*syscall.Stat_t)
	if int(st.Uid) != uid || int(st.Gid) != gid {
		t.Errorf("owner %d:%d, want %d:%d", st.Uid, st.Gid, uid, gid)
	}
	if xattrs {
		value := make([]byte, 16)
		n, err := unix.Getxattr(path, "user.vramlint.test", value)
		if err != nil || string(value[:n]) != "kept" {
			t.Errorf("extended attribute lost: %q, %v", value[:n], err)
		}
	} else {
		t.Log("this file system has no user extended attributes; not checked")
	}
	if l := leftovers(t, path); len(l) > 0 {
		t.Errorf("left behind: %v", l)
	}
}

func TestHardLinksStayLinked(t *testing.T) {
	path := writeOriginal(t, "a.py")
	other := filepath.Join(filepath.Dir(path), "b.py")
	if err := os.Link(path, other); err != nil {
		t.Fatal(err)
	}
	if err := WriteFixed(path, []byte(originalText), []byte(fixedText)); err != nil {
		t.Fatal(err)
	}
	if content(t, other) != fixedText {
		t.Errorf("the other link still holds %q", content(t, other))
	}
	a, _ := os.Stat(path)
	b, _ := os.Stat(other)
	if !os.SameFile(a, b) {
		t.Error("the links were split")
	}
	if l := leftovers(t, path); len(l) > 0 {
		t.Errorf("left behind: %v", l)
	}
}

func TestSymlinkWritesItsTarget(t *testing.T) {
	path := writeOriginal(t, "target.py")
	link := filepath.Join(filepath.Dir(path), "link.py")
	if err := os.Symlink("target.py", link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFixed(link, []byte(originalText), []byte(fixedText)); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the symbolic link was replaced by a file")
	}
	if content(t, path) != fixedText {
		t.Error("the target was not written")
	}
}

// An editor saves while --fix writes: however the two interleave, the
// user's save is what the file holds at the end (written before, the fix
// is refused; written after, it replaces the fix).
func TestConcurrentSaveIsNeverLost(t *testing.T) {
	saves := map[string]func(path string) error{
		// Most editors: a new file renamed over the old one.
		"rename": func(path string) error {
			tmp := path + ".editor-tmp"
			if err := os.WriteFile(tmp, []byte(userText), 0o644); err != nil {
				return err
			}
			return os.Rename(tmp, path)
		},
		// Vim's default: truncate and write the same file.
		"in place": func(path string) error {
			return os.WriteFile(path, []byte(userText), 0o644)
		},
	}
	for name, save := range saves {
		lost, refused := 0, 0
		for i := range 200 {
			path := writeOriginal(t, "race.py")
			delay := time.Duration(rand.Intn(400)) * time.Microsecond
			var wg sync.WaitGroup
			var saveErr error
			wg.Go(func() {
				time.Sleep(delay)
				saveErr = save(path)
			})
			err := WriteFixed(path, []byte(originalText), []byte(fixedText))
			wg.Wait()
			if saveErr != nil {
				t.Fatal(saveErr)
			}
			if errors.Is(err, ErrChangedOnDisk) {
				refused++
			} else if err != nil {
				t.Fatalf("run %d: %v", i, err)
			}
			if got := content(t, path); got != userText {
				lost++
				t.Errorf("%s save, run %d (after %v): the user's save was lost; the file holds %q", name, i, delay, got)
			}
		}
		t.Logf("%s saves: %d of 200 refused as changed on disk, %d lost", name, refused, lost)
	}
}

// leasableOriginal is writeOriginal in a folder whose file system grants
// file leases; the test is skipped where it does not.
func leasableOriginal(t *testing.T, name string) string {
	t.Helper()
	path := writeOriginal(t, name)
	probe, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	if _, err := unix.FcntlInt(probe.Fd(), unix.F_SETLEASE, unix.F_RDLCK); err != nil {
		t.Skipf("the temporary folder's file system grants no leases: %v", err)
	}
	return path
}

// An editor that opened the file for an in-place save before the fixes were
// written, and writes only afterwards, must find its save in the file: the
// writer waits for it, then sees the change. Before leases, the fixes
// replaced the file and the save went into the deleted one.
func TestSaveFromAnOpenDescriptorIsKept(t *testing.T) {
	path := leasableOriginal(t, "open.py")
	editor, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- WriteFixed(path, []byte(originalText), []byte(fixedText)) }()
	time.Sleep(writerWait / 4)
	if err := editor.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if _, err := editor.WriteAt([]byte(userText), 0); err != nil {
		t.Fatal(err)
	}
	editor.Close()
	if err := <-done; !errors.Is(err, ErrChangedOnDisk) {
		t.Errorf("err = %v, want ErrChangedOnDisk", err)
	}
	if got := content(t, path); got != userText {
		t.Errorf("the save through the open descriptor was lost; the file holds %q", got)
	}
	if left := leftovers(t, path); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// A file another program keeps open for writing is not replaced under it.
func TestFileKeptOpenForWritingIsNotReplaced(t *testing.T) {
	path := leasableOriginal(t, "held.py")
	other, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := WriteFixed(path, []byte(originalText), []byte(fixedText)); !errors.Is(err, ErrOpenForWriting) {
		t.Errorf("err = %v, want ErrOpenForWriting", err)
	}
	if content(t, path) != originalText {
		t.Error("the file was replaced while another program had it open for writing")
	}
	// Readers do not stand in the way.
	other.Close()
	reader, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if err := WriteFixed(path, []byte(originalText), []byte(fixedText)); err != nil {
		t.Errorf("with a reader only: %v", err)
	}
	if content(t, path) != fixedText {
		t.Error("not fixed with a reader only")
	}
}

// Written in place (a hard-linked file), the fixes hold the file against
// other opens until written: a save that starts after the last check
// waits, then lands over them. Without the lease it landed first and was
// overwritten.
func TestSaveDuringAnInPlaceWriteIsKept(t *testing.T) {
	path := leasableOriginal(t, "linked.py")
	if err := os.Link(path, filepath.Join(filepath.Dir(path), "other.py")); err != nil {
		t.Fatal(err)
	}
	saved := make(chan error, 1)
	testHookBeforeWriteInPlace = func() {
		go func() { saved <- os.WriteFile(path, []byte(userText), 0o644) }()
		time.Sleep(100 * time.Millisecond) // time enough for an unhindered save
	}
	defer func() { testHookBeforeWriteInPlace = nil }()
	if err := WriteFixed(path, []byte(originalText), []byte(fixedText)); err != nil {
		t.Fatal(err)
	}
	if err := <-saved; err != nil {
		t.Fatal(err)
	}
	if got := content(t, path); got != userText {
		t.Errorf("the save during the write was lost; the file holds %q", got)
	}
}

// A save whose open found the original under the name just before the
// exchange, was interrupted while it waited on the lease (Go retries an
// open that a signal interrupts; C's SA_RESTART does the same) and, tried
// again, found the fixed file under the name: the save goes into the fixed
// file, and must be what the file holds at the end. Before, the broken
// lease on the original put the original back and deleted the fixed file
// with the save in it (seen once in CI under load).
func TestRetriedSaveIntoTheFixedFileIsKept(t *testing.T) {
	path := leasableOriginal(t, "retried.py")
	saved := make(chan error, 1)
	testHookAfterExchange = func(path, replaced string) {
		// The first open: it breaks the original's lease, and gives up.
		if f, err := os.OpenFile(replaced, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
			saved <- errors.New("the original's lease did not stop an open for writing")
			return
		}
		// The retried open finds the fixed file under the name.
		go func() { saved <- os.WriteFile(path, []byte(userText), 0o644) }()
		time.Sleep(50 * time.Millisecond) // time enough for an unhindered save
	}
	defer func() { testHookAfterExchange = nil }()
	err := WriteFixed(path, []byte(originalText), []byte(fixedText))
	if err != nil && !errors.Is(err, ErrChangedOnDisk) {
		t.Fatal(err)
	}
	if err := <-saved; err != nil {
		t.Fatal(err)
	}
	if got := content(t, path); got != userText {
		t.Errorf("the save into the fixed file was lost; the file holds %q", got)
	}
	if l := leftovers(t, path); len(l) > 0 {
		t.Errorf("left behind: %v", l)
	}
}

// A save that opened the original under its name before the exchange and
// waits on its lease while the original is removed writes into a file that
// has no name any more (and linkat cannot give it one back): what it
// writes is copied beside the file, and the error says where.
func TestSaveIntoTheRemovedOriginalIsKept(t *testing.T) {
	path := leasableOriginal(t, "removed.py")
	saved := make(chan error, 1)
	testHookBeforeRemovingOriginal = func(replaced string) {
		go func() { saved <- os.WriteFile(replaced, []byte(userText), 0o644) }()
		time.Sleep(50 * time.Millisecond) // the save opens the file and waits on the lease
	}
	defer func() { testHookBeforeRemovingOriginal = nil }()
	err := WriteFixed(path, []byte(originalText), []byte(fixedText))
	if err := <-saved; err != nil {
		t.Fatal(err)
	}
	if err == nil {
		t.Fatal("the save during the write was not reported")
	}
	if content(t, path) != fixedText {
		t.Errorf("the file holds %q, not the fixes", content(t, path))
	}
	kept := leftovers(t, path)
	if len(kept) != 1 || !strings.Contains(err.Error(), kept[0]) {
		t.Fatalf("the error %q does not name the one file kept beside it: %v", err, kept)
	}
	if got := content(t, kept[0]); got != userText {
		t.Errorf("the file kept holds %q, not the save", got)
	}
}
