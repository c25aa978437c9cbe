package codeactions

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vramlint/vramlint/analysis"
)

// How long to wait for another program to close a file it has open for
// writing (an editor in the middle of a save) before giving up.
const (
	writerWait = 300 * time.Millisecond
	writerPoll = 5 * time.Millisecond
)

// replace puts tmp in place of path by exchanging the two atomically.
//
// First it takes a read lease on the file it replaces. While the lease is
// held, the kernel refuses it if the file is open for writing, and breaks it
// when anyone opens the file for writing or truncates it; such an opener
// waits until the lease is let go. That closes the window a content check
// alone leaves open: an editor that opened the file for an in-place save
// just before the exchange would otherwise write into the replaced file
// after it is deleted, and the save would be lost.
//
// The fixed file is leased too. After the exchange, a broken lease on it
// means a save found it under the name: it stays, and the original goes.
// Otherwise the replaced file is deleted only if it is the one leased and
// the lease is unbroken (a save that breaks it later is copied beside the
// file, see removeOriginal); a broken lease undoes the exchange and keeps
// the save. Where leases cannot be had, the replaced file's content is
// compared with original instead. Where the file system cannot exchange, it
// renames.
func replace(tmp, path string, original []byte) error {
	held, err := leaseAgainstWriters(path, original)
	if err != nil {
		return err
	}
	if held != nil {
		defer held.Close() // lets go of the lease
	}
	// The fixed file is leased too: a save that finds it under the name
	// after the exchange (an open interrupted while it waited on the
	// original's lease, and tried again) breaks it and waits, and its
	// broken lease says the save goes there.
	fixed := leaseFixed(held, tmp)
	if fixed != nil {
		defer fixed.Close()
	}
	savedIntoFixed := func() bool { return fixed != nil && leaseBroken(fixed) }
	err = unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return renameOver(tmp, path)
	}
	if err != nil {
		return err
	}
	if testHookAfterExchange != nil {
		testHookAfterExchange(path, tmp)
	}
	if savedIntoFixed() {
		// A save is writing into the file now under the name: it lands
		// after the fixes, once the leases are let go. The original, at
		// tmp, goes.
		if err := removeOriginal(held, tmp, original); err != nil {
			return err
		}
		return ErrChangedOnDisk
	}
	if replacedUnchanged(held, tmp, original) {
		return removeOriginal(held, tmp, original)
	}
	// Put the save back.
	if err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE); err != nil {
		return keptAt(tmp, "changed on disk while being written; the version saved meanwhile is in %s")
	}
	if savedIntoFixed() {
		// A retried save found the fixed file under the name before it
		// went back: what it writes goes there.
		return keptAt(tmp, "changed on disk while being written; the file holds one save, another one made meanwhile is in %s")
	}
	os.Remove(tmp)
	return ErrChangedOnDisk
}

// removeOriginal removes the original, which the exchange moved to tmp.
// When its lease (held) is broken, an open for writing found it under its
// name before the exchange: one that gave up (interrupted, and tried again
// on the fixed file), or a save that waits for the lease and will write
// into the file that has no name any more. A file without a name cannot be
// given one back (linkat refuses), so what such a save writes is copied
// back to tmp, and the error says so.
func removeOriginal(held *os.File, tmp string, original []byte) error {
	if testHookBeforeRemovingOriginal != nil {
		testHookBeforeRemovingOriginal(tmp)
	}
	if err := os.Remove(tmp); err != nil {
		return err
	}
	if held == nil || !leaseBroken(held) {
		return nil
	}
	return rescueSave(held, tmp, original)
}

