package workspace

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/semantic"
)

// This file is the workspace index: for each Python file of a project, what
// other files need to know of it (its imports, top-level classes with their
// bases, top-level functions, and the DataLoaders it builds), resolved by
// Python's import rules for the project's own modules. A file's findings
// may depend on other files through it: a Dataset whose base class is in
// another module, or one that another module's DataLoader runs in workers.

// fileSummary is what the index keeps of one file.
type fileSummary struct {
	Path    string // absolute
	Module  string // dotted, from the import root it is under
	Package bool   // an __init__.py
	Imports map[string]string
	// Classes are the top-level classes' bases, qualified as the file sees
	// them (a base defined in the same file is module.Name).
	Classes   map[string][]string
	Functions map[string]bool // top-level functions
	Loaders   []loaderSummary
	// Calls are the calls of the project's functions through imported
	// names, by qualified name as the file sees them: true when every one
	// runs with autograd off as the file alone tells (see
	// CallersUnderNoGrad).
	Calls map[string]bool
	// Methods are, for the method names asked about
	// (MethodCallersUnderNoGrad), the file's calls of a method of that
	// name through any receiver: true when every one runs with autograd
	// off as the file alone tells. methodsKnown is how many names had
	// been asked when the summary was made: it says nothing of later ones.
	Methods      map[string]bool
	methodsKnown int
	// facts are the summaries of the functions other files asked about
	// (see FunctionFacts), for this version of the file; those asked before
	// the summary was made are part of the digest, so a change to one
	// re-analyses the files that call it. With everyFact, every function's
	// are here but a top-level function's that are all false.
	facts map[string]semantic.FunctionFacts
	// noFacts are the functions other files asked about, after this
	// summary was made, that it has no facts of (as factless says for
	// those asked before): answered without the file's model, as facts
	// are. Guarded by the index's lock.
	noFacts map[string]bool
	// factless are the functions other files asked about that this
	// version has no facts of (a method that is no longer a meter's
	// update, a function gone): part of the digest, so that losing the
	// facts a file's findings used re-analyses it too.
	factless []string
	// everyFact says that facts holds every function's of the file: one
	// not there has none (see Index.KeepEveryFact).
	everyFact bool
	digest    string
}

// loaderSummary is a DataLoader with what it runs in workers, qualified as
// its file sees them.
type loaderSummary struct {
	semantic.RemoteLoader
	Dataset, Collate string
}

// Index is the model of one project: a folder and its import roots (the
// folder, and its src/ when there is one).
type Index struct {
	Root  string // absolute
	roots []string

	mu      sync.RWMutex
	files   map[string]*fileSummary                       // indexed, by absolute path
	open    map[string]*semantic.File                     // open buffers' models (the server's)
	opening map[string]bool                               // opened, first model not in yet (see Opening)
	missing map[string]bool                               // paths looked for and not found
	closed  modelCache                                    // models of files that are not open
	changes uint64                                        // summary changes, all files
	changed map[string]uint64                             // summary changes, by file
	settled map[string]uint64                             // answers withheld and now known, by asking file (see Projects.InBackground)
	resolve map[[2]string]resolved                        // Resolve's answers at this generation
	loaders map[string]map[string][]semantic.RemoteLoader // LoadersUsing's answers
	// stores counts the changes to files, offsets included. Resolve and
	// LoadersUsing work out an answer without the lock, and keep it only
	// when no summary was stored meanwhile: one worked out from the
	// summaries before a change would otherwise stand for the new ones.
	stores uint64
	// asked are the functions other files asked FunctionFacts of, by file:
	// each new summary of the file summarises them too.
	asked map[string]map[string]bool
	// parses counts the files parsed (to be summarised, or for the models
	// kept), parsing the nanoseconds that took: --trace-phases reports
	// them (see Projects.Parsed).
	parses, parsing atomic.Int64
	// known are the files the index was built over (the server's), or all
	// the folder's for check: where CallersUnderNoGrad looks for the
	// callers of a function or method, once a name (scans, see scanOnce).
	known []string
	scans map[string]*scan
	// building is closed when the last Build ends (see awaitBuild).
	building chan struct{}
	// methods are the method names MethodCallersUnderNoGrad was asked
	// about, in order (each summary lists the file's calls of them), and
	// methodClean the files each one's scan read and found not mentioning
	// it.
	methods     []string
	methodClean map[string]map[string]bool
	// modules remembers which top-level module names are the project's,
	// seen from a folder (see projectModule); dropped with each change.
	modules map[[2]string]bool
	// everyFact: the files read from disk off the analyses' path keep the
	// facts of all their functions (see KeepEveryFact).
	everyFact bool
	// reading cancels the indexing's reads of files under way, for Yield.
	reading struct {
		sync.Mutex
		cancels map[int]context.CancelFunc
		next    int
	}
}

type resolved struct {
	path, name string
	ok         bool
}

// scan is one pass over the folder's files for a name (see scanOnce).
type scan struct {
	once sync.Once
	done atomic.Bool // the pass is over and what it summarised is stored
}

// NewIndex returns an empty index of the project in root.
func NewIndex(root string) *Index {
	root = absPath(root)
	ix := &Index{
		Root: root, roots: []string{root},
		files: map[string]*fileSummary{}, open: map[string]*semantic.File{}, missing: map[string]bool{},
		changed: map[string]uint64{}, settled: map[string]uint64{}, opening: map[string]bool{},
	}
	if st, err := os.Stat(filepath.Join(root, "src")); err == nil && st.IsDir() {
		ix.roots = []string{filepath.Join(root, "src"), root}
	}
	return ix
}

// KeepEveryFact has the files the index reads from disk in the background
// (Build, IndexRest, the scans for callers, Refresh), and the buffers
// closed as they are on disk (Close), keep the facts of all their
// functions, and not only of those asked about (see FunctionFacts).
// An open buffer's analysis asks about the functions of the modules it
// calls: for transformers' trainer.py, 9 modules parsed while the first
// diagnostics waited (four times the file's own parse), and about 20 more
// at the first pause. What a server does; `check`, which analyses every
// file anyway, ran no faster with it.
func (ix *Index) KeepEveryFact() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.everyFact = true
}

// Contains reports whether path is in the index's folder.
func (ix *Index) Contains(path string) bool {
	return within(ix.Root, absPath(path))
}

// within reports whether the absolute, clean path abs is the folder root
// or inside it.
func within(root, abs string) bool {
	if abs == root {
		return true
	}
	if strings.HasSuffix(root, string(filepath.Separator)) { // the file system's root
		return strings.HasPrefix(abs, root)
	}
	return strings.HasPrefix(abs, root+string(filepath.Separator))
}

// Build indexes the given files (absolute or relative paths) that build
// DataLoaders (see refreshIfLoader), on every core but one. It runs while
// the user opens and edits files: on two cores, indexing a folder with a
// 50,000-line file on both made the edits of its first seconds cost 15 to
// 20 ms rather than 3. progress, when not nil, is called after each file.
// It stops early, with ctx's error, when ctx is done, and returns how many
// files it went through.
func (ix *Index) Build(ctx context.Context, paths []string, progress func(done, total int)) (int, error) {
	built := make(chan struct{})
	defer close(built)
	ix.mu.Lock()
	ix.building = built
	ix.mu.Unlock()
	ix.SetFiles(paths)
	return ix.eachOnWorkers(ctx, paths, func(read context.Context, p string) bool { return refreshOrSkip(ix, read, p) }, progress)
}

// eachOnWorkers calls do with each path, on every core but one, until ctx
// is done, and progress (when not nil) after each; it returns how many
// paths it went through, and ctx's error when it stopped early. do reads
// the file with the context it is given, which Yield may cancel: it then
// reports that it was interrupted, having kept nothing, and is called
// again for the same path once progress has returned (the server's waits
// for a quiet moment), at most maxYields times.
func (ix *Index) eachOnWorkers(ctx context.Context, paths []string, do func(read context.Context, path string) (interrupted bool), progress func(done, total int)) (int, error) {
	var done atomic.Int64
	next := make(chan string)
	var wg sync.WaitGroup
	for range max(1, runtime.NumCPU()-1) {
		wg.Go(func() {
			for p := range next {
				for yields := 0; ; yields++ {
					read, release := ctx, func() {}
					if yields < maxYields {
						read, release = ix.interruptible(ctx)
					}
					interrupted := do(read, p)
					release()
					if !interrupted || ctx.Err() != nil {
						break
					}
					if progress != nil {
						progress(int(done.Load()), len(paths))
					}
				}
				if n := done.Add(1); progress != nil {
					progress(int(n), len(paths))
				}
			}
		})
	}
	var err error
	for _, p := range paths {
		if err = ctx.Err(); err != nil {
			break
		}
		next <- p
	}
	close(next)
	wg.Wait()
	return int(done.Load()), err
}

