//go:build !linux && !darwin

package codeactions

import "os"

func writable(path string, info os.FileInfo) bool { return info.Mode().Perm()&0o200 != 0 }

func linkCount(info os.FileInfo) uint64 { return 1 }

func preserveOwner(f *os.File, info os.FileInfo) error { return nil }

func copyXattrs(path string, f *os.File) error { return nil }
