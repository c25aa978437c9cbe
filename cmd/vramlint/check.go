package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/report"
	"github.com/vramlint/vramlint/analysis/rules"
	"github.com/vramlint/vramlint/analysis/workspace"
	"github.com/vramlint/vramlint/codeactions"
)

// listFlag is a comma-separated list flag (--select GPU001,GPU0).
type listFlag struct {
	values []string
	set    bool
}

func (l *listFlag) String() string { return strings.Join(l.values, ",") }

func (l *listFlag) Set(s string) error {
	l.set = true
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			l.values = append(l.values, v)
		}
	}
	return nil
}

func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("output-format", "text", "output format: "+strings.Join(report.Formats, ", "))
	var sel, ignore listFlag
	fs.Var(&sel, "select", "rule codes or prefixes to enable, comma-separated (replaces the configured select)")
	fs.Var(&ignore, "ignore", "rule codes or prefixes to disable, comma-separated (replaces the configured ignore)")
	jobs := fs.Int("jobs", 0, "files to analyse at once (0: one per core)")
	fix := fs.Bool("fix", false, "apply safe fixes (and unsafe ones with --unsafe-fixes)")
	unsafeFixes := fs.Bool("unsafe-fixes", false, "also apply unsafe fixes (implies --fix unless --diff is given)")
	diff := fs.Bool("diff", false, "print the fixes as a unified diff and write nothing")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile (pprof) of the check to this file")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: vramlint check [flags] [PATH...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitError
	}
	if !slices.Contains(report.Formats, *format) {
		fmt.Fprintf(stderr, "vramlint: unknown output format %q (want %s)\n", *format, strings.Join(report.Formats, ", "))
		return exitError
	}
	overrides := analysis.Overrides{}
	if sel.set {
		overrides["select"] = sel.values
		overrides["extend-select"] = []string{}
	}
	if ignore.set {
		overrides["ignore"] = ignore.values
	}
	// Check the command line's selectors once, up front.
	if _, err := (&analysis.Settings{}).WithOverrides(overrides); err != nil {
		fmt.Fprintf(stderr, "vramlint: %v\n", strings.Replace(err.Error(), ": [tool.vramlint] ", ": --", 1))
		return exitError
	}
	stopProfile, ok := startCPUProfile(*cpuProfile, stderr)
	if !ok {
		return exitError
	}
	defer stopProfile()
	paths := fs.Args()
	if len(paths) == 0 {
		paths = []string{"."}
	}
	checker := &workspace.Checker{
		Runner:  &analysis.Runner{Rules: rules.All()},
		Options: workspace.Options{Overrides: overrides, Jobs: *jobs},
	}
	files, problems := checker.Check(context.Background(), paths)

	in := report.Input{Files: files, Rules: rules.All(), Version: version}
	for _, p := range problems {
		if p.Note {
			fmt.Fprintf(stderr, "vramlint: note: %s\n", p)
			continue
		}
		in.Unchecked++
		fmt.Fprintf(stderr, "vramlint: %s\n", p)
	}
	ruleFailed := false
	for _, f := range files {
		switch {
		case f.Err != nil:
			in.Unchecked++
			fmt.Fprintf(stderr, "vramlint: %s: %v\n", f.Path, f.Err)
		case f.Result != nil:
			if len(f.Result.RuleErrors) > 0 {
				in.RuleFailures++
			}
			for _, e := range f.Result.RuleErrors {
				ruleFailed = true
				fmt.Fprintf(stderr, "vramlint: internal error, please report it: %v\n", e)
			}
		}
	}
	if *fix || *diff || *unsafeFixes {
		var fixed, changed, failedWrites int
		files, fixed, changed, failedWrites = applyFixes(checker, paths, files, *diff, *unsafeFixes, stdout, stderr)
		in.Files = files
		in.Unchecked += failedWrites
		if *diff {
			fmt.Fprintf(stderr, "Would fix %d %s in %d %s.\n", fixed, report.Plural(fixed, "problem", "problems"), changed, report.Plural(changed, "file", "files"))
			switch {
			case in.Unchecked > 0 || ruleFailed:
				return exitError
			case changed > 0:
				return exitFindings
			}
			return exitClean
		}
		in.Fixed = fixed
	}
	if err := report.Write(stdout, *format, in); err != nil {
		fmt.Fprintf(stderr, "vramlint: %v\n", err)
		return exitError
	}
	findings := 0
	for _, f := range files {
		if f.Result != nil {
			findings += len(f.Result.Diagnostics)
		}
	}
	switch {
	case in.Unchecked > 0 || ruleFailed:
		return exitError
	case findings > 0:
		return exitFindings
	}
	return exitClean
}