// refreshOrSkip is refreshIfLoader for the build's workers, which nothing
// else recovers: a file the model cannot take is left out, to be read when
// an import reaches it, under the analysis's recovery.
func refreshOrSkip(ix *Index, read context.Context, path string) (interrupted bool) {
	defer func() { _ = recover() }()
	return ix.refreshIfLoader(read, path)
}

// maxYields is how many times Yield may interrupt the indexing's read of
// one file: past it the file is read through, so that a client opening
// buffer after buffer cannot keep a large file from ever being indexed.
const maxYields = 3

// interruptibleSource is the smallest file whose parse Yield interrupts.
// A smaller one is parsed in a few milliseconds, less than a parse that
// can be cancelled costs: the binding then watches the context from a
// goroutine, and the parser cannot be used again (see pyast.parseFrom).
const interruptibleSource = 64 << 10

// Yield interrupts the parses of large files (interruptibleSource) that
// the indexing has under way: each file is read again, whole, once the
// indexing's progress callback returns. The server calls it before it
// parses a buffer being opened, which then has every core: on two cores
// an open during indexing took 1.4-1.7 times its parse, against about
// 1.1 once the folder was indexed.
func (ix *Index) Yield() {
	ix.reading.Lock()
	defer ix.reading.Unlock()
	for _, cancel := range ix.reading.cancels {
		cancel()
	}
}

// interruptible returns a context for the indexing's read of one file,
// cancelled with ctx or by Yield, and the function that releases it.
func (ix *Index) interruptible(ctx context.Context) (context.Context, func()) {
	read, cancel := context.WithCancel(ctx)
	ix.reading.Lock()
	defer ix.reading.Unlock()
	if ix.reading.cancels == nil {
		ix.reading.cancels = map[int]context.CancelFunc{}
	}
	id := ix.reading.next
	ix.reading.next++
	ix.reading.cancels[id] = cancel
	return read, func() {
		ix.reading.Lock()
		delete(ix.reading.cancels, id)
		ix.reading.Unlock()
		cancel()
	}
}

// awaitBuild waits for the build of the index under way, if one is.
func (ix *Index) awaitBuild() {
	ix.mu.RLock()
	building := ix.building
	ix.mu.RUnlock()
	if building != nil {
		<-building
	}
}

// SetFiles tells the index the files of its folder, where the callers of
// its functions are looked for (see CallersUnderNoGrad); files created
// later are summarised when they are refreshed.
func (ix *Index) SetFiles(paths []string) {
	known := make([]string, len(paths))
	for i, p := range paths {
		known[i] = absPath(p)
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.known = known
}

// Files lists the Python files of the index's folder, as `check` finds
// them (.gitignore and the default excludes apply).
func (ix *Index) Files() []string {
	c := &Checker{settings: map[string]*analysis.Settings{}, reported: map[string]bool{}}
	return c.discover([]string{ix.Root})
}

// Refresh re-reads a file that is not open from disk (after it changed,
// was created or was deleted); an open buffer's summary comes from its
// model (see SetOpen).
func (ix *Index) Refresh(path string) {
	path = absPath(path)
	ix.mu.RLock()
	_, isOpen := ix.open[path]
	ix.mu.RUnlock()
	if isOpen {
		return
	}
	src, ok := pythonSource(path)
	if !ok {
		ix.refreshFrom(path, nil)
		return
	}
	ix.refreshSource(context.Background(), path, src)
}

// refreshFrom stores s, the summary of path as it is on disk (nil: gone,
// or not Python vramlint reads), unless the file is open as a buffer whose
// model the index has: its callers look before they read the file, but a
// buffer may be opened and analysed while they do (reopened while Close's
// reread runs, say), and its summary is then the one that counts. A file
// being opened, whose first model is not in yet, takes the summary: its
// own first analysis asks for it (see summary).
func (ix *Index) refreshFrom(path string, s *fileSummary) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if _, isOpen := ix.open[path]; isOpen {
		return
	}
	if s == nil {
		if ix.files[path] != nil {
			delete(ix.files, path)
			ix.bump(path)
		}
		ix.missing[path] = true
		return
	}
	delete(ix.missing, path)
	ix.store(s)
}

// refreshIfLoader indexes a file now when it builds a DataLoader: those
// are what no import leads to (see LoadersUsing). The others are indexed
// when an import reaches them. It reports whether read was cancelled
// before the file was (see refreshSource).
func (ix *Index) refreshIfLoader(read context.Context, path string) (interrupted bool) {
	path = absPath(path)
	if ix.openOrOpening(path) {
		return false
	}
	src, err := analysis.ReadFile(path)
	if err != nil || !bytes.Contains(src, []byte("DataLoader")) {
		return false
	}
	return ix.refreshSource(read, path, src)
}

// refreshSource summarises and keeps a file's text read from disk, with
// the facts of every function when the index keeps them (KeepEveryFact).
// The facts come after the summary is stored: what they read of other
// files (the bases of a class) may ask for this file's summary. When read
// is cancelled before the file is parsed, nothing is stored and it
// reports that it was interrupted.
func (ix *Index) refreshSource(read context.Context, path string, src []byte) (interrupted bool) {
	ix.mu.RLock()
	every := ix.everyFact
	ix.mu.RUnlock()
	// With every fact kept, nothing asks for the model again: it does not
	// take the place of a model an open buffer's questions read.
	s, model, interrupted := ix.summarizeSourceModel(read, path, src, !every)
	if interrupted {
		return true
	}
	ix.refreshFrom(path, s)
	if every {
		ix.addEveryFact(path, s, model)
	}
	return false
}

// addEveryFactLater is addEveryFact on a goroutine of its own: a panic
// leaves the summary without them.
func (ix *Index) addEveryFactLater(path string, s *fileSummary, model *semantic.File) {
	defer func() { _ = recover() }()
	ix.addEveryFact(path, s, model)
}

// addEveryFact gives s, path's summary made from model, the facts of all
// the file's functions, unless a newer summary came meanwhile.
func (ix *Index) addEveryFact(path string, s *fileSummary, model *semantic.File) {
	if s == nil || model == nil {
		return
	}
	facts := map[string]semantic.FunctionFacts{}
	model.EveryFunctionFacts(func(name string, f semantic.FunctionFacts) {
		if f != (semantic.FunctionFacts{}) || strings.Contains(name, ".") {
			facts[strings.Clone(name)] = f // a method's are kept: it may have none
		}
	})
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.files[path] == s {
		s.facts, s.everyFact = facts, true
	}
}

// IndexRest summarises the given files that Build left out, or that were
// read without the facts of their functions (see KeepEveryFact), as Build
// does (progress likewise): after Build, so that the files that build
// DataLoaders, which the scans for callers wait for, are read first. It
// stops, without an error, once it has read maxSource bytes: what the
// index keeps grows with them (about a quarter of their size), and the
// files left are read when an import reaches them.
func (ix *Index) IndexRest(ctx context.Context, paths []string, maxSource int64, progress func(done, total int)) (int, error) {
	inBudget, overBudget := context.WithCancel(ctx)
	defer overBudget()
	var readBytes atomic.Int64
	n, err := ix.eachOnWorkers(inBudget, paths, func(read context.Context, path string) (interrupted bool) {
		path = absPath(path)
		if ix.openOrOpening(path) {
			return false
		}
		ix.mu.RLock()
		s := ix.files[path]
		done := s != nil && s.everyFact // addEveryFact sets it under the lock
		ix.mu.RUnlock()
		if done {
			return false
		}
		src, err := analysis.ReadFile(path)
		if err != nil || analysis.CheckSource(src) != nil {
			return false
		}
		if readBytes.Add(int64(len(src))) > maxSource {
			overBudget()
			return false
		}
		defer func() { _ = recover() }() // left to be read when an import reaches it
		if s == nil {
			if interrupted = ix.refreshSource(read, path, src); interrupted {
				readBytes.Add(-int64(len(src))) // counted when it is read again
			}
			return interrupted
		}
		// Summarised when an import reached it: stored again, its digest
		// might now list facts asked since, and every open buffer's
		// answers about other files would be worked out again.
		ix.addEveryFact(path, s, ix.closed.peek(path, src, func() *semantic.File { return ix.parse(context.Background(), path, src) }))
		return false
	}, progress)
	if ctx.Err() == nil {
		err = nil // the budget stopped it
	}
	return n, err
}

// openOrOpening reports whether the file at path (absolute) is an open
// buffer, or one being opened, whose summary comes from its model.
func (ix *Index) openOrOpening(path string) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	_, isOpen := ix.open[path]
	return isOpen || ix.opening[path]
}

