package codeactions

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vramlint/vramlint/analysis"
)

// ErrChangedOnDisk is returned when a file changed between the moment it
// was read and the moment its fixes were to be written.
var ErrChangedOnDisk = errors.New("changed on disk since it was read; not written")

// ErrReadOnly is returned for a file its user may not write (or marked
// read-only, which root could otherwise write through).
var ErrReadOnly = errors.New("is read-only; not written")

// ErrOpenForWriting is returned when another program kept the file open for
// writing while its fixes were to be written (Linux, where this can be told).
var ErrOpenForWriting = errors.New("is open for writing in another program; not written")

// WriteFixed replaces the file at path, whose content was original, with
// fixed, only if the file still holds original, and as the file it was:
//
//   - Normally atomically: a temporary file in the same folder, given the
//     file's mode bits (setuid, setgid and sticky included), owner, group
//     and extended attributes, then renamed over it.
//   - In place, after writing a backup next to it, when a rename would
//     change what the file is: it has other hard links (a rename would
//     split them), or its owner or group cannot be given to a new file.
//
// A save by an editor racing the write must never be lost. The content is
// compared with original right before the rename. Where the platform can
// exchange two files atomically and lease them (Linux), the file is leased
// against writers before the exchange and put back if a save slipped in
// (see replace); written in place, it is leased against any other open for
// the time of the write, where it can be (see leaseAgainstOpeners).
func WriteFixed(path string, original, fixed []byte) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	before, err := os.Stat(real)
	if err != nil {
		return err
	}
	if !before.Mode().IsRegular() {
		return analysis.ErrNotRegular
	}
	if !writable(real, before) {
		return ErrReadOnly
	}
	if err := stillHolds(real, before, original); err != nil {
		return err
	}
	if linkCount(before) > 1 {
		return writeInPlace(real, original, fixed)
	}
	tmp, err := os.CreateTemp(filepath.Dir(real), "."+filepath.Base(real)+".vramlint-*")
	if err != nil {
		return err
	}
	cleanup := func(err error) error {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if _, err := tmp.Write(fixed); err != nil {
		return cleanup(err)
	}
	if err := preserveOwner(tmp, before); err != nil {
		// Only the file itself can keep an owner we cannot give away.
		cleanup(nil)
		return writeInPlace(real, original, fixed)
	}
	// After chown, which clears setuid and setgid.
	if err := tmp.Chmod(before.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky)); err != nil {
		return cleanup(err)
	}
	if err := copyXattrs(real, tmp); err != nil {
		return cleanup(fmt.Errorf("copying extended attributes: %w", err))
	}
	if err := tmp.Sync(); err != nil {
		return cleanup(err)
	}
	if err := tmp.Close(); err != nil {
		return cleanup(err)
	}
	// The window for a racing save: from this check to the replacement.
	if err := stillHolds(real, before, original); err != nil {
		return cleanup(err)
	}
	if err := replace(tmp.Name(), real, original); err != nil {
		var kept *keptError
		if !errors.As(err, &kept) {
			os.Remove(tmp.Name())
		}
		return err
	}
	return nil
}

// stillHolds checks that the file at path is the one described by before
// (same file, size and modification time) and still holds original.
func stillHolds(path string, before os.FileInfo, original []byte) error {
	now, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !os.SameFile(before, now) || now.Size() != int64(len(original)) || !now.ModTime().Equal(before.ModTime()) {
		return ErrChangedOnDisk
	}
	current, err := analysis.ReadFile(path)
	if err != nil {
		return err
	}
	if !bytes.Equal(current, original) {
		return ErrChangedOnDisk
	}
	return nil
}

// writeInPlace overwrites the file itself, keeping its identity (links,
// owner, mode, attributes), after writing a backup beside it that is
// removed once the new content is on disk, and kept if anything fails.
func writeInPlace(path string, original, fixed []byte) error {
	backup, err := writeBackup(path, original)
	if err != nil {
		return fmt.Errorf("writing a backup before changing the file in place: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		os.Remove(backup)
		return err
	}
	// Where the platform allows, nobody else opens the file from here to
	// the end of the write: an editor's save waits, and lands after it.
	leaseAgainstOpeners(f)
	// The last check, on the file as opened.
	if !holds(f, original) {
		f.Close()
		os.Remove(backup)
		return ErrChangedOnDisk
	}
	if testHookBeforeWriteInPlace != nil {
		testHookBeforeWriteInPlace()
	}
	_, err = f.WriteAt(fixed, 0)
	if err == nil {
		err = f.Truncate(int64(len(fixed)))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing in place failed (%w); the original is in %s", err, backup)
	}
	os.Remove(backup)
	return nil
}

// holds reports whether the open file f holds original, and nothing more.
func holds(f *os.File, original []byte) bool {
	current := make([]byte, len(original)+1)
	n, _ := f.ReadAt(current, 0)
	return n == len(original) && bytes.Equal(current[:n], original)
}

// keptError is an error after which a file beside the one written holds
// a version the user saved meanwhile: it must stay.
type keptError struct{ msg string }

func (e *keptError) Error() string { return e.msg }

// keptAt returns a keptError whose message is format with the kept file's
// path in it.
func keptAt(path, format string) error { return &keptError{fmt.Sprintf(format, path)} }

// testHookBeforeWriteInPlace, when set, runs between writeInPlace's last
// check and its write (tests race a save there).
var testHookBeforeWriteInPlace func()

// testHookAfterExchange, when set, runs right after replace has put the
// fixed file under path and the original under replaced (tests race a save
// there).
var testHookAfterExchange func(path, replaced string)

// testHookBeforeRemovingOriginal, when set, runs right before the
// original, moved to replaced, is removed (tests race a save there).
var testHookBeforeRemovingOriginal func(replaced string)

// writeBackup writes original, synced, to a new file beside path and
// returns its name.
func writeBackup(path string, original []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".vramlint-backup-*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(original)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

func renameOver(tmp, path string) error {
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replacing the file: %w", err)
	}
	return nil
}
