//go:build !linux

package codeactions

// replace renames tmp over path: this platform cannot exchange two files
// atomically, so the last check (in WriteFixed) is the last word.
func replace(tmp, path string, original []byte) error {
	return renameOver(tmp, path)
}