// Opening tells the index that the file at path was just opened and will
// be analysed as a buffer: its summary comes with the buffer's first model
// (SetOpen), so a build of the index that has not reached the file yet
// does not read and parse it too (in a large folder, files are opened
// while it runs; a 50,000-line file is a third of a second on the cores
// the open needs). An import that reaches the file before then still
// reads it from disk (Refresh). Close undoes it.
func (ix *Index) Opening(path string) {
	path = absPath(path)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if _, isOpen := ix.open[path]; !isOpen {
		ix.opening[path] = true
	}
}

// Record keeps the summary of a model just analysed (by `check`), without
// keeping the model.
func (ix *Index) Record(f *semantic.File) { ix.record(f, false) }

// SetOpen records the model of an open buffer's latest version: its
// summary replaces the file's, and Model returns it.
func (ix *Index) SetOpen(f *semantic.File) { ix.SetOpenSummary(ix.SummarizeOpen(f)) }

// OpenSummary is what the index learns of a version of an open buffer:
// SummarizeOpen makes it (the slow part, which needs no lock of the
// caller's) and SetOpenSummary keeps it.
type OpenSummary struct {
	Index   *Index // that made it
	model   *semantic.File
	summary *fileSummary
}

// SummarizeOpen summarises a version of an open buffer for SetOpenSummary.
func (ix *Index) SummarizeOpen(f *semantic.File) *OpenSummary {
	return &OpenSummary{Index: ix, model: f, summary: ix.summarize(absPath(f.Path), f)}
}

// SetOpenSummary is SetOpen with the summary made beforehand.
func (ix *Index) SetOpenSummary(o *OpenSummary) { ix.keep(o.model, o.summary, true) }

func (ix *Index) record(f *semantic.File, open bool) {
	ix.keep(f, ix.summarize(absPath(f.Path), f), open)
}

func (ix *Index) keep(f *semantic.File, s *fileSummary, open bool) {
	path := absPath(f.Path)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if open {
		ix.open[path] = f
		delete(ix.opening, path)
	}
	delete(ix.missing, path)
	ix.store(s)
}

// Close forgets an open buffer: the file on disk is what counts again.
// When the file holds the text whose summary the index keeps (the buffer
// was saved, or never changed), that summary is the file's: it is not
// parsed again (and, with KeepEveryFact, gets every function's facts from
// the buffer's model). Closing fifty 10,000-line files took seconds
// without this.
//
// When it does not (a buffer closed with changes it did not save, or one
// never analysed), the file must be read from disk again. Until it has,
// the buffer's last summary stands for the file.
//
// Close returns that work, or the facts' gathering, as left, for the
// caller to run off its own locks (the server closes a buffer with its
// lock held, and a 50,000-line file's parse takes about half a second);
// nil when nothing is left. Either holds as much memory as an open of the
// file while it runs (the buffer's model, or a parse): the server gives
// memory back after it.
//
// Closing the project's last open buffer drops the models of other files
// kept for the buffers' questions (see modelCache): up to about 20 MiB
// that only an open buffer's analysis reads.
func (ix *Index) Close(path string) (left func()) {
	path = absPath(path)
	ix.mu.Lock()
	model := ix.open[path]
	delete(ix.open, path)
	delete(ix.opening, path)
	last := len(ix.open) == 0 && len(ix.opening) == 0
	ix.mu.Unlock()
	if last {
		defer ix.closed.forget()
	}
	if model != nil {
		if src, err := analysis.ReadFile(path); err == nil && bytes.Equal(src, model.Source()) {
			ix.mu.RLock()
			summary := ix.files[path]
			missing := ix.everyFact && summary != nil && !summary.everyFact // set under the lock
			ix.mu.RUnlock()
			if missing {
				// The buffer's summary has the facts asked of it; the
				// others, from the model at hand, spare a parse when a
				// file opened later asks.
				return func() { ix.addEveryFactLater(path, summary, model) }
			}
			return nil
		}
	}
	return func() { ix.Refresh(path) }
}

// Parses is how many files the index parsed (for summaries or models):
// what its work cost, for tests and benchmarks.
func (ix *Index) Parses() int64 { return ix.parses.Load() }

// EveryFactKept reports whether the summary of the file at path holds the
// facts of all its functions (see KeepEveryFact).
func (ix *Index) EveryFactKept(path string) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	s := ix.files[absPath(path)]
	return s != nil && s.everyFact
}

// store keeps s, counting a change when it tells other files something
// new: not when only its DataLoaders' offsets moved (typing above them),
// which would re-analyse every dependent file on every keystroke. Called
// with mu held.
func (ix *Index) store(s *fileSummary) {
	old := ix.files[s.Path]
	ix.files[s.Path] = s
	ix.stores++
	ix.loaders = nil // their offsets are the summaries'
	if old == nil || old.digest != s.digest {
		ix.bump(s.Path)
	}
}

func (ix *Index) bump(path string) {
	ix.changes++
	ix.stores++
	ix.changed[path]++
	ix.resolve, ix.loaders, ix.modules = nil, nil, nil
}

// Changes counts the summary changes so far: the server compares it before
// and after an edit to know whether other files' findings may have changed.
func (ix *Index) Changes() uint64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.changes
}

// Generation implements semantic.Project. It also moves on for a file
// whose withheld answer became known (see settleAnswers): every term only
// grows, so no generation comes back.
func (ix *Index) Generation(path string) uint64 {
	path = absPath(path)
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.changes - ix.changed[path] + ix.settled[path]
}

// Module implements semantic.Project: the dotted name of path under the
// first import root that holds it.
func (ix *Index) Module(path string) (string, bool) {
	path = absPath(path)
	for _, root := range ix.roots {
		rel, err := filepath.Rel(root, path)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		rel = strings.TrimSuffix(filepath.ToSlash(rel), ".py")
		pkg := false
		if rel == "__init__" || strings.HasSuffix(rel, "/__init__") {
			rel, pkg = strings.TrimSuffix(strings.TrimSuffix(rel, "__init__"), "/"), true
		}
		if rel == "" || strings.Contains(rel, ".") {
			return "", false // the root's own __init__.py, or a name no import can spell
		}
		return strings.ReplaceAll(rel, "/", "."), pkg
	}
	return "", false
}

// summary returns the summary of path, indexing it from disk when it was
// not (a module imported from a file outside what was built). Called
// without mu held.
func (ix *Index) summary(path string) *fileSummary {
	ix.mu.RLock()
	s, missing := ix.files[path], ix.missing[path]
	ix.mu.RUnlock()
	if s != nil || missing || !ix.Contains(path) {
		return s
	}
	// Without every function's facts: asked on the analyses' path, which
	// needs a few of them.
	ix.refreshFrom(path, ix.summarizeFile(path))
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.files[path]
}

// moduleFile finds the file of a dotted module name from the file at from:
// next to it when from is a script (its folder is no package, so Python
// puts that folder first on sys.path), then under each import root.
func (ix *Index) moduleFile(from, module string) *fileSummary {
	rel := filepath.FromSlash(strings.ReplaceAll(module, ".", "/"))
	for _, base := range ix.importBases(from) {
		for _, candidate := range []string{filepath.Join(base, rel+".py"), filepath.Join(base, rel, "__init__.py")} {
			if s := ix.summary(candidate); s != nil {
				return s
			}
		}
	}
	return nil
}

// importBases are the folders an import in the file at from is looked for
// in, first to last.
func (ix *Index) importBases(from string) []string {
	var bases []string
	dir := filepath.Dir(from)
	if !exists(filepath.Join(dir, "__init__.py")) {
		bases = append(bases, dir)
	} else {
		// In a package: the folder above its top package is on sys.path
		// wherever it is installed or run from.
		top := dir
		for exists(filepath.Join(filepath.Dir(top), "__init__.py")) && filepath.Dir(top) != top {
			top = filepath.Dir(top)
		}
		bases = append(bases, filepath.Dir(top))
	}
	return append(bases, ix.roots...)
}

// Resolve implements semantic.Project.
func (ix *Index) Resolve(from, qualified string) (string, string, bool) {
	from = absPath(from)
	key := [2]string{from, qualified}
	ix.mu.RLock()
	r, ok := ix.resolve[key]
	at := ix.stores
	ix.mu.RUnlock()
	if ok {
		return r.path, r.name, r.ok
	}
	r.path, r.name, r.ok = ix.resolveName(from, qualified, 0)
	// Copies: qualified may be a view of the asking file's text.
	r.name = strings.Clone(r.name)
	key = [2]string{strings.Clone(from), strings.Clone(qualified)}
	ix.mu.Lock()
	if ix.stores == at {
		if ix.resolve == nil {
			ix.resolve = map[[2]string]resolved{}
		}
		ix.resolve[key] = r
	}
	ix.mu.Unlock()
	return r.path, r.name, r.ok
}

