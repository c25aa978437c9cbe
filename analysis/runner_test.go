package analysis

import (
	"strings"
	"testing"
)

func TestCheckSource(t *testing.T) {
	if err := CheckSource([]byte("x = 1\n")); err != nil {
		t.Error(err)
	}
	if err := CheckSource([]byte("x\x00y")); err == nil || !strings.Contains(err.Error(), "binary") {
		t.Errorf("NUL byte: %v", err)
	}
	if err := CheckSource([]byte("ok\nbad \xff here")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("invalid UTF-8: %v", err)
	}
	if err := CheckSource(make([]byte, MaxFileSize+1)); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("huge file: %v", err)
	}
}
