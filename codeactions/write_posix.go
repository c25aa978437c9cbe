//go:build linux || darwin

package codeactions

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// writable reports whether the user may write path, and whether its mode
// lets anyone write it: root may write a read-only file, but its owner
// made it read-only for a reason.
func writable(path string, info os.FileInfo) bool {
	return info.Mode().Perm()&0o222 != 0 && unix.Access(path, unix.W_OK) == nil
}

func linkCount(info os.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// preserveOwner gives f the owner and group of the file described by info;
// it fails when this user may not (only root gives files away).
func preserveOwner(f *os.File, info os.FileInfo) error {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	mine, err := f.Stat()
	if err != nil {
		return err
	}
	if own, ok := mine.Sys().(*syscall.Stat_t); ok && own.Uid == st.Uid && own.Gid == st.Gid {
		return nil
	}
	return f.Chown(int(st.Uid), int(st.Gid))
}

// copyXattrs copies the extended attributes of path onto f. A file system
// without them has none to lose.
func copyXattrs(path string, f *os.File) error {
	size, err := unix.Listxattr(path, nil)
	switch {
	case unsupported(err) || err == nil && size <= 0:
		return nil
	case err != nil:
		return err
	}
	names := make([]byte, size)
	size, err = unix.Listxattr(path, names)
	if err != nil {
		return err
	}
	for _, name := range splitNul(names[:size]) {
		n, err := unix.Getxattr(path, name, nil)
		if err != nil {
			return err
		}
		value := make([]byte, n)
		if n, err = unix.Getxattr(path, name, value); err != nil {
			return err
		}
		if err := unix.Fsetxattr(int(f.Fd()), name, value[:n], 0); err != nil && !unsupported(err) {
			return err
		}
	}
	return nil
}

func unsupported(err error) bool {
	return errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP)
}

func splitNul(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != 0 {
			i++
		}
		if i > 0 {
			out = append(out, string(b[:i]))
		}
		b = b[min(i+1, len(b)):]
	}
	return out
}
