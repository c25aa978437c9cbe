package codeactions

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
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
// After the exchange, the replaced file is deleted only if it is the one
// leased and the lease is unbroken; otherwise the exchange is undone and the
// save kept. Where leases cannot be had, the replaced file's content is
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
	err = unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return renameOver(tmp, path)
	}
	if err != nil {
		return err
	}
	if replacedUnchanged(held, tmp, original) {
		if err := os.Remove(tmp); err != nil {
			return err
		}
		if held == nil || !leaseBroken(held) {
			return nil
		}
		// An open for writing that found the file under its name before the
		// exchange reached it only now, and waits on the lease: give the file
		// its name back, so that what the save writes is not lost with it.
		if err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(held.Fd())), unix.AT_FDCWD, tmp, unix.AT_SYMLINK_FOLLOW); err != nil {
			return fmt.Errorf("another program opened the file to save it while its fixes were written, and the file it opened could not be put back (%v); its save may be lost", err)
		}
	}
	// Put the save back.
	if err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE); err != nil {
		return errors.New("changed on disk while being written; the version saved meanwhile is in " + tmp)
	}
	os.Remove(tmp)
	return ErrChangedOnDisk
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
