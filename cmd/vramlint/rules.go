package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/vramlint/vramlint/analysis/rules"
)

func runRule(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: vramlint rule CODE")
		return exitError
	}
	r := rules.ByCode(strings.ToUpper(args[0]))
	if r == nil {
		fmt.Fprintf(stderr, "vramlint: unknown rule %q (run `vramlint rules` for the list)\n", args[0])
		return exitError
	}
	fmt.Fprint(stdout, r.Markdown())
	return exitClean
}

func runRules(args []string, stdout, stderr io.Writer) int {
	if len(args) != 0 {
		fmt.Fprintln(stderr, "usage: vramlint rules")
		return exitError
	}
	fmt.Fprintf(stdout, "%-7s %-28s %-9s %s\n", "CODE", "NAME", "FIX", "SEVERITY")
	for _, r := range rules.All() {
		fmt.Fprintf(stdout, "%-7s %-28s %-9s %s\n", r.Code, r.Name, r.Fixable, r.SeverityText())
	}
	return exitClean
}
