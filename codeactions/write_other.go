//go:build !linux

package codeactions

import "os"

// leaseAgainstOpeners cannot lease f on this platform: the content check
// before writing in place is the last word.
func leaseAgainstOpeners(f *os.File) {}

// replace renames tmp over path: this platform cannot exchange two files
// atomically, so the last check (in WriteFixed) is the last word.
func replace(tmp, path string, original []byte) error {
	return renameOver(tmp, path)
}