// resolveName splits qualified into the longest module prefix the project
// has and a name defined or re-exported there.
func (ix *Index) resolveName(from, qualified string, depth int) (string, string, bool) {
	if depth > 16 { // a circle of re-exports
		return "", "", false
	}
	for i := strings.LastIndexByte(qualified, '.'); i > 0; i = strings.LastIndexByte(qualified[:i], '.') {
		m := ix.moduleFile(from, qualified[:i])
		if m == nil {
			continue
		}
		name := qualified[i+1:]
		if strings.Contains(name, ".") {
			return "", "", false // an attribute of a class or of a submodule the project lacks
		}
		if m.Classes[name] != nil || m.Functions[name] {
			return m.Path, name, true
		}
		if target, ok := m.Imports[name]; ok {
			return ix.resolveName(m.Path, target, depth+1)
		}
		return "", "", false // a submodule, or a name the module does not define
	}
	return "", "", false
}

// ClassBases implements semantic.Project.
func (ix *Index) ClassBases(path, name string) ([]string, bool) {
	s := ix.summary(absPath(path))
	if s == nil {
		return nil, false
	}
	bases, ok := s.Classes[name]
	return bases, ok
}

// LoadersUsing implements semantic.Project. The answers for every file
// are found in one pass over the DataLoaders, once per generation.
func (ix *Index) LoadersUsing(path string) map[string][]semantic.RemoteLoader {
	path = absPath(path)
	ix.mu.RLock()
	targets, at := ix.loaders, ix.stores
	var all []*fileSummary
	if targets == nil {
		for _, s := range ix.files {
			if len(s.Loaders) > 0 {
				all = append(all, s)
			}
		}
	}
	ix.mu.RUnlock()
	if targets != nil {
		return targets[path]
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Path < all[j].Path })
	targets = map[string]map[string][]semantic.RemoteLoader{}
	for _, s := range all {
		for _, l := range s.Loaders {
			seen := map[[2]string]bool{}
			for _, q := range []string{l.Dataset, l.Collate} {
				if q == "" {
					continue
				}
				p, n, ok := ix.Resolve(s.Path, q)
				if !ok || p == s.Path || seen[[2]string{p, n}] {
					continue // not the project's, or the file's own: it sees its loaders itself
				}
				seen[[2]string{p, n}] = true
				if targets[p] == nil {
					targets[p] = map[string][]semantic.RemoteLoader{}
				}
				targets[p][n] = append(targets[p][n], l.RemoteLoader)
			}
		}
	}
	ix.mu.Lock()
	if ix.loaders == nil && ix.stores == at {
		ix.loaders = targets
	}
	ix.mu.Unlock()
	return targets[path]
}

// FunctionFacts implements semantic.Project. The first question about a
// function summarises it in its file's model (the open buffer's, or one
// read from disk); the answer is kept with the file's summary, and every
// later summary of that file summarises it again. A file the index read
// in the background while keeping every fact (KeepEveryFact) answers from
// its summary alone.
func (ix *Index) FunctionFacts(from, qualified string) (semantic.FunctionFacts, bool) {
	path, name, ok := ix.Resolve(from, qualified)
	if !ok {
		// A method: `pkg.model.Net.objective`, Net a class of the project.
		i := strings.LastIndexByte(qualified, '.')
		if i < 0 {
			return semantic.FunctionFacts{}, false
		}
		var class string
		if path, class, ok = ix.Resolve(from, qualified[:i]); !ok {
			return semantic.FunctionFacts{}, false
		}
		name = class + "." + qualified[i+1:]
	}
	name = strings.Clone(name) // kept in asked: not a view of the asking file's text
	s := ix.summary(path)
	if s == nil {
		return semantic.FunctionFacts{}, false
	}
	if class, _, isMethod := strings.Cut(name, "."); isMethod && s.Classes[class] == nil || !isMethod && !s.Functions[name] {
		return semantic.FunctionFacts{}, false
	}
	ix.mu.Lock()
	if ix.asked == nil {
		ix.asked = map[string]map[string]bool{}
	}
	if ix.asked[path] == nil {
		ix.asked[path] = map[string]bool{}
	}
	ix.asked[path][name] = true
	facts, known := s.facts[name]
	// A top-level function has facts; with every fact kept, those that are
	// all false are left out of the map (3,231 of transformers' 18,040).
	known = known || s.everyFact && !strings.Contains(name, ".")
	_, factless := slices.BinarySearch(s.factless, name)
	factless = factless || s.noFacts[name] || s.everyFact
	ix.mu.Unlock()
	if known || factless {
		return facts, known
	}
	m := ix.Model(path)
	if m == nil {
		return semantic.FunctionFacts{}, false
	}
	facts, ok = m.FactsOf(name)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	// Kept with the summary it was computed for, unless a newer one came
	// meanwhile; not part of its digest until the file's next summary,
	// which would change nothing else. So is the lack of facts: a method
	// of a class that is no model (trainer.py's callback handler) was
	// asked about again on every version that judged its call, and its
	// file parsed again whenever its model had left the few kept.
	switch cur := ix.files[path]; {
	case cur != s: // a newer summary came meanwhile
	case ok:
		if cur.facts == nil {
			cur.facts = map[string]semantic.FunctionFacts{}
		}
		cur.facts[name] = facts
	default:
		if cur.noFacts == nil {
			cur.noFacts = map[string]bool{}
		}
		cur.noFacts[name] = true
	}
	return facts, ok
}

// Model implements semantic.Project: the open buffer's model, or one built
// from the file on disk (kept while the file stays the same).
func (ix *Index) Model(path string) *semantic.File {
	path = absPath(path)
	ix.mu.RLock()
	f := ix.open[path]
	ix.mu.RUnlock()
	if f != nil {
		return f
	}
	src, err := analysis.ReadFile(path)
	if err != nil || analysis.CheckSource(src) != nil {
		return nil
	}
	return ix.closed.get(path, src, func() *semantic.File { return ix.parse(context.Background(), path, src) })
}

// parse builds the model of a file's text, placed in the project; nil when
// it cannot be parsed.
func (ix *Index) parse(ctx context.Context, path string, src []byte) *semantic.File {
	ix.parses.Add(1)
	start := time.Now()
	defer func() { ix.parsing.Add(int64(time.Since(start))) }()
	if len(src) < interruptibleSource {
		ctx = context.WithoutCancel(ctx)
	}
	tree, err := pyast.Parse(ctx, src)
	if err != nil || ctx.Err() != nil {
		return nil
	}
	return semantic.NewModelFrom(nil, semantic.ModuleInfo{Path: path, Project: ix}, src, tree)
}

// summarizeFile reads, parses and summarises a file; nil when it cannot.
func (ix *Index) summarizeFile(path string) *fileSummary {
	src, ok := pythonSource(path)
	if !ok {
		return nil
	}
	return ix.summarizeSource(path, src)
}

// pythonSource reads the file at path; ok is false when it is no Python
// file or cannot be read.
func pythonSource(path string) (src []byte, ok bool) {
	if !strings.HasSuffix(path, ".py") {
		return nil, false
	}
	src, err := analysis.ReadFile(path)
	return src, err == nil
}

// summarizeSource summarises a file's text; nil when vramlint does not
// read it (binary, not UTF-8, too large, unparsable).
func (ix *Index) summarizeSource(path string, src []byte) *fileSummary {
	s, _, _ := ix.summarizeSourceModel(context.Background(), path, src, true)
	return s
}

// summarizeSourceModel is summarizeSource that also returns the model it
// summarised (nil for a file without imports, classes or functions),
// kept with the models of other files when cache is set. interrupted
// reports that read was cancelled before the parse was done (see Yield).
func (ix *Index) summarizeSourceModel(read context.Context, path string, src []byte, cache bool) (s *fileSummary, f *semantic.File, interrupted bool) {
	if analysis.CheckSource(src) != nil {
		return nil, nil, false
	}
	if !bytes.Contains(src, []byte("import")) && !bytes.Contains(src, []byte("class")) &&
		!bytes.Contains(src, []byte("def")) {
		return ix.summarize(path, nil), nil, false
	}
	// Through the cache of models: a file summarised because an import
	// reached it is mostly one whose functions' facts are asked for next
	// (see FunctionFacts), which parsed it a second time. What the cache
	// parses, others may wait for: that parse is never interrupted.
	if cache {
		f = ix.closed.get(path, src, func() *semantic.File { return ix.parse(context.Background(), path, src) })
	} else {
		f = ix.parse(read, path, src)
	}
	if f == nil {
		return nil, nil, read.Err() != nil
	}
	return ix.summarize(path, f), f, false
}

