// Package workspace finds the Python files under the paths given to
// `vramlint check` and analyses them in parallel.
package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/vramlint/vramlint/analysis"
)

// defaultExcludes are folders never worth linting (ruff's list).
var defaultExcludes = map[string]bool{
	".bzr": true, ".direnv": true, ".eggs": true, ".git": true, ".git-rewrite": true, ".hg": true,
	".ipynb_checkpoints": true, ".mypy_cache": true, ".nox": true, ".pants.d": true, ".pyenv": true,
	".pytest_cache": true, ".pytype": true, ".ruff_cache": true, ".svn": true, ".tox": true, ".venv": true,
	".vscode": true, "__pypackages__": true, "_build": true, "buck-out": true, "dist": true,
	"node_modules": true, "site-packages": true, "venv": true, "__pycache__": true,
}

// largeFile is the size from which checking a file returns the memory its
// analysis took at once.
const largeFile = 1 << 20

// FileResult is the outcome for one file: a result, or the reason it could
// not be checked.
type FileResult struct {
	Path     string
	Result   *analysis.Result // nil when Err is set or the file never mentions torch
	Settings *analysis.Settings
	Err      error
}

// Problem is something that went wrong outside any one file's analysis: a
// path that does not exist, a symlink loop, a broken configuration file.
type Problem struct {
	Path string
	Err  error
	// Note marks what was skipped on purpose and leaves nothing unchecked
	// (a symbolic link back to a folder being checked): it is reported, but
	// does not make the check fail.
	Note bool
}

func (p Problem) Error() string { return p.Path + ": " + p.Err.Error() }

// Options configure a check run.
type Options struct {
	// Overrides apply over each file's pyproject.toml settings (the
	// command line's --select and --ignore).
	Overrides analysis.Overrides
	// Jobs is the number of files analysed at once (0: every core).
	Jobs int
	// Alone analyses each file without the others (no workspace index).
	Alone bool
}

// Checker runs the analysis over paths.
type Checker struct {
	Runner  *analysis.Runner
	Options Options

	projects *Projects // the index check fills, unless Options.Alone

	mu       sync.Mutex
	settings map[string]*analysis.Settings // by folder
	problems []Problem
	reported map[string]bool // config files already reported
	large    sync.Mutex      // held while a large file is analysed
}

// Check finds the Python files under paths and analyses them. Results are
// sorted by path; problems are the things that could not be checked
// besides files (each file's own error is in its FileResult).
func (c *Checker) Check(ctx context.Context, paths []string) ([]FileResult, []Problem) {
	c.settings, c.reported = map[string]*analysis.Settings{}, map[string]bool{}
	files := c.discover(paths)
	c.projects = nil
	if c.Runner.Project == nil && !c.Options.Alone {
		c.projects = ProjectsOf(files)
		c.Runner.Project = c.projects
	}
	results := make([]FileResult, len(files))
	var order []int // every file, in the given order
	if c.projects != nil {
		c.projects.Provisional()
		order = c.projects.ImportOrder(files)
	}
	c.checkAll(ctx, files, results, order)
	if c.projects != nil {
		// Every file's summary is known now: the files that other files'
		// DataLoaders run (a Dataset, a collate function) are analysed
		// again, with all of those DataLoaders in view, and so are those
		// that asked about their functions' callers in other files and
		// were told otherwise than all of them tell. A few, usually.
		unsettled := map[string]bool{}
		for _, f := range c.projects.Settle() {
			unsettled[f] = true
		}
		var again []int
		for i, f := range files {
			if results[i].Result != nil && (unsettled[f] || len(c.projects.LoadersUsing(f)) > 0) {
				again = append(again, i)
			}
		}
		if len(again) > 0 {
			c.checkAll(ctx, files, results, again)
		}
	}
	sort.Slice(c.problems, func(i, j int) bool { return c.problems[i].Path < c.problems[j].Path })
	return results, c.problems
}

// checkAll checks files[i] for each i of which (every file when nil) into
// results[i], on Options.Jobs cores.
func (c *Checker) checkAll(ctx context.Context, files []string, results []FileResult, which []int) {
	if which == nil {
		which = make([]int, len(files))
		for i := range which {
			which[i] = i
		}
	}
	jobs := c.Options.Jobs
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range jobs {
		wg.Go(func() {
			for i := range next {
				results[i] = c.checkFile(ctx, files[i])
			}
		})
	}
	for _, i := range which {
		next <- i
	}
	close(next)
	wg.Wait()
}

func (c *Checker) problem(path string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.problems = append(c.problems, Problem{Path: path, Err: err})
}

// SettingsFor returns the settings for files in dir, with the overrides
// applied. A broken configuration file is reported once; its folder gets
// the defaults.
func (c *Checker) SettingsFor(dir string) *analysis.Settings {
	c.mu.Lock()
	s, ok := c.settings[dir]
	c.mu.Unlock()
	if ok {
		return s
	}
	s, err := analysis.FindSettings(dir)
	var ce *analysis.ConfigError
	if errors.As(err, &ce) {
		c.mu.Lock()
		first := !c.reported[ce.File]
		c.reported[ce.File] = true
		c.mu.Unlock()
		if first {
			c.problem(ce.File, fmt.Errorf("invalid configuration, using the defaults: %w", unwrapFile(ce)))
		}
	} else if err != nil {
		c.problem(dir, err)
	}
	if c.Options.Overrides != nil {
		if o, err := s.WithOverrides(c.Options.Overrides); err == nil {
			s = o
		}
	}
	c.mu.Lock()
	c.settings[dir] = s
	c.mu.Unlock()
	return s
}

