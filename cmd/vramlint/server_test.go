package main

import (
	"bytes"
	"io"
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
