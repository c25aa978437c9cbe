package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/workspace"
	"github.com/vramlint/vramlint/codeactions"
)

// Each workspace folder has a workspace index (workspace.Index): what a
// file's findings depend on in other files (a base class, the DataLoader
// of another module that runs a Dataset in workers). Open buffers feed it
// as they are analysed, other files through workspace/didChangeWatchedFiles.
// When what a file tells others changes, the other open files of its
// folder are analysed again, after the debounce, like an edit of theirs.

// maxIndexedFiles bounds the files a folder's index reads up front (a home
// folder opened as a workspace must not read the whole disk); beyond it,
// files are indexed when an import reaches them.
const maxIndexedFiles = 20000

// indexingQuiet is how long the indexing waits after a buffer's parse or
// analysis before its next file: longer than the gap between two keys
// held down or typed fast, shorter than a pause.
const indexingQuiet = 100 * time.Millisecond

// maxIndexedSource bounds the source the indexing reads in full, with the
// facts of every function (see Index.IndexRest): what the index keeps is
// about a quarter of it, 11 MB for transformers' 44 MB; sglang, the
// largest package vramlint's ecosystem check reads, is 68 MB.
const maxIndexedSource = 128 << 20

// indexFolders starts indexing the workspace folders not indexed yet, in
// the background: diagnostics do not wait for it, and are refined when it
// is done. Call with s.mu held.
func (s *Server) indexFolders() {
	for _, folder := range s.folders {
		if ix := s.projects.For(folder); ix != nil && ix.Root == folder {
			continue
		}
		ix := workspace.NewIndex(folder)
		ix.KeepEveryFact()
		s.projects.Add(ix)
		go s.buildIndex(ix)
	}
}

// buildIndex indexes a folder, showing $/progress where the client offers
// it (cancelling it leaves the rest to be indexed when imports reach it):
// first the files that build DataLoaders, which no import leads to and
// the scans for callers wait for; then every other file, with the facts
// of all its functions (see Index.KeepEveryFact), so that a buffer opened
// afterwards parses no other file for its first diagnostics.
func (s *Server) buildIndex(ix *workspace.Index) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Printf("panic while indexing %s: %v", ix.Root, p)
		}
	}()
	files := ix.Files()
	if len(files) > maxIndexedFiles {
		s.log.Printf("%s: %d Python files; indexing the first %d up front", ix.Root, len(files), maxIndexedFiles)
		files = files[:maxIndexedFiles]
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	progress := s.startProgress(ctx, "Indexing "+filepath.Base(ix.Root), cancel)
	// Each file once the buffers' diagnostics are out, and have been for
	// a moment; none once the folder has left the workspace.
	next := func(done, total int) {
		s.foreground.wait(indexingQuiet)
		if s.projects.For(ix.Root) != ix {
			cancel()
		}
		progress.report(done, total)
	}
	// Looking for DataLoaders reads every file but parses few: a tenth of
	// the bar.
	progress.span(0, 10)
	done, err := ix.Build(ctx, files, next)
	if err != nil {
		// The rest is indexed when an import reaches it.
		progress.end(fmt.Sprintf("cancelled after %d of %d files", done, len(files)))
		s.log.Printf("indexing %s: %v", ix.Root, err)
	}
	s.built(ix)
	if err != nil {
		return
	}
	progress.span(10, 100)
	start := time.Now()
	done, err = ix.IndexRest(ctx, files, maxIndexedSource, next)
	switch {
	case err != nil:
		progress.end(fmt.Sprintf("cancelled after %d of %d files", done, len(files)))
	case done < len(files):
		progress.end(fmt.Sprintf("%d of %d files (%d MiB of source); the rest when an import reaches them", done, len(files), maxIndexedSource>>20))
	default:
		progress.end(fmt.Sprintf("%d files", len(files)))
	}
	s.log.Printf("indexed the functions of %d of %d files of %s in %v", done, len(files), ix.Root, time.Since(start).Round(time.Millisecond))
	go s.giveMemoryBack()
}