// summarize keeps what other files need of a model (nil: an empty file).
func (ix *Index) summarize(path string, f *semantic.File) *fileSummary {
	s := &fileSummary{Path: path, Imports: map[string]string{}, Classes: map[string][]string{}, Functions: map[string]bool{}}
	s.Module, s.Package = ix.Module(path)
	if f == nil {
		s.digest = "\x00"
		return s
	}
	local := func(name string) string {
		if s.Module == "" {
			return ""
		}
		return s.Module + "." + name
	}
	// Every string is copied: the model's are views of the file's text,
	// which a summary must not keep alive (a whole project's sources).
	for k, v := range f.Imports {
		s.Imports[strings.Clone(k)] = strings.Clone(v)
	}
	for name, c := range f.Classes {
		if c.Node.Ancestor("class_definition", "function_definition") != nil {
			continue // nested: not importable
		}
		bases := []string{}
		for _, b := range c.Bases {
			q := f.QualifiedName(b)
			if q == "" && b.Is("identifier") && f.Classes[f.Text(b)] != nil {
				q = local(f.Text(b))
			}
			if q != "" {
				bases = append(bases, strings.Clone(q))
			}
		}
		s.Classes[strings.Clone(name)] = bases
	}
	for name, defs := range f.Functions {
		for _, d := range defs {
			if d.Ancestor("class_definition", "function_definition") == nil {
				s.Functions[strings.Clone(name)] = true
			}
		}
	}
	ix.mu.RLock()
	asked := maps.Clone(ix.asked[path])
	ix.mu.RUnlock()
	for name := range asked {
		facts, ok := f.FactsOf(name)
		if !ok {
			s.factless = append(s.factless, name)
			continue
		}
		if s.facts == nil {
			s.facts = map[string]semantic.FunctionFacts{}
		}
		s.facts[name] = facts
	}
	sort.Strings(s.factless)
	s.Calls = ix.projectCalls(path, f)
	ix.mu.RLock()
	methods := ix.methods // only ever appended to: this prefix stays as it is
	ix.mu.RUnlock()
	s.methodsKnown = len(methods)
	for _, name := range methods {
		if calls, underNoGrad := f.MethodCallsUnderNoGrad(name); calls > 0 {
			if s.Methods == nil {
				s.Methods = map[string]bool{}
			}
			s.Methods[name] = underNoGrad
		}
	}
	for _, d := range f.DataLoaders {
		l := loaderSummary{RemoteLoader: semantic.RemoteLoader{
			Path: path, Start: f.ToSource(d.Call.Start()), End: f.ToSource(d.Call.End()),
			Line: f.Mapper.LineOf(d.Call.Start()),
		}}
		l.Workers, l.WorkersKnown = d.Workers(f.Src)
		if d.NumWorkers != nil {
			l.WorkersText = strings.Clone(f.Text(d.NumWorkers))
		}
		l.Pinned = d.PinMemory != nil
		// Only what other files define: a file's own Dataset and collate
		// function see its DataLoaders themselves.
		if d.DatasetClass == nil {
			l.Dataset = strings.Clone(d.DatasetType)
		}
		if fn := d.CollateFn; fn != nil && !(fn.Is("identifier") && len(f.Functions[f.Text(fn)]) > 0) {
			l.Collate = strings.Clone(collateName(f, fn))
		}
		if l.Dataset != "" || l.Collate != "" {
			s.Loaders = append(s.Loaders, l)
		}
	}
	s.digest = digest(s)
	return s
}

// collateName qualifies an imported collate_fn argument, also through
// functools.partial.
func collateName(f *semantic.File, e *pyast.Node) string {
	switch {
	case e == nil:
		return ""
	case e.Is("call") && f.Callee(e) == "functools.partial":
		return collateName(f, f.Arg(e, "func", 0))
	}
	return f.QualifiedName(e)
}

// projectCalls finds the calls in f of what it imports from the project's
// own modules (`compute_elbo(...)` after `from pkg.metrics import
// compute_elbo`, `metrics.score(...)` after `from pkg import metrics`),
// with whether each runs under no-grad as f alone tells. Only names bound
// by such imports are looked at, and a file that has none costs no walk
// over its calls: an open buffer is summarised on every keystroke.
func (ix *Index) projectCalls(path string, f *semantic.File) map[string]bool {
	var aliases map[string]bool // names the file binds to the project's modules or their members
	for alias, q := range f.Imports {
		top, _, _ := strings.Cut(q, ".")
		if ix.projectModule(path, top) {
			if aliases == nil {
				aliases = map[string]bool{}
			}
			aliases[alias] = true
		}
	}
	if aliases == nil {
		return nil
	}
	var calls map[string]bool
	for _, c := range f.Calls() {
		root := c.Child("function")
		for root.Is("attribute") {
			root = root.Child("object")
		}
		if !root.Is("identifier") || !aliases[f.Text(root)] {
			continue
		}
		q := f.Callee(c)
		if q == "" {
			continue
		}
		underNoGrad := f.InNoGrad(c)
		if calls == nil {
			calls = map[string]bool{}
		}
		if before, ok := calls[q]; ok {
			calls[q] = before && underNoGrad
		} else {
			calls[strings.Clone(q)] = underNoGrad
		}
	}
	return calls
}

// projectModule reports whether top, the first part of a dotted module
// name, is a module or package of the project as the file at from imports
// it: where moduleFile looks, by the files' existence alone.
func (ix *Index) projectModule(from, top string) bool {
	if top == "" || top == "torch" {
		// PyTorch's own sources are a project every file of which calls
		// torch: those calls are left out rather than summarised.
		return false
	}
	dir := filepath.Dir(from)
	key := [2]string{dir, top}
	ix.mu.RLock()
	known, ok := ix.modules[key]
	ix.mu.RUnlock()
	if ok {
		return known
	}
	found := false
	for _, base := range ix.importBases(from) {
		if exists(filepath.Join(base, top+".py")) || exists(filepath.Join(base, top, "__init__.py")) {
			found = true
			break
		}
	}
	ix.mu.Lock()
	if ix.modules == nil {
		ix.modules = map[[2]string]bool{}
	}
	ix.modules[[2]string{strings.Clone(dir), strings.Clone(top)}] = found
	ix.mu.Unlock()
	return found
}

// CallersUnderNoGrad implements semantic.Project. The first question
// about a name summarises the files of the folder that mention it and
// were not summarised yet (only what an import reaches, or what builds a
// DataLoader, is summarised before the scans begin; the server's IndexRest
// reads the rest later): a caller is never reached by imports from the
// function it calls. After that, their summaries stay current as files
// change.
func (ix *Index) CallersUnderNoGrad(path, name string) (calls int, underNoGrad bool) {
	return ix.callersUnderNoGrad(path, name, true)
}

// callersUnderNoGrad is CallersUnderNoGrad; without scan, it counts the
// calls in the summaries the index has and reads no file.
func (ix *Index) callersUnderNoGrad(path, name string, scan bool) (calls int, underNoGrad bool) {
	path = absPath(path)
	if scan {
		ix.scanFor(name)
	}
	ix.mu.RLock()
	summaries := make([]*fileSummary, 0, len(ix.files))
	for _, s := range ix.files {
		if s.Path != path && len(s.Calls) > 0 && !ix.testFile(s.Path) {
			summaries = append(summaries, s)
		}
	}
	ix.mu.RUnlock()
	underNoGrad = true
	for _, s := range summaries {
		for q, under := range s.Calls {
			if q != name && !strings.HasSuffix(q, "."+name) {
				continue
			}
			if p, n, ok := ix.Resolve(s.Path, q); ok && p == path && n == name {
				calls++
				underNoGrad = underNoGrad && under
			}
		}
	}
	return calls, underNoGrad
}

// MethodCallersUnderNoGrad implements semantic.Project. The first
// question about a name adds it to those every summary lists the calls of
// (see fileSummary.Methods), and summarises again the folder's files that
// mention it; tests' calls do not count, as in CallersUnderNoGrad.
func (ix *Index) MethodCallersUnderNoGrad(path, name string) (calls int, underNoGrad bool) {
	return ix.methodCallersUnderNoGrad(path, name, true)
}

// methodCallersUnderNoGrad is MethodCallersUnderNoGrad; without scan, it
// counts the calls in the summaries the index has that list the method's
// calls, and reads no file.
func (ix *Index) methodCallersUnderNoGrad(path, name string, scan bool) (calls int, underNoGrad bool) {
	path = absPath(path)
	asked := ix.askMethod(name)
	if scan {
		ix.scanForMethod(name, asked)
	}
	ix.mu.RLock()
	summaries := make([]*fileSummary, 0, len(ix.files))
	for _, s := range ix.files {
		if s.Path != path && !ix.testFile(s.Path) {
			summaries = append(summaries, s)
		}
	}
	clean := ix.methodClean[name]
	ix.mu.RUnlock()
	underNoGrad = true
	for _, s := range summaries {
		if s.methodsKnown <= asked {
			// Made before the name was asked: `check` records the files
			// it analysed meanwhile with what they knew then.
			if clean[s.Path] || !scan {
				continue
			}
			if s = ix.summarizeAgain(s.Path); s == nil {
				continue
			}
		}
		if under, ok := s.Methods[name]; ok {
			calls++
			underNoGrad = underNoGrad && under
		}
	}
	return calls, underNoGrad
}

