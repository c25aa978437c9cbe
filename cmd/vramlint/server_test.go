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
// buffers, as pprof reads them) and --runtime-trace its execution trace
// when the session ends; check's --cpuprofile when the check does.
func TestServerWritesProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem, trace := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof"), filepath.Join(dir, "run.trace")
	var stdout, stderr bytes.Buffer
	runServer([]string{"--cpuprofile", cpu, "--memprofile", mem, "--runtime-trace", trace}, io.NopCloser(strings.NewReader("")), &stdout, &stderr)
	// The execution trace starts with its header, "go 1.N trace".
	if data, err := os.ReadFile(trace); err != nil || !bytes.HasPrefix(data, []byte("go 1.")) {
		t.Errorf("--runtime-trace wrote no execution trace (%v): %.20q", err, data)
	}
	if code := runServer([]string{"--runtime-trace", filepath.Join(dir, "missing", "run.trace")}, io.NopCloser(strings.NewReader("")), io.Discard, io.Discard); code != exitError {
		t.Errorf("server with an unwritable trace exited %d, want %d", code, exitError)
	}
	// check writes one of its run.
	checked := filepath.Join(dir, "check.prof")
	if code := runCheck([]string{"--cpuprofile", checked, dir}, io.Discard, &stderr); code != exitClean {
		t.Errorf("check exited %d: %s", code, stderr.String())
	}
	if code := runCheck([]string{"--cpuprofile", filepath.Join(dir, "missing", "x.prof"), dir}, io.Discard, io.Discard); code != exitError {
		t.Errorf("check with an unwritable profile exited %d, want %d", code, exitError)
	}
	for _, path := range []string{cpu, mem, checked} {
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

// A --trace-phases file that cannot be created stops the server before it
// starts, saying why, rather than tracing nothing.
func TestServerRefusesAnUnwritablePhaseTrace(t *testing.T) {
	var stdout, stderr bytes.Buffer
	path := filepath.Join(t.TempDir(), "missing", "phases.jsonl")
	if code := runServer([]string{"--trace-phases", path}, io.NopCloser(strings.NewReader("")), &stdout, &stderr); code != exitError {
		t.Errorf("exited %d, want %d", code, exitError)
	}
	if !strings.Contains(stderr.String(), "phases.jsonl") || stdout.Len() != 0 {
		t.Errorf("stderr %q, stdout %q", stderr.String(), stdout.String())
	}
}
