package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/report"
	"github.com/vramlint/vramlint/analysis/rules"
	"github.com/vramlint/vramlint/analysis/workspace"
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
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: vramlint check [flags] [PATH...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitError
	}
	if !validFormat(*format) {
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

	unchecked := len(problems)
	for _, p := range problems {
		fmt.Fprintf(stderr, "vramlint: %s\n", p)
	}
	findings, ruleFailed := 0, false
	for _, f := range files {
		switch {
		case f.Err != nil:
			unchecked++
			fmt.Fprintf(stderr, "vramlint: %s: %v\n", f.Path, f.Err)
		case f.Result != nil:
			findings += len(f.Result.Diagnostics)
			for _, e := range f.Result.RuleErrors {
				ruleFailed = true
				fmt.Fprintf(stderr, "vramlint: internal error, please report it: %v\n", e)
			}
		}
	}
	in := report.Input{Files: files, Rules: rules.All(), Version: version, Unchecked: unchecked}
	if err := report.Write(stdout, *format, in); err != nil {
		fmt.Fprintf(stderr, "vramlint: %v\n", err)
		return exitError
	}
	switch {
	case unchecked > 0 || ruleFailed:
		return exitError
	case findings > 0:
		return exitFindings
	}
	return exitClean
}

func validFormat(f string) bool {
	for _, known := range report.Formats {
		if f == known {
			return true
		}
	}
	return false
}