// askMethod returns the number of the method name in ix.methods, adding
// it when it is new.
func (ix *Index) askMethod(name string) int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if i := slices.Index(ix.methods, name); i >= 0 {
		return i
	}
	ix.methods = append(ix.methods, strings.Clone(name))
	return len(ix.methods) - 1
}

// scanForMethod summarises again, once, the known files that mention the
// method name asked as number asked and whose summary was made before it
// was, and remembers those that do not mention it.
func (ix *Index) scanForMethod(name string, asked int) {
	ix.mu.Lock()
	if ix.methodClean == nil {
		ix.methodClean = map[string]map[string]bool{}
	}
	key := ix.methods[asked] // the index's own copy of name
	if ix.methodClean[key] == nil {
		ix.methodClean[key] = map[string]bool{}
	}
	clean := ix.methodClean[key] // written by the scan alone, read after it
	ix.mu.Unlock()
	ix.scanOnce(methodScan(name), name, func(s *fileSummary) bool { return s.methodsKnown > asked },
		func(path string) { clean[path] = true })
}

// methodScan is the key of the scan for the method name.
func methodScan(name string) string { return "method " + name }

// summarizeAgain makes a new summary of the file at path, from its open
// buffer's model or from disk, and keeps it unless a newer one came
// meanwhile.
func (ix *Index) summarizeAgain(path string) *fileSummary {
	ix.mu.RLock()
	model := ix.open[path]
	ix.mu.RUnlock()
	if model == nil {
		s := ix.summarizeFile(path)
		if s != nil && !ix.openOrOpening(path) {
			ix.refreshFrom(path, s)
		}
		return s
	}
	s := ix.summarize(path, model)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.open[path] == model {
		ix.store(s)
	}
	return s
}

// testFile reports whether path is a test of the project (test_*.py,
// *_test.py, conftest.py, or under a tests, test or testing folder): its
// calls exercise the project's functions, whatever grad mode their users
// run them in.
func (ix *Index) testFile(path string) bool {
	rel, err := filepath.Rel(ix.Root, path)
	if err != nil {
		rel = path
	}
	base := filepath.Base(rel)
	if strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py") || base == "conftest.py" {
		return true
	}
	for _, dir := range strings.Split(filepath.ToSlash(filepath.Dir(rel)), "/") {
		if dir == "tests" || dir == "test" || dir == "testing" {
			return true
		}
	}
	return false
}

// scanFor summarises, once, the known files that mention name and have no
// summary yet.
func (ix *Index) scanFor(name string) {
	ix.scanOnce(name, name, func(*fileSummary) bool { return true }, nil)
}

// scanOnce goes once, for key, over the known files (the folder's files
// for check, also those it was not given: see ProjectsOf) that are not
// open and have no summary current accepts, and summarises those that
// mention name; notMentioned (when not nil) is told the others, in the
// same pass.
func (ix *Index) scanOnce(key, name string, current func(*fileSummary) bool, notMentioned func(path string)) {
	ix.mu.Lock()
	if ix.scans == nil {
		ix.scans = map[string]*scan{}
	}
	pass := ix.scans[key]
	if pass == nil {
		pass = &scan{}
		ix.scans[strings.Clone(key)] = pass
	}
	known := ix.known
	ix.mu.Unlock()
	pass.once.Do(func() {
		defer pass.done.Store(true)
		if known == nil {
			known = ix.Files()
			ix.SetFiles(known)
		}
		word := []byte(name)
		for _, p := range known {
			ix.mu.RLock()
			s := ix.files[p]
			ix.mu.RUnlock()
			if s != nil && current(s) || ix.openOrOpening(p) {
				continue // an open buffer's summary comes from its model
			}
			src, err := analysis.ReadFile(p)
			if err != nil || !bytes.Contains(src, word) {
				if notMentioned != nil {
					notMentioned(p)
				}
				continue
			}
			ix.refreshSource(context.Background(), p, src)
		}
	})
}

// scanReadsNothing reports whether a pass of scanOnce with current would
// read no file: the folder's files are listed, and each is open, or has a
// summary current accepts, or was not found.
func (ix *Index) scanReadsNothing(current func(*fileSummary) bool) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.known == nil {
		return false // the folder is still to be walked
	}
	for _, p := range ix.known {
		if s := ix.files[p]; s != nil && current(s) || ix.open[p] != nil || ix.opening[p] || ix.missing[p] {
			continue
		}
		return false
	}
	return true
}

// scanned reports whether scanOnce's pass for key is over.
func (ix *Index) scanned(key string) bool {
	ix.mu.RLock()
	pass := ix.scans[key]
	ix.mu.RUnlock()
	return pass != nil && pass.done.Load()
}