// built gives back the memory the build left, and analyses again what it
// may have changed.
func (s *Server) built(ix *workspace.Index) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Indexing parsed every file that builds a DataLoader: give back what
	// that left now, as after closing a large document. It happens once a
	// folder, and most of it is the parser's C memory, which the Go
	// allocation count does not see: a folder holding one 50,000-line
	// file left the server at 133 MiB before anything was opened.
	go s.giveMemoryBack()
	s.reanalyseIndexed(ix, "")
	if s.editor.workspaceMode {
		s.workspaceDiagnostics()
		s.askToPull()
	}
}

// summarizeModel summarises the model of an open buffer's version for
// recordModel; nil when no index wants it. It needs no lock.
func (s *Server) summarizeModel(snap *snapshot, res *analysis.Result) *workspace.OpenSummary {
	if snap.path == "" || res == nil || res.Model() == nil {
		return nil
	}
	if ix := s.projects.For(snap.path); ix != nil {
		return ix.SummarizeOpen(res.Model())
	}
	return nil
}

// recordModel gives the index the summary of an open buffer's current
// version, and re-analyses the folder's other open files when what the
// buffer tells other files changed. Call with s.mu held.
func (s *Server) recordModel(snap *snapshot, summary *workspace.OpenSummary) {
	ix := s.projects.For(snap.path)
	if summary == nil || ix == nil || summary.Index != ix {
		return // no index, or the folders changed meanwhile
	}
	before := ix.Changes()
	ix.SetOpenSummary(summary)
	if ix.Changes() != before {
		s.reanalyseIndexed(ix, snap.uri)
	}
}

// forgetModel tells the index a buffer closed: the file on disk counts
// again. It returns the work that left, for the caller to run off the lock
// (see closeInIndex), or nil. Call with s.mu held.
func (s *Server) forgetModel(d *document) (left func()) {
	if d.path == "" {
		return nil
	}
	if ix := s.projects.For(d.path); ix != nil {
		left = s.closeInIndex(ix, d.path, d.uri)
	}
	if s.editor.workspaceMode && !s.pullMode() {
		go s.publishClosed(context.Background(), d.path) // what is on disk, now that the buffer is gone
	}
	return left
}

// closeInIndex closes the buffer uri (of the file at path) in ix, and
// returns the work that left (see workspace.Index.Close and reread), to be
// run off the lock, or nil. Close stores no summary itself: what changes,
// the reread does.
func (s *Server) closeInIndex(ix *workspace.Index, path, uri string) (left func()) {
	if work := ix.Close(path); work != nil {
		return func() { s.reread(ix, uri, work) }
	}
	return nil
}

// reread runs what closing the buffer uri left to the index (reading the
// file from disk again, or gathering its facts: see workspace.Index.Close),
// off the server's lock, and analyses the other buffers again when that
// changed what the file tells them, as a change on disk does
// (didChangeWatchedFiles).
func (s *Server) reread(ix *workspace.Index, uri string, reread func()) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Printf("panic while reading %s again: %v", uri, p)
		}
	}()
	before := ix.Changes()
	reread()
	if ix.Changes() == before {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reanalyseIndexed(ix, uri)
}

// answersKnown analyses again the files at paths, whose findings
// waited for an answer about other files that is known now (see
// workspace.Projects.InBackground): the open buffers, and in workspace
// mode the closed files.
func (s *Server) answersKnown(paths []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.askToPull() // a pulling client re-pulls instead
	for _, path := range paths {
		open := false
		for _, d := range s.docs {
			if d.path != path {
				continue
			}
			open = true
			if !s.pullMode() && (!d.snap.onSave || d.snap.saved) && !d.snap.isAnalysed() {
				// A version being analysed for its diagnostics (an open):
				// they come first, without what waited, rather than be
				// thrown away. (A version typed into a document analysed
				// on save only is not analysed until the save.)
				d.analyseAgain = true
				continue
			}
			s.reanalyse(d, d.snap.settings)
		}
		if !open && s.editor.workspaceMode && !s.pullMode() {
			go s.publishClosed(context.Background(), path)
		}
	}
}

// reanalyseIndexed analyses again, after the debounce, every open file of
// ix's folder but except (a URI). Call with s.mu held.
func (s *Server) reanalyseIndexed(ix *workspace.Index, except string) {
	s.askToPull() // a pulling client re-pulls instead (interFileDependencies)
	for _, d := range s.docs {
		if d.uri == except || d.path == "" || !ix.Contains(d.path) {
			continue
		}
		s.reanalyse(d, d.snap.settings)
	}
}

