//go:build linux

package pyast

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

func residentKB(t *testing.T) int {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return kb
		}
	}
	t.Skip("no VmRSS")
	return 0
}

// After a large file is parsed and its trees freed, ReleaseMemory gives the
// parser's and the C allocator's memory back: without it the server kept
// hundreds of megabytes after closing a large document.
func TestReleaseMemoryAfterALargeParse(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 6<<20; i++ {
		fmt.Fprintf(&b, "def f%d(model, x):\n    y = [model(x) + %d for _ in range(3)]\n    return y\n", i, i)
	}
	src := []byte(b.String())
	ReleaseMemory()
	before := residentKB(t)
	tree, err := Parse(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	tree.FreeSyntaxTree()
	tree = nil
	peak := residentKB(t)
	ReleaseMemory()
	after := residentKB(t)
	t.Logf("resident: %d KB before, %d KB after parsing, %d KB after ReleaseMemory", before, peak, after)
	if grown := peak - before; grown < 20<<10 {
		t.Skipf("parsing grew the process by only %d KB; nothing to measure", grown)
	}
	if after-before > (peak-before)/2 {
		t.Errorf("ReleaseMemory kept %d of the %d KB the parse took", after-before, peak-before)
	}
}
