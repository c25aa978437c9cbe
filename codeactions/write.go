package codeactions

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrChangedOnDisk is returned when a file changed between the moment it
// was read and the moment its fixes were to be written.
var ErrChangedOnDisk = errors.New("changed on disk since it was read; not written")

// WriteFixed replaces the file at path, whose content was original, with
// fixed: atomically (a temporary file in the same folder, then a rename),
// keeping its mode, and only if the file still holds original.
func WriteFixed(path string, original, fixed []byte) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	info, err := os.Stat(real)
	if err != nil {
		return err
	}
	current, err := os.ReadFile(real)
	if err != nil {
		return err
	}
	if !bytes.Equal(current, original) {
		return ErrChangedOnDisk
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
	if err := tmp.Chmod(info.Mode().Perm()); err != nil {
		return cleanup(err)
	}
	if err := tmp.Sync(); err != nil {
		return cleanup(err)
	}
	if err := tmp.Close(); err != nil {
		return cleanup(err)
	}
	if err := os.Rename(tmp.Name(), real); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("replacing the file: %w", err)
	}
	return nil
}
