package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Clients pass --stdio; the server accepts it and serves (here: stdin is
// closed at once, an abnormal end without shutdown, status 1, not a usage
// error).
func TestServerAcceptsStdio(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := runServer([]string{"--stdio", "--debounce", "0"}, io.NopCloser(strings.NewReader("")), &stdout, &stderr)
	if code != 1 || strings.Contains(stderr.String(), "flag provided but not defined") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout: %q", stdout.String())
	}
}

// --cpuprofile and --memprofile write their profiles (gzipped protocol
// buffers, as pprof reads them) when the session ends.
func TestServerWritesProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof")
	var stdout, stderr bytes.Buffer
	runServer([]string{"--cpuprofile", cpu, "--memprofile", mem}, io.NopCloser(strings.NewReader("")), &stdout, &stderr)
	for _, path := range []string{cpu, mem} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
			t.Errorf("%s: not a gzipped profile (%d bytes)", filepath.Base(path), len(data))
		}
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout: %q", stdout.String())
	}
}
