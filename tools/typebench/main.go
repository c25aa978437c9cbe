// Command typebench types a function into a Python file key by key, as
// lspbench's typing session does, but in its own process: each key is
// vramlint's incremental parse of the edited text and its analysis with
// every rule, carried from the last version's, of the file alone (without
// its project). Without the protocol, the encoding and a server's other
// work, it is the least noisy measure of a keystroke's work on a shared
// machine; compare versions by interleaved rounds.
//
//	go run ./tools/typebench --type-at method --rounds 3 FILE.py
//
// Each round prints the keys' p50, p90, p95, p99 and maximum, how many
// took over 15 ms, and the CPU a key (this process's, every core, the
// collector included; "?" where it cannot be read). --cpuprofile FILE
// writes a CPU profile of the rounds, for where a key's time goes
// (go tool pprof -top FILE). --keys FILE writes each key of the last
// round with its latency and the line typed so far, to find the slow ones.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/rules"
	"github.com/vramlint/vramlint/internal/generated"
	"github.com/vramlint/vramlint/server"
)

func main() {
	typeFile := flag.String("type", "", "type the text of this file instead of the built-in training function")
	typeAt := flag.String("type-at", "middle", "where to type, as lspbench's --type-at: middle, end or method (indented as the first method past the middle with a blank line above it, typed on that line)")
	rounds := flag.Int("rounds", 1, "how many times to type it, each into the file as it was")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the rounds to this file (each round's first parse and analysis of the file included, a small part of it)")
	keys := flag.String("keys", "", "write each key of the last round to this file: its number, latency in ms and the text typed so far on its line (to find the slow keys)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: typebench [--type FILE] [--type-at middle|end|method] [--rounds N] [--keys FILE] [--cpuprofile FILE] FILE.py")
		os.Exit(2)
	}
	path := flag.Arg(0)
	text, err := os.ReadFile(path)
	check(err)
	custom := ""
	if *typeFile != "" {
		t, err := os.ReadFile(*typeFile)
		check(err)
		custom = string(t)
	}
	typed, err := generated.TypedText(custom, string(text), *typeAt)
	check(err)
	// As the server tunes its own runtime.
	server.TuneRuntime()
	if *cpuProfile != "" {
		profile, err := os.Create(*cpuProfile)
		check(err)
		check(pprof.StartCPUProfile(profile))
		defer func() {
			pprof.StopCPUProfile()
			check(profile.Close())
		}()
	}
	var last *round
	for range *rounds {
		last, err = typeInProcess(path, string(text), typed, *typeAt)
		check(err)
		fmt.Println(last.summary())
	}
	if *keys != "" && last != nil {
		check(os.WriteFile(*keys, []byte(last.keyLines(typed)), 0o644))
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "typebench:", err)
		os.Exit(1)
	}
}

// A round is one typing session: what each key took, in the order typed,
// and the process's CPU over them all (negative where it cannot be read).
type round struct {
	took []time.Duration
	cpu  time.Duration
}

// typeInProcess types typed into text where says (see
// generated.TypingAt), one character a version.
func typeInProcess(path, text, typed, where string) (*round, error) {
	src := []byte(text)
	at, err := generated.TypingAt(text, where)
	if err != nil {
		return nil, err
	}
	if typed == "" {
		return nil, errors.New("nothing to type")
	}
	tree, err := pyast.ParseForEditing(context.Background(), src)
	if err != nil {
		return nil, err
	}
	// As the server does at the pause after an open.
	tree.KeepSplitTrees(context.Background())
	runner := &analysis.Runner{Rules: rules.All()}
	prev := runner.AnalyzeTree(nil, path, src, tree, nil)
	var took []time.Duration
	cpu := processCPU()
	for _, r := range typed {
		key := string(r)
		start := time.Now()
		ed := pyast.NewEditor(tree, src)
		ed.Replace(at, at, key)
		if tree, err = ed.Parse(context.Background()); err != nil {
			return nil, err
		}
		src = ed.Text()
		prev = runner.AnalyzeTree(prev, path, src, tree, nil)
		took = append(took, time.Since(start))
		at += len(key)
	}
	used := processCPU() - cpu
	if cpu < 0 || used < 0 {
		used = -1
	}
	return &round{took: took, cpu: used}, nil
}

// summary is a line with the keys' percentiles, how many took over 15 ms
// and the CPU a key.
func (r *round) summary() string {
	over := 0
	for _, d := range r.took {
		if d > 15*time.Millisecond {
			over++
		}
	}
	sorted := slices.Sorted(slices.Values(r.took))
	percentile := func(p int) float64 { return ms(sorted[min(len(sorted)-1, len(sorted)*p/100)]) }
	cpuKey := "?"
	if r.cpu >= 0 {
		cpuKey = fmt.Sprintf("%.2f", ms(r.cpu)/float64(len(sorted)))
	}
	return fmt.Sprintf("typing in-process: %d keys, p50 %.2f, p90 %.2f, p95 %.2f, p99 %.2f, max %.2f ms; %d over 15 ms; cpu ms/key %s",
		len(sorted), percentile(50), percentile(90), percentile(95), percentile(99), ms(sorted[len(sorted)-1]), over, cpuKey)
}

// keyLines is a line a key of typed: its number, its latency in ms and
// the text typed so far on its line, as lspbench's --keys writes them.
func (r *round) keyLines(typed string) string {
	var b strings.Builder
	line := ""
	for key, c := range []rune(typed) {
		if c == '\n' {
			line = ""
		} else {
			line += string(c)
		}
		fmt.Fprintf(&b, "%d\t%.2f\t%q\n", key+1, ms(r.took[key]), line)
	}
	return b.String()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