// applyFixes fixes the files with diagnostics and writes them (or, with
// diff, prints the diff). First the fixes that edit several files, each as
// a whole, re-checking after each; then each file's own fixes, in rounds.
// It returns the results (each file's replaced by the analysis of its
// fixed source), and the number of diagnostics fixed, of files changed,
// and of files that could not be written.
func applyFixes(checker *workspace.Checker, paths []string, files []workspace.FileResult, diff, unsafeFlag bool, stdout, stderr io.Writer) (_ []workspace.FileResult, fixed, changed, failed int) {
	touched := map[string]bool{} // absolute paths of the files changed
	files, fixed, failed = applyCrossFileFixes(checker, paths, files, diff, unsafeFlag, touched, stdout, stderr)
	runner := checker.Runner
	for i := range files {
		f := &files[i]
		if f.Result == nil || len(f.Result.Diagnostics) == 0 {
			continue
		}
		src := f.Result.Src
		fr, err := codeactions.FixAll(context.Background(), runner, f.Path, src, f.Settings, codeactions.Preferred(unsafeFlag || f.Settings.UnsafeFixes))
		if err != nil {
			fmt.Fprintf(stderr, "vramlint: %s: %v\n", f.Path, err)
			failed++
			continue
		}
		for _, d := range fr.Dropped {
			fmt.Fprintf(stderr, "vramlint: note: %s\n", d)
		}
		if fr.Fixed == 0 || string(fr.Source) == string(src) {
			continue
		}
		if diff {
			fmt.Fprint(stdout, codeactions.UnifiedDiff(f.Path, src, fr.Source))
		} else if err := codeactions.WriteFixed(f.Path, src, fr.Source); err != nil {
			fmt.Fprintf(stderr, "vramlint: %s: %v\n", f.Path, err)
			failed++
			continue
		}
		fixed += fr.Fixed
		touched[absolute(f.Path)] = true
		f.Result = fr.Remaining
		f.Result.Compact() // keep what the report needs, not the model
	}
	return files, fixed, len(touched), failed
}

// applyCrossFileFixes applies the fixes that edit several files: one at a
// time, every file of it or none, then checks the paths again, since the
// other fixes' offsets into those files have moved. With diff it prints
// each file's diff instead and applies nothing, so it shows the first of
// the fixes that touch the same file.
func applyCrossFileFixes(checker *workspace.Checker, paths []string, files []workspace.FileResult, diff, unsafeFlag bool, touched map[string]bool, stdout, stderr io.Writer) (_ []workspace.FileResult, fixed, failed int) {
	tried := map[string]bool{}
	for range codeactions.MaxRounds {
		applied := false
		for _, c := range crossFileFixes(files, unsafeFlag) {
			if tried[c.key] {
				continue
			}
			tried[c.key] = true
			changes, err := codeactions.Changes(c.file.Result, c.file.Path, c.fix)
			if err == nil && diff && slices.ContainsFunc(changes, func(ch codeactions.FileChange) bool { return touched[absolute(ch.Path)] }) {
				continue // printed with an earlier fix; its diff would not apply after it
			}
			if err == nil && !diff {
				err = codeactions.WriteChanges(changes)
			}
			if err != nil {
				fmt.Fprintf(stderr, "vramlint: %v\n", err)
				failed++
				continue
			}
			for _, ch := range changes {
				if diff {
					fmt.Fprint(stdout, codeactions.UnifiedDiff(report.ShownAs(c.file.Path, ch.Path), ch.Before, ch.After))
				}
				touched[absolute(ch.Path)] = true
			}
			fixed += c.diagnostics
			if !diff {
				applied = true
				break // the other fixes' offsets into these files have moved
			}
		}
		if !applied {
			return files, fixed, failed
		}
		checker.Runner.Project = nil // re-index: files changed
		files, _ = checker.Check(context.Background(), paths)
	}
	return files, fixed, failed
}

// crossFileFix is a fix that edits several files, with the number of
// diagnostics it fixes (those that share it).
type crossFileFix struct {
	file        *workspace.FileResult
	fix         analysis.Fix
	key         string
	diagnostics int
}

// crossFileFixes lists the files' cross-file fixes, each once, in the order
// of the files and their diagnostics.
func crossFileFixes(files []workspace.FileResult, unsafeFlag bool) []crossFileFix {
	var out []crossFileFix
	index := map[string]int{}
	for i := range files {
		f := &files[i]
		if f.Result == nil {
			continue
		}
		choose := codeactions.CrossFile(unsafeFlag || f.Settings.UnsafeFixes)
		for _, d := range f.Result.Diagnostics {
			fix := choose(d)
			if fix == nil {
				continue
			}
			key := absolute(f.Path) + "\x00" + fix.Title + "\x00" + fix.EditsKey()
			if k, ok := index[key]; ok {
				out[k].diagnostics++
				continue
			}
			index[key] = len(out)
			out = append(out, crossFileFix{file: f, fix: *fix, key: key, diagnostics: 1})
		}
	}
	return out
}

func absolute(path string) string {
	if a, err := filepath.Abs(path); err == nil {
		return a
	}
	return path
}