// rescueSave lets go of the lease on the original, which has no name any
// more, waits for a save blocked on it to write and close the file, and
// copies what it wrote to tmp. Where no writer comes within writerWait and
// the file still holds original, the open gave up and there is nothing to
// keep.
func rescueSave(held *os.File, tmp string, original []byte) error {
	lost := errors.New("another program opened the file to save it while its fixes were written; its save may be lost")
	deadline := time.Now().Add(writerWait)
	sawWriter, writing := false, false
	for {
		if _, err := unix.FcntlInt(held.Fd(), unix.F_SETLEASE, unix.F_UNLCK); err != nil {
			return lost
		}
		time.Sleep(writerPoll) // the waiting save opens the file now
		_, err := unix.FcntlInt(held.Fd(), unix.F_SETLEASE, unix.F_RDLCK)
		writing = errors.Is(err, unix.EAGAIN) // it has the file open for writing
		sawWriter = sawWriter || writing
		switch {
		case writing:
		case err != nil:
			return lost
		case !leaseBroken(held) && (sawWriter || !holds(held, original)):
			// Leased again, nobody has it open for writing: the save wrote
			// and closed the file.
			return keepCopy(held, tmp)
		}
		if time.Now().After(deadline) {
			if !sawWriter && holds(held, original) {
				return nil
			}
			err := keepCopy(held, tmp)
			var kept *keptError
			if writing && errors.As(err, &kept) {
				// Still open for writing: what it writes from now on is lost.
				err = keptAt(tmp, err.Error()+" (copied while it was still being written: it may be incomplete)")
			}
			return err
		}
	}
}

// keepCopy writes what the file open as f holds to a new file at tmp.
func keepCopy(f *os.File, tmp string) error {
	info, err := f.Stat()
	if err != nil {
		return err
	}
	saved := make([]byte, info.Size())
	if _, err := f.ReadAt(saved, 0); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		_, err = out.Write(saved)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("another program saved the file while its fixes were written, and its save could not be kept (%v)", err)
	}
	return keptAt(tmp, "another program saved the file while its fixes were written; the file holds the fixes, the save is in %s")
}

// leaseFixed opens the fixed file at tmp and takes a read lease on it,
// when the original's is held (held); nil otherwise, or when the lease
// cannot be had.
func leaseFixed(held *os.File, tmp string) *os.File {
	if held == nil {
		return nil
	}
	f, err := os.Open(tmp)
	if err != nil {
		return nil
	}
	if takeLease(f, unix.F_RDLCK) != nil {
		f.Close()
		return nil
	}
	return f
}

// replacedUnchanged reports whether the file the exchange moved to tmp still
// holds original: with a lease, it is the file leased and nothing opened it
// for writing since; without one, its content is compared.
func replacedUnchanged(held *os.File, tmp string, original []byte) bool {
	if held == nil {
		replaced, err := analysis.ReadFile(tmp)
		return err == nil && bytes.Equal(replaced, original)
	}
	leased, err := held.Stat()
	if err != nil {
		return false
	}
	now, err := os.Stat(tmp)
	return err == nil && os.SameFile(leased, now) && !leaseBroken(held)
}

// leaseAgainstWriters opens path and takes a read lease on it, waiting a
// little while another program has it open for writing, then checks through
// the leased descriptor that the file holds original. It returns nil and no
// error where the platform or file system offers no leases (or not to this
// user), and ErrOpenForWriting when the other program keeps the file open.
func leaseAgainstWriters(path string, original []byte) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	switch err := takeLease(f, unix.F_RDLCK); {
	case errors.Is(err, unix.EAGAIN):
		f.Close()
		return nil, ErrOpenForWriting
	case err != nil:
		f.Close()
		return nil, nil
	}
	if !holds(f, original) {
		f.Close()
		return nil, ErrChangedOnDisk
	}
	return f, nil
}

// leaseBroken reports whether the lease held on f is being broken: someone
// opened the file for writing or truncated it since it was taken.
func leaseBroken(f *os.File) bool {
	kind, err := unix.FcntlInt(f.Fd(), unix.F_GETLEASE, 0)
	return err != nil || kind != unix.F_RDLCK
}

// leaseAgainstOpeners takes a write lease on f, opened for writing: until
// f is closed, anyone else's open of the file waits (a save then lands
// after the write). It waits a little while another program has the file
// open, and gives up silently where the file system, the user or another
// program's open descriptor does not allow one.
func leaseAgainstOpeners(f *os.File) { takeLease(f, unix.F_WRLCK) }

// takeLease takes a lease of kind (F_RDLCK, F_WRLCK) on f, trying again
// for writerWait while another program's open descriptor stands in the way
// (EAGAIN, then returned).
func takeLease(f *os.File, kind int) error {
	deadline := time.Now().Add(writerWait)
	for {
		_, err := unix.FcntlInt(f.Fd(), unix.F_SETLEASE, kind)
		if !errors.Is(err, unix.EAGAIN) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(writerPoll)
	}
}