// reanalyse gives d a new snapshot of its current text, analysed again
// under settings (building on the last analysis), and schedules it. Call
// with s.mu held.
func (s *Server) reanalyse(d *document, settings *analysis.Settings) {
	d.analyseAgain = false
	old := d.snap
	d.snap = s.newSnapshot(d, old.version, old.src, old.mapper, old.tree, settings, old.skip)
	d.snap.onSave, d.snap.saved = old.onSave, old.onSave
	if base := old.model(); base != nil && base.Model() != nil {
		d.snap.base.Store(base)
	}
	s.scheduleDiagnostics(d)
}

// didChangeWatchedFiles re-reads the files that changed on disk (not the
// open ones: their buffers count), in the background.
func (s *Server) didChangeWatchedFiles(params json.RawMessage) error {
	var p struct {
		Changes []struct {
			URI  string `json:"uri"`
			Type int    `json:"type"`
		} `json:"changes"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return fmt.Errorf("didChangeWatchedFiles: %w", err)
	}
	open := s.openPaths()
	var paths []string
	for _, c := range p.Changes {
		if path, ok := filePath(c.URI); ok && !open[path] && filepath.Ext(path) == ".py" {
			paths = append(paths, path)
		}
	}
	if len(paths) == 0 {
		return nil
	}
	go func() {
		changed := map[*workspace.Index]bool{}
		for _, path := range paths {
			if ix := s.projects.For(path); ix != nil {
				before := ix.Changes()
				ix.Refresh(path)
				changed[ix] = changed[ix] || ix.Changes() != before
			}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		anyChanged := false
		for ix, c := range changed {
			if c {
				s.reanalyseIndexed(ix, "")
				anyChanged = true
			}
		}
		if s.editor.workspaceMode && !s.pullMode() {
			if anyChanged {
				s.workspaceDiagnostics() // other files' findings may depend on them
			} else {
				for _, path := range paths {
					go s.publishClosed(context.Background(), path)
				}
			}
		}
	}()
	return nil
}

// watchFiles asks a client that registers capabilities dynamically to
// report changes to the workspace's Python files. Call with s.mu held.
func (s *Server) watchFiles() {
	if !s.client.Workspace.DidChangeWatchedFiles.DynamicRegistration {
		return
	}
	go func() {
		params := map[string]any{"registrations": []any{map[string]any{
			"id":              "vramlint-watched-files",
			"method":          "workspace/didChangeWatchedFiles",
			"registerOptions": map[string]any{"watchers": []any{map[string]any{"globPattern": "**/*.py"}}},
		}}}
		if _, err := s.conn.Call(context.Background(), "client/registerCapability", params, nil); err != nil {
			s.log.Printf("client/registerCapability: %v", err)
		}
	}()
}

// otherDocument finds another file a cross-file fix edits, for
// codeactions: the open document, or the file on disk, provided it still
// holds src. Call without s.mu held.
func (s *Server) otherDocument(path string, src []byte) (codeactions.Document, bool, bool) {
	s.mu.Lock()
	var open *snapshot
	for _, d := range s.docs {
		if d.path == path {
			open = d.snap
			break
		}
	}
	s.mu.Unlock()
	if open != nil {
		if !bytes.Equal(open.src, src) {
			return codeactions.Document{}, false, false
		}
		return open.lspDocument(), true, true
	}
	disk, err := analysis.ReadFile(path)
	if err != nil || !bytes.Equal(disk, src) {
		return codeactions.Document{}, false, false
	}
	return codeactions.Document{URI: protocol.DocumentURI(uri.File(path)), Mapper: analysis.NewMapper(src), Encoding: s.encoding}, false, true
}

// freshCrossFileFixes returns res, or, when a cross-file fix in it was
// computed on another file's text that has changed since (that file was
// edited after this one was analysed: moving its DataLoader does not
// re-analyse this file), this version analysed again, so that the fix
// the user asks for is offered and edits the right lines.
//
// Only the fixes of the diagnostics in [start, end), the request's, are
// looked at: a code action is asked for at every cursor move, and each
// look reads the other file.
func (s *Server) freshCrossFileFixes(snap *snapshot, res *analysis.Result, start, end int) *analysis.Result {
	if res == nil || len(res.Others) == 0 || snap.tree == nil {
		return res
	}
	stale := map[string]bool{}
	for _, d := range res.Diagnostics {
		if !codeactions.Overlaps(d.Start, d.End, start, end) {
			continue
		}
		for _, fix := range d.Fixes {
			for _, o := range fix.Others {
				if _, _, ok := s.otherDocument(o.Path, res.Others[o.Path]); !ok {
					stale[o.Path] = true
				}
			}
		}
	}
	if len(stale) == 0 {
		return res
	}
	// A closed file changed on disk without a watcher's word: read it.
	open := s.openPaths()
	for path := range stale {
		if ix := s.projects.For(path); ix != nil && !open[path] {
			ix.Refresh(path)
		}
	}
	name := snap.path
	if name == "" {
		name = snap.uri
	}
	return snap.runner.AnalyzeTree(res, name, snap.src, snap.tree, snap.settings)
}

// progress is one $/progress report, or nothing for clients without
// window.workDoneProgress.
type progress struct {
	s      *Server
	token  string
	last   atomic.Int64 // the last percentage sent
	active bool
	// from and to are the part of the bar report fills (see span).
	from, to atomic.Int64
}

var progressTokens atomic.Int64

// startProgress begins a work-done progress the user may cancel.
func (s *Server) startProgress(ctx context.Context, title string, cancel context.CancelFunc) *progress {
	p := &progress{s: s}
	s.mu.Lock()
	supported := s.client.Window.WorkDoneProgress
	s.mu.Unlock()
	if !supported {
		return p
	}
	p.token = "vramlint-index-" + strconv.FormatInt(progressTokens.Add(1), 10)
	// ctx: a client that never answers holds up nothing once the work is
	// cancelled (a newer pass replaces this one).
	if _, err := s.conn.Call(ctx, "window/workDoneProgress/create", map[string]any{"token": p.token}, nil); err != nil {
		s.log.Printf("window/workDoneProgress/create: %v", err)
		return p
	}
	s.mu.Lock()
	s.cancelProgress[p.token] = cancel
	s.mu.Unlock()
	p.active = true
	p.last.Store(-1)
	p.span(0, 100)
	s.notify("$/progress", map[string]any{"token": p.token, "value": map[string]any{
		"kind": "begin", "title": title, "cancellable": true, "percentage": 0,
	}})
	return p
}

// report sends the percentage done when it moved.
func (p *progress) report(done, total int) {
	if !p.active || total == 0 {
		return
	}
	from, to := p.from.Load(), p.to.Load()
	pct := from + int64(done)*(to-from)/int64(total)
	if old := p.last.Load(); pct <= old || !p.last.CompareAndSwap(old, pct) {
		return
	}
	p.s.notify("$/progress", map[string]any{"token": p.token, "value": map[string]any{
		"kind": "report", "percentage": pct, "message": fmt.Sprintf("%d/%d files", done, total),
	}})
}

// span has the next reports fill the bar from one percentage to another:
// for work done in parts, one after the other.
func (p *progress) span(from, to int64) {
	p.from.Store(from)
	p.to.Store(to)
}

// end closes the progress.
func (p *progress) end(message string) {
	if !p.active {
		return
	}
	p.s.mu.Lock()
	delete(p.s.cancelProgress, p.token)
	p.s.mu.Unlock()
	p.s.notify("$/progress", map[string]any{"token": p.token, "value": map[string]any{"kind": "end", "message": message}})
}

// cancelWorkDoneProgress stops the work a progress reports (the user
// pressed Cancel on it).
func (s *Server) cancelWorkDoneProgress(params json.RawMessage) error {
	var p struct {
		Token json.RawMessage `json:"token"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return fmt.Errorf("window/workDoneProgress/cancel: %w", err)
	}
	var token string
	if err := json.Unmarshal(p.Token, &token); err != nil {
		return nil // not one of ours: they are strings
	}
	s.mu.Lock()
	cancel := s.cancelProgress[token]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	return nil
}