// unwrapFile drops the file name from a ConfigError (the Problem names it).
func unwrapFile(ce *analysis.ConfigError) error {
	msg := ce.Error()
	return errors.New(strings.TrimPrefix(msg, ce.File+": "))
}

// run analyses one file. A panic outside the rules (whose own failures
// the runner reports) is a bug in the parser's mirror or the model: it
// becomes that file's error, and the other files are still checked.
func (c *Checker) run(ctx context.Context, path string, src []byte, settings *analysis.Settings) (res *analysis.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("internal error, please report it: %v", p)
		}
	}()
	return c.Runner.Run(ctx, path, src, settings)
}

func (c *Checker) checkFile(ctx context.Context, path string) FileResult {
	fr := FileResult{Path: path, Settings: c.SettingsFor(filepath.Dir(absPath(path)))}
	src, err := analysis.ReadFile(path)
	if err != nil {
		fr.Err = describe(err)
		return fr
	}
	if err := analysis.CheckSource(src); err != nil {
		fr.Err = err
		return fr
	}
	if !WorthAnalysing(c.indexOf(path), path, src) {
		return fr
	}
	if len(src) >= largeFile {
		// One large file at a time: the peak is the largest file's need,
		// not the sum of the largest few.
		c.large.Lock()
		defer c.large.Unlock()
	}
	fr.Result, fr.Err = c.run(ctx, path, src, fr.Settings)
	if fr.Result != nil {
		if ix := c.indexOf(path); ix != nil {
			ix.Record(fr.Result.Model())
		}
		fr.Result.Compact()
	}
	if len(src) >= largeFile {
		// Its model and tree took a hundred times its size: give that back
		// before the next large file, rather than let the allocators keep
		// the peak of every one.
		analysis.ReleaseMemory()
	}
	return fr
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// discover lists the files to check: named files as they are, and the
// *.py files under named folders, minus .gitignore'd and excluded ones.
func (c *Checker) discover(paths []string) []string {
	var files []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			files = append(files, p)
		}
	}
	for _, root := range paths {
		info, err := os.Stat(root)
		if err != nil {
			c.problem(root, describe(err))
			continue
		}
		if !info.IsDir() {
			add(root) // a file named on the command line is checked as it is
			continue
		}
		c.walk(root, gitignoresAbove(absPath(root)), map[string]bool{}, add)
	}
	sort.Strings(files)
	return files
}

// walk visits dir, following symlinked folders once each. visiting holds
// the real paths of the folders on the current path, to detect loops.
func (c *Checker) walk(dir string, ignores []*gitignore, visiting map[string]bool, add func(string)) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		c.problem(dir, describe(err))
		return
	}
	if visiting[real] {
		// A link back to a folder being walked: its files are checked
		// there already.
		c.mu.Lock()
		c.problems = append(c.problems, Problem{Path: dir, Err: fmt.Errorf("links back to %s, which is being checked; skipped", real), Note: true})
		c.mu.Unlock()
		return
	}
	visiting[real] = true
	defer delete(visiting, real)
	if g := loadGitignore(dir); g != nil {
		ignores = append(ignores[:len(ignores):len(ignores)], g)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		c.problem(dir, describe(err))
		return
	}
	settings := c.SettingsFor(absPath(dir))
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		isDir, isFile := e.IsDir(), e.Type().IsRegular()
		if e.Type()&fs.ModeSymlink != 0 {
			info, err := os.Stat(path)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) && strings.HasSuffix(e.Name(), ".py") {
					target, _ := os.Readlink(path)
					c.problem(path, fmt.Errorf("broken symbolic link (to %s), skipped", target))
				} else if strings.HasSuffix(e.Name(), ".py") || isLoop(err) {
					c.problem(path, describe(err))
				}
				continue
			}
			isDir, isFile = info.IsDir(), info.Mode().IsRegular()
		}
		if isDir && defaultExcludes[e.Name()] || ignoredBy(ignores, absPath(path), isDir) || settings.Excluded(absPath(path)) {
			continue
		}
		switch {
		case isDir:
			c.walk(path, ignores, visiting, add)
		case strings.HasSuffix(e.Name(), ".py") && isFile:
			add(path)
		case strings.HasSuffix(e.Name(), ".py"):
			c.problem(path, errors.New("not a regular file, skipped"))
		}
	}
}

// gitignoresAbove loads the .gitignore files of dir's ancestors, from the
// enclosing git repository's root down; none outside a repository.
func gitignoresAbove(dir string) []*gitignore {
	var ancestors []string // nearest first, ending at the repository root
	for d := dir; !exists(filepath.Join(d, ".git")); {
		parent := filepath.Dir(d)
		if parent == d {
			return nil // not inside a repository
		}
		ancestors = append(ancestors, parent)
		d = parent
	}
	var out []*gitignore
	for i := len(ancestors) - 1; i >= 0; i-- {
		if g := loadGitignore(ancestors[i]); g != nil {
			out = append(out, g)
		}
	}
	return out
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func isLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }

// describe turns an OS error into a short sentence.
func describe(err error) error {
	switch {
	case isLoop(err):
		return errors.New("symbolic link loop, skipped")
	case errors.Is(err, fs.ErrNotExist):
		return errors.New("no such file or directory")
	case errors.Is(err, fs.ErrPermission):
		return errors.New("permission denied")
	}
	return err
}

// indexOf is the index a checked file belongs to, or nil.
func (c *Checker) indexOf(path string) *Index {
	if c.projects == nil {
		return nil
	}
	return c.projects.For(path)
}
