package codeactions

import (
	"bytes"
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/vramlint/vramlint/analysis"
)

// replace puts tmp in place of path by exchanging the two atomically, then
// checks what it replaced: if a save slipped in after the last check, the
// exchange is undone and the save kept. Where the file system cannot
// exchange, it renames.
func replace(tmp, path string, original []byte) error {
	err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return renameOver(tmp, path)
	}
	if err != nil {
		return err
	}
	replaced, err := analysis.ReadFile(tmp)
	if err == nil && bytes.Equal(replaced, original) {
		return os.Remove(tmp)
	}
	// Put the save back.
	if err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE); err != nil {
		return errors.New("changed on disk while being written; the version saved meanwhile is in " + tmp)
	}
	os.Remove(tmp)
	return ErrChangedOnDisk
}
