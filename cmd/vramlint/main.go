// Command vramlint finds PyTorch code that wastes or leaks GPU memory.
//
//	vramlint check [PATH...]   lint files and folders (default .)
//	vramlint server            language server over stdio
//	vramlint rule CODE         a rule's documentation
//	vramlint rules             the list of rules
//	vramlint version           version and build information
package main

import (
	"fmt"
	"io"
	"os"
)

// Exit codes, as ruff uses them.
const (
	exitClean    = 0
	exitFindings = 1
	exitError    = 2
)

const usage = `vramlint finds PyTorch code that wastes or leaks GPU memory.

Usage:
  vramlint check [flags] [PATH...]   lint files and folders (default .)
  vramlint server [flags]            language server over stdio
  vramlint rule CODE                 print a rule's documentation
  vramlint rules                     list the rules
  vramlint version                   print version and build information

Run 'vramlint COMMAND -h' for a command's flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitError
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "check":
		return runCheck(rest, stdout, stderr)
	case "server":
		return runServer(rest, os.Stdin, stdout, stderr)
	case "rule":
		return runRule(rest, stdout, stderr)
	case "rules":
		return runRules(rest, stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, versionString())
		return exitClean
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitClean
	default:
		fmt.Fprintf(stderr, "vramlint: unknown command %q\n\n%s", cmd, usage)
		return exitError
	}
}
