// Command parsefloor times tree-sitter's parse alone of every Python file
// under the given paths, with the binding vramlint uses, on as many cores
// as `vramlint check` uses: the yardstick of check's target (at most 1.3
// times this parse, see docs/PERFORMANCE.md). It reads every file first,
// so that only the parse is timed, and prints the best of --rounds.
//
//	go run ./tools/parsefloor DIR...
package main

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sitter "github.com/smacker/go-tree-sitter"
	"github.com/smacker/go-tree-sitter/python"
)

func main() {
	rounds := flag.Int("rounds", 3, "parse everything this many times and print the best")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: parsefloor [--rounds N] DIR|FILE...")
		os.Exit(2)
	}
	var sources [][]byte
	var lines int
	for _, root := range flag.Args() {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".py") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sources = append(sources, src)
			lines += strings.Count(string(src), "\n")
			return nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "parsefloor:", err)
			os.Exit(1)
		}
	}
	best := time.Duration(0)
	for range max(1, *rounds) {
		if took := parseAll(sources); best == 0 || took < best {
			best = took
		}
	}
	fmt.Printf("%d files, %d lines: parsed in %.3f s (best of %d, %d cores)\n", len(sources), lines, best.Seconds(), max(1, *rounds), runtime.GOMAXPROCS(0))
}

// parseAll parses every source once, a parser a core, each taking the next
// source left, and returns how long that took.
func parseAll(sources [][]byte) time.Duration {
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			p := sitter.NewParser()
			defer p.Close()
			p.SetLanguage(python.GetLanguage())
			for {
				i := int(next.Add(1)) - 1
				if i >= len(sources) {
					return
				}
				tree, err := p.ParseCtx(context.Background(), nil, sources[i])
				if err == nil {
					tree.Close()
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}
