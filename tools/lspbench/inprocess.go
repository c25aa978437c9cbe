package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/rules"
	vramlint "github.com/vramlint/vramlint/server"
)

// typeInProcess types typed into text where says (see typingAt), one
// character a version, as the typing session does, but in this process:
// each key is vramlint's incremental parse of the edited text
// (pyast.Editor) and its analysis with every rule, carried from the last
// version's (analysis.Runner.AnalyzeTree), of the file alone, without its
// project. It returns a line with the keys' percentiles, how many took
// over 15 ms and the CPU a key (this process's, every core, the collector
// included). Without the protocol, the encoding, the client and the
// server's other work, it is the least noisy measure of a keystroke's work.
// The runtime is tuned as the server tunes its own (vramlint's server.TuneRuntime).
func typeInProcess(path, text, typed, where string) (string, error) {
	vramlint.TuneRuntime()
	src := []byte(text)
	at, err := typingAt(text, where)
	if err != nil {
		return "", err
	}
	tree, err := pyast.ParseForEditing(context.Background(), src)
	if err != nil {
		return "", err
	}
	runner := &analysis.Runner{Rules: rules.All()}
	prev := runner.AnalyzeTree(nil, path, src, tree, nil)
	var took []time.Duration
	cpu := processCPU(os.Getpid())
	for _, r := range typed {
		key := string(r)
		start := time.Now()
		ed := pyast.NewEditor(tree, src)
		ed.Replace(at, at, key)
		if tree, err = ed.Parse(context.Background()); err != nil {
			return "", err
		}
		src = ed.Text()
		prev = runner.AnalyzeTree(prev, path, src, tree, nil)
		took = append(took, time.Since(start))
		at += len(key)
	}
	used := processCPU(os.Getpid()) - cpu
	if len(took) == 0 {
		return "", fmt.Errorf("nothing to type")
	}
	over := 0
	for _, d := range took {
		if d > 15*time.Millisecond {
			over++
		}
	}
	slices.Sort(took)
	percentile := func(p int) float64 { return ms(took[min(len(took)-1, len(took)*p/100)]) }
	cpuKey := "?"
	if cpu >= 0 && used >= 0 {
		cpuKey = fmt.Sprintf("%.2f", ms(used)/float64(len(took)))
	}
	return fmt.Sprintf("in-process typing: %d keys, p50 %.2f, p90 %.2f, p95 %.2f, p99 %.2f, max %.2f ms; %d over 15 ms; cpu ms/key %s",
		len(took), percentile(50), percentile(90), percentile(95), percentile(99), ms(took[len(took)-1]), over, cpuKey), nil
}
