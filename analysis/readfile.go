package analysis

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrNotRegular is returned for paths that are not regular files: a device
// such as /dev/zero reads forever, and a FIFO blocks until a writer comes.
var ErrNotRegular = errors.New("not a regular file (a device, FIFO or socket), skipped")

// ReadFile reads a source file: only a regular file (checked on the opened
// file, so a path swapped for a FIFO after a Stat cannot block), and at
// most MaxFileSize bytes, however large the file grows while it is read.
func ReadFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openNonBlocking, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, ErrNotRegular
	}
	if info.Size() > MaxFileSize {
		return nil, tooLarge(info.Size())
	}
	src, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(src) > MaxFileSize {
		return nil, tooLarge(int64(len(src)))
	}
	return src, nil
}

func tooLarge(size int64) error {
	return fmt.Errorf("file is too large (%d MB; the limit is %d MB)", size>>20, MaxFileSize>>20)
}
