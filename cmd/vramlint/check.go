package main

import (
	"context"
	"flag"
	"fmt"
	"io"
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
		fixed, changed, failedWrites := applyFixes(checker.Runner, files, *diff, *unsafeFixes, stdout, stderr)
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

// applyFixes fixes each file with diagnostics, in rounds, and writes it
// (or, with diff, prints the diff). It replaces each file's result with the
// analysis of the fixed source, and returns the number of diagnostics
// fixed, of files changed, and of files that could not be written.
func applyFixes(runner *analysis.Runner, files []workspace.FileResult, diff, unsafeFlag bool, stdout, stderr io.Writer) (fixed, changed, failed int) {
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
		changed++
		f.Result = fr.Remaining
		f.Result.Compact() // keep what the report needs, not the model
	}
	return fixed, changed, failed
}