// digest is what a summary tells other files: two summaries with the same
// digest say the same, though their DataLoaders may have moved. It is a
// hash of that text: the text itself, kept with every summary of a folder
// the server indexes whole, was a quarter of the index's memory.
func digest(s *fileSummary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %v\n", s.Module, s.Package)
	keys := func(m map[string]string) []string {
		out := make([]string, 0, len(m))
		for k, v := range m {
			out = append(out, k+"="+v)
		}
		sort.Strings(out)
		return out
	}
	fmt.Fprintln(&b, keys(s.Imports))
	classes := make([]string, 0, len(s.Classes))
	for k, v := range s.Classes {
		classes = append(classes, k+"("+strings.Join(v, ",")+")")
	}
	sort.Strings(classes)
	fmt.Fprintln(&b, classes)
	functions := make([]string, 0, len(s.Functions))
	for k := range s.Functions {
		functions = append(functions, k)
	}
	sort.Strings(functions)
	fmt.Fprintln(&b, functions)
	facts := make([]string, 0, len(s.facts))
	for k, v := range s.facts {
		facts = append(facts, fmt.Sprintf("%s%+v", k, v))
	}
	sort.Strings(facts)
	fmt.Fprintln(&b, facts, s.factless)
	calls := make([]string, 0, len(s.Calls))
	for q, underNoGrad := range s.Calls {
		calls = append(calls, fmt.Sprintf("%s=%v", q, underNoGrad))
	}
	sort.Strings(calls)
	fmt.Fprintln(&b, calls)
	methods := make([]string, 0, len(s.Methods))
	for name, underNoGrad := range s.Methods {
		methods = append(methods, fmt.Sprintf("%s=%v", name, underNoGrad))
	}
	sort.Strings(methods)
	fmt.Fprintln(&b, methods)
	for _, l := range s.Loaders {
		// Not its offsets: where it is does not change what it runs.
		fmt.Fprintf(&b, "%s %s %d %v %q %v\n", l.Dataset, l.Collate, l.Workers, l.WorkersKnown, l.WorkersText, l.Pinned)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return string(sum[:])
}

// modelCache keeps the models of a few files that are not open, for the
// fixes that edit them: rebuilt only when the file changes.
type modelCache struct {
	mu      sync.Mutex
	entries []cachedModel // most recent last
	// building are the models being built, by path: a second ask for the
	// same text waits for that build rather than parsing the file again.
	// The rules run side by side and ask for the same modules: opening
	// transformers' trainer.py parsed its import_utils.py three times at
	// once.
	building map[string]*modelBuild
}

type cachedModel struct {
	path  string
	src   []byte
	model *semantic.File
}

// modelBuild is a model being built from src; model is set when done is
// closed (nil when the build failed or panicked).
type modelBuild struct {
	src     []byte
	done    chan struct{}
	model   *semantic.File
	waiting int // asks waiting for it, under the cache's lock
}

// cachedModels and cachedSource bound the models kept: a model takes
// about 40 times its source, so at most about 20 MiB. One of a file of
// largeFile or more is not kept at all. Two models, as before, were too
// few for the modules one file calls into: tensordict's base.py asks for
// the facts of functions of a dozen modules, in the order of its code,
// and each ask parsed its module again (184-189 ms to the first
// diagnostics after indexing; the facts asked at the first pause took
// 0.5 s more).
const (
	cachedModels = 8
	cachedSource = 512 << 10
)

// forget drops the models kept; those being built are kept when done.
func (c *modelCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = nil
}

// peek returns the model kept of path's text src, or one build makes, not
// kept.
func (c *modelCache) peek(path string, src []byte, build func() *semantic.File) *semantic.File {
	var kept *semantic.File // read with the lock held: get moves and appends entries
	c.mu.Lock()
	if i := c.find(path, src); i >= 0 {
		kept = c.entries[i].model
	}
	c.mu.Unlock()
	if kept == nil {
		return build()
	}
	return kept
}

// find is the index of the model kept of path's text src, or -1. Call
// with the cache's lock held.
func (c *modelCache) find(path string, src []byte) int {
	return slices.IndexFunc(c.entries, func(e cachedModel) bool { return e.path == path && bytes.Equal(e.src, src) })
}

// get returns the model of path's text src: the one kept, the one being
// built, or one build makes.
func (c *modelCache) get(path string, src []byte, build func() *semantic.File) *semantic.File {
	c.mu.Lock()
	if i := c.find(path, src); i >= 0 {
		e := c.entries[i]
		c.entries = append(append(c.entries[:i:i], c.entries[i+1:]...), e)
		c.mu.Unlock()
		return e.model
	}
	if b := c.building[path]; b != nil && bytes.Equal(b.src, src) {
		b.waiting++
		c.mu.Unlock()
		<-b.done
		return b.model
	}
	b := &modelBuild{src: src, done: make(chan struct{})}
	if c.building == nil {
		c.building = map[string]*modelBuild{}
	}
	c.building[path] = b
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if c.building[path] == b {
			delete(c.building, path)
		}
		c.mu.Unlock()
		close(b.done) // also when build panics: those waiting get nil
	}()
	m := build()
	b.model = m
	if m == nil || len(src) >= largeFile {
		return m
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = append(c.entries, cachedModel{path, src, m})
	kept := 0
	for _, e := range c.entries {
		kept += len(e.src)
	}
	for len(c.entries) > cachedModels || len(c.entries) > 1 && kept > cachedSource {
		kept -= len(c.entries[0].src)
		c.entries = c.entries[1:]
	}
	return m
}

// Projects are the indexes of several folders (an editor's workspace
// folders, the projects `check` was given): each question goes to the
// index of the innermost folder holding the file it is asked from, so two
// folders may each have a package of the same name.
type Projects struct {
	mu      sync.RWMutex
	indexes []*Index          // innermost first
	byRoot  map[string]*Index // the first added of each root
	// absolute caches each relative path's absolute form: every rule asks
	// For of its file many times, and filepath.Abs of a relative path asks
	// the system for the working directory each time (a tree of many
	// small projects, opencompass's, spent most of `check` there).
	absolute sync.Map
	// provisional, while on, has the questions about callers answered from
	// the summaries at hand (see Provisional).
	provisional struct {
		sync.Mutex
		on    bool
		asked map[string][]callersQuestion // by the asking file's path
	}
	// background, once on, has a question whose scan has not run answered
	// as not known yet, and the scan run off the asking path (see
	// InBackground).
	background struct {
		sync.Mutex
		notify  func(paths []string)
		waiting map[withheld]bool // to settle, in any order
		running bool              // a goroutine settles them
	}
}

// withheld is a question answered as not known yet, and who asked it.
type withheld struct {
	ix   *Index
	path string
	q    callersQuestion
}

// callersQuestion is a question about a function's callers in other files,
// and whether its provisional answer said every one runs under no-grad.
type callersQuestion struct {
	name, method string // one of the two: a function's name, or a method's
	suppressed   bool   // calls > 0 && underNoGrad, what the rules act on
}

// quick reports whether the question can be answered without reading a
// file: its scan has run, or would read nothing (every file of the folder
// is summarised already, as after indexing a folder whose every file
// builds a DataLoader).
func (q callersQuestion) quick(ix *Index) bool {
	if q.method != "" {
		asked := ix.askMethod(q.method)
		return ix.scanned(methodScan(q.method)) ||
			ix.scanReadsNothing(func(s *fileSummary) bool { return s.methodsKnown > asked })
	}
	return ix.scanned(q.name) || ix.scanReadsNothing(func(*fileSummary) bool { return true })
}

// ask asks ix the question from the file at path, summarising the files
// that have no summary yet when scan.
func (q callersQuestion) ask(ix *Index, path string, scan bool) (calls int, underNoGrad bool) {
	if q.method != "" {
		return ix.methodCallersUnderNoGrad(path, q.method, scan)
	}
	return ix.callersUnderNoGrad(path, q.name, scan)
}

// Provisional has CallersUnderNoGrad and MethodCallersUnderNoGrad, from
// now until Settle, answer from the summaries the indexes have, without
// summarising the files that have none yet, and keep each answer. `check`
// asks so while it analyses every file, each of which it summarises as
// it goes: the first question about a name summarised, one parse each,
// the files not yet analysed that mention it, which check then parsed
// again for their analysis (on a generated tree of training files, where
// every file asks, 0.46 s of its 1.6 s of CPU).
func (p *Projects) Provisional() {
	p.provisional.Lock()
	defer p.provisional.Unlock()
	p.provisional.on, p.provisional.asked = true, map[string][]callersQuestion{}
}

// Settle ends what Provisional began, once no analysis asks any more, and
// returns the paths of the files that asked a question whose provisional
// answer differs from the one the indexes give now, with every file
// summarised that mentions the name: those are to be analysed again.
func (p *Projects) Settle() []string {
	p.provisional.Lock()
	asked := p.provisional.asked
	p.provisional.on, p.provisional.asked = false, nil
	p.provisional.Unlock()
	var unsettled []string
	for path, questions := range asked {
		for _, q := range questions {
			if calls, under := p.callers(path, q); (calls > 0 && under) != q.suppressed {
				unsettled = append(unsettled, path)
				break
			}
		}
	}
	sort.Strings(unsettled)
	return unsettled
}

// callers answers q from the file at path; between Provisional and
// Settle, provisionally, and kept for Settle.
func (p *Projects) callers(path string, q callersQuestion) (calls int, underNoGrad bool) {
	ix := p.For(path)
	if ix == nil {
		return 0, false
	}
	p.provisional.Lock()
	provisional := p.provisional.on
	p.provisional.Unlock()
	if !provisional && p.withhold(ix, path, q) {
		return -1, false
	}
	calls, underNoGrad = q.ask(ix, path, !provisional)
	if provisional {
		q.suppressed = calls > 0 && underNoGrad
		p.provisional.Lock()
		if p.provisional.on { // Settle comes after every analysis (see Checker.Check)
			p.provisional.asked[path] = append(p.provisional.asked[path], q)
		}
		p.provisional.Unlock()
	}
	return calls, underNoGrad
}

// InBackground has the questions about callers answered at once from now
// on: one whose scan of the folder's files has not run is answered as not
// known yet (calls -1, see semantic.Project), and the scan runs in a
// goroutine. The server asks so. The scan reads and parses every file that
// mentions the name: 1.2 s, before the first diagnostics of a 10,000-line
// file opened in a folder of 50 files like it. Once the scans have run,
// notify is called (from that goroutine) with the files to analyse again
// (see settleAnswers): their generation has moved on, so their next
// analysis judges afresh.
func (p *Projects) InBackground(notify func(paths []string)) {
	p.background.Lock()
	defer p.background.Unlock()
	p.background.notify = notify
}

// withhold reports whether q, asked from path, is to be answered as not
// known yet, and if so has it settled in the background.
func (p *Projects) withhold(ix *Index, path string, q callersQuestion) bool {
	p.background.Lock()
	on := p.background.notify != nil
	p.background.Unlock()
	// Outside the lock, which every question takes: quick may go over
	// every file of the folder.
	if !on || q.quick(ix) {
		return false
	}
	p.background.Lock()
	defer p.background.Unlock()
	if p.background.waiting == nil {
		p.background.waiting = map[withheld]bool{}
	}
	p.background.waiting[withheld{ix, absPath(path), q}] = true
	if !p.background.running {
		p.background.running = true
		go p.settleWithheld()
	}
	return true
}

// settleWithheld runs the scans the withheld questions need, one after the
// other, until none waits; after each round it tells notify, index by
// index, the files to analyse again. A question withheld during a round
// waits for the next: its scan may have begun before the question came,
// but it is answered again after it.
func (p *Projects) settleWithheld() {
	for {
		p.background.Lock()
		waiting, notify := p.background.waiting, p.background.notify
		p.background.waiting = nil
		if len(waiting) == 0 {
			p.background.running = false
			p.background.Unlock()
			return
		}
		p.background.Unlock()
		byIndex := map[*Index][]withheld{}
		for w := range waiting {
			byIndex[w.ix] = append(byIndex[w.ix], w)
		}
		for ix, questions := range byIndex {
			if again := ix.settleAnswers(questions); len(again) > 0 {
				notify(again)
			}
		}
	}
}

// settleAnswers answers the withheld questions, running the scans they
// need, and returns the files to analyse again: those whose answer has the
// rules report what they withheld (their generation moves on), and every
// open buffer when the scans summarised files the index had not read (all
// generations moved on: analysed now rather than at their next keystroke).
func (ix *Index) settleAnswers(questions []withheld) []string {
	// A scan during the build reads and parses the files the build is
	// summarising too, each on a core of its own, while the buffers just
	// opened wait for one; after it, the scan reads only the files the
	// build left out.
	ix.awaitBuild()
	before := ix.Changes()
	again := map[string]bool{}
	for _, w := range questions {
		if ix.settleAnswer(w) {
			again[w.path] = true
		}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for path := range again {
		ix.settled[path]++
	}
	if ix.changes != before {
		for path := range ix.open {
			again[path] = true
		}
	}
	return slices.Sorted(maps.Keys(again))
}

// settleAnswer answers a withheld question and reports whether the answer
// has the rules report what they withheld. A scan that panics (a file the
// model cannot take) reports so too: the scan counts as run, and the
// question, asked again by the file's next analysis, is answered from the
// files it could summarise, where the analysis's own recovery covers it.
func (ix *Index) settleAnswer(w withheld) (report bool) {
	defer func() {
		if recover() != nil {
			report = true
		}
	}()
	// The rules read "not known" as every call under no-grad: they
	// withheld what depends on it (see File.CalledUnderNoGradAcrossFiles).
	calls, under := w.q.ask(ix, w.path, true)
	return calls == 0 || !under
}

// Add adds the index of a folder (and returns it).
func (p *Projects) Add(ix *Index) *Index {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.indexes = append(p.indexes, ix)
	sort.SliceStable(p.indexes, func(i, j int) bool { return len(p.indexes[i].Root) > len(p.indexes[j].Root) })
	if p.byRoot == nil {
		p.byRoot = map[string]*Index{}
	}
	if p.byRoot[ix.Root] == nil {
		p.byRoot[ix.Root] = ix
	}
	return ix
}

// Parsed is how many files the indexes have parsed so far, and the time
// that took (see Index.parse).
func (p *Projects) Parsed() (files int64, took time.Duration) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, ix := range p.indexes {
		files += ix.parses.Load()
		took += time.Duration(ix.parsing.Load())
	}
	return files, took
}

// Remove drops the index of root.
func (p *Projects) Remove(root string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	root = absPath(root)
	p.indexes = slices.DeleteFunc(p.indexes, func(ix *Index) bool { return ix.Root == root })
	delete(p.byRoot, root)
}

// For returns the index of the innermost folder holding path, or nil: the
// index of the nearest folder upward from path that has one, found by
// root rather than by asking every index (a tree without project markers
// has one per folder of scripts).
func (p *Projects) For(path string) *Index {
	abs := p.absPath(path)
	p.mu.RLock()
	defer p.mu.RUnlock()
	for dir := abs; ; {
		if ix := p.byRoot[dir]; ix != nil {
			return ix
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent
	}
}

// absPath is absPath(path), computed once per relative path.
func (p *Projects) absPath(path string) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	if abs, ok := p.absolute.Load(path); ok {
		return abs.(string)
	}
	abs := absPath(path)
	p.absolute.Store(path, abs)
	return abs
}

// All returns the indexes.
func (p *Projects) All() []*Index {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return slices.Clone(p.indexes)
}

// Yield interrupts the parses of large files that the indexing of every
// folder has under way (see Index.Yield).
func (p *Projects) Yield() {
	for _, ix := range p.All() {
		ix.Yield()
	}
}

// Module implements semantic.Project.
func (p *Projects) Module(path string) (string, bool) {
	if ix := p.For(path); ix != nil {
		return ix.Module(path)
	}
	return "", false
}

// Resolve implements semantic.Project.
func (p *Projects) Resolve(from, qualified string) (string, string, bool) {
	if ix := p.For(from); ix != nil {
		return ix.Resolve(from, qualified)
	}
	return "", "", false
}

// ClassBases implements semantic.Project.
func (p *Projects) ClassBases(path, name string) ([]string, bool) {
	if ix := p.For(path); ix != nil {
		return ix.ClassBases(path, name)
	}
	return nil, false
}

// LoadersUsing implements semantic.Project.
func (p *Projects) LoadersUsing(path string) map[string][]semantic.RemoteLoader {
	if ix := p.For(path); ix != nil {
		return ix.LoadersUsing(path)
	}
	return nil
}

// Model implements semantic.Project.
func (p *Projects) Model(path string) *semantic.File {
	if ix := p.For(path); ix != nil {
		return ix.Model(path)
	}
	return nil
}

// CallersUnderNoGrad implements semantic.Project.
func (p *Projects) CallersUnderNoGrad(path, name string) (int, bool) {
	return p.callers(path, callersQuestion{name: name})
}

// MethodCallersUnderNoGrad implements semantic.Project.
func (p *Projects) MethodCallersUnderNoGrad(path, name string) (int, bool) {
	return p.callers(path, callersQuestion{method: name})
}

// Generation implements semantic.Project.
func (p *Projects) Generation(path string) uint64 {
	if ix := p.For(path); ix != nil {
		return ix.Generation(path)
	}
	return 0
}

// projectMarkers are the files that mark a project's folder.
var projectMarkers = []string{"pyproject.toml", "setup.py", "setup.cfg", ".git"}

// ProjectRoot is the folder of the project holding path: the nearest one
// upward with a pyproject.toml, setup.py, setup.cfg or .git; else, in a
// package, the folder above its top package; else path's own folder.
func ProjectRoot(path string) string {
	start := absPath(path)
	if st, err := os.Stat(start); err != nil || !st.IsDir() {
		start = filepath.Dir(start)
	}
	for dir := start; ; dir = filepath.Dir(dir) {
		if hasProjectMarker(dir) {
			return dir
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	// No marker (an installed package): the folder above the top package.
	top := start
	for exists(filepath.Join(top, "__init__.py")) && filepath.Dir(top) != top {
		top = filepath.Dir(top)
	}
	return top
}

// ProjectsOf returns empty indexes for the projects the given files belong
// to (see ProjectRoot); `check` fills them as it analyses (see Record).
func ProjectsOf(files []string) *Projects {
	projects := &Projects{}
	rootOf := map[string]string{} // by folder: the upward walk once per folder
	seen := map[string]bool{}
	for _, f := range files {
		dir := filepath.Dir(absPath(f))
		root, ok := rootOf[dir]
		if !ok {
			root = ProjectRoot(f)
			rootOf[dir] = root
		}
		if !seen[root] {
			seen[root] = true
			projects.Add(NewIndex(root))
		}
	}
	// A folder no marker makes a project (a script in a home folder) is
	// not walked for callers: its files are those check was given.
	given := map[*Index][]string{}
	for _, f := range files {
		if ix := projects.For(f); ix != nil && !hasProjectMarker(ix.Root) {
			given[ix] = append(given[ix], f)
		}
	}
	for ix, files := range given {
		ix.SetFiles(files)
	}
	return projects
}

// hasProjectMarker reports whether dir holds one of projectMarkers.
func hasProjectMarker(dir string) bool {
	for _, m := range projectMarkers {
		if exists(filepath.Join(dir, m)) {
			return true
		}
	}
	return false
}

// FunctionFacts implements semantic.Project.
func (p *Projects) FunctionFacts(from, qualified string) (semantic.FunctionFacts, bool) {
	if ix := p.For(from); ix != nil {
		return ix.FunctionFacts(from, qualified)
	}
	return semantic.FunctionFacts{}, false
}

// importHead matches the module an import statement names first: `from
// .data import X` (relative), `from pkg.data import X`, `import pkg`.
var importHead = regexp.MustCompile(`(?m)^[ \t]*(?:from[ \t]+(\.*)([A-Za-z_]\w*)?|import[ \t]+([A-Za-z_]\w*))`)

// ImportsProject reports whether src, the text of the file at path,
// imports one of the project's own modules: then it may use torch through
// them without ever naming it (check's "never says torch" shortcut does
// not hold for it).
func (ix *Index) ImportsProject(path string, src []byte) bool {
	path = absPath(path)
	for _, m := range importHead.FindAllSubmatch(src, -1) {
		if len(m[1]) > 0 {
			return true // a relative import: the project's by definition
		}
		head := string(m[2])
		if head == "" {
			head = string(m[3])
		}
		if head != "" && head != "torch" && ix.moduleFile(path, head) != nil {
			return true
		}
	}
	return false
}

// WorthAnalysing is check's pre-filter (TorchFix's): a file that never says
// "torch" has nothing for vramlint, unless it imports the project's own
// modules (ix, nil for a file alone), through which it may use torch.
func WorthAnalysing(ix *Index, path string, src []byte) bool {
	return bytes.Contains(src, []byte("torch")) || ix != nil && ix.ImportsProject(path, src)
}
