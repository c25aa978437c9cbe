package server

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.lsp.dev/protocol"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/codeactions"
)

// document is an open buffer. Its fields change on the message loop under
// Server.mu; everything else reads immutable snapshots.
type document struct {
	uri  string
	path string    // the file's path; "" for untitled: and other schemes
	snap *snapshot // the current version

	timer     *time.Timer        // the pending debounced analysis
	cancelRun context.CancelFunc // the running analysis

	whole *completion // the whole-file parse of a tree parsed in chunks
	// lastSaved is the last analysed version of a document analysed on
	// save only, which its unsaved versions show (see current).
	lastSaved *snapshot
}

// current reports whether snap's diagnostics are the ones to show: it is
// the current version, or, for a document analysed on save only, the last
// saved one (typing after a save does not discard its analysis).
func (d *document) current(snap *snapshot) bool {
	return d.snap == snap || d.snap.onSave && !d.snap.saved && d.lastSaved == snap
}

// completion is the background parse of a document that was opened by
// parsing it in chunks (see pyast.Tree.Complete): its first edit reparses
// incrementally from it.
type completion struct {
	done   chan struct{}
	cancel context.CancelFunc
	tree   *pyast.Tree // nil when it failed or was cancelled
}

// completeInBackground starts the whole-file parse of d's tree when it was
// parsed in chunks, once the first diagnostics are out (or after a
// moment, when nobody asks for them): until then they need the cores.
// Call with s.mu held.
func (s *Server) completeInBackground(d *document) {
	d.stopCompletion()
	snap := d.snap
	tree := snap.tree
	if tree == nil || !tree.NeedsCompletion() {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &completion{done: make(chan struct{}), cancel: cancel}
	d.whole = c
	go func() {
		whole := complete(ctx, snap, s.log.Printf, d.uri)
		c.tree = whole
		close(c.done) // before taking s.mu: didChange waits for it holding s.mu
		if whole == nil || whole.SameSegments(tree) {
			return
		}
		// Parsing in chunks should give the whole file's tree. Should it
		// not, the whole parse is right: analyse this version again.
		s.log.Printf("%s: the chunked parse differs from the whole file's; analysing again", d.uri)
		s.mu.Lock()
		defer s.mu.Unlock()
		if d.snap == snap && ctx.Err() == nil {
			d.snap = s.newSnapshot(d, snap.version, snap.src, snap.mapper, whole, snap.settings, snap.skip)
			s.scheduleDiagnostics(d)
		}
	}()
}

// complete parses the whole file of snap, whose tree was parsed in chunks,
// once its first analysis is done (or after a moment); nil when it fails
// or ctx is cancelled.
func complete(ctx context.Context, snap *snapshot, logf func(string, ...any), uri string) *pyast.Tree {
	select {
	case <-snap.analysed:
	case <-time.After(250 * time.Millisecond):
	case <-ctx.Done():
		snap.tree.Release()
		return nil
	}
	whole, err := snap.tree.Complete(ctx)
	if err != nil {
		if ctx.Err() == nil {
			logf("%s: parsing the whole file: %v", uri, err)
		}
		return nil
	}
	return whole
}

// completed waits for the whole-file parse of d's tree and returns it, or
// nil when there is none (the next version is then parsed afresh).
func (d *document) completed() *pyast.Tree {
	if d.whole == nil {
		return nil
	}
	<-d.whole.done
	tree := d.whole.tree
	d.whole = nil
	return tree
}

// stopCompletion cancels d's background whole-file parse, if any.
func (d *document) stopCompletion() {
	if d.whole != nil {
		d.whole.cancel()
		d.whole = nil
	}
}

// snapshot is one version of a document, never modified: requests and the
// diagnostics worker read it without locks.
type snapshot struct {
	uri      string
	path     string
	version  int32
	src      []byte
	tree     *pyast.Tree // nil when the source is not analysed (too large)
	mapper   *analysis.Mapper
	settings *analysis.Settings
	encoding analysis.Encoding
	runner   *analysis.Runner
	skip     error // why the source is not analysed

	// base is the analysis of an earlier version, whose segments this
	// version's analysis reuses; dropped once this version is analysed,
	// so that only the current version's model stays alive.
	base atomic.Pointer[analysis.Result]
	// onSave marks a document larger than maxLiveFileSize: it has no tree,
	// and is analysed (from scratch, then compacted) only when saved is
	// set: on open and on save.
	onSave, saved bool

	once     sync.Once
	result   *analysis.Result
	analysed chan struct{} // closed once result is set
}

// analyze returns the analysis of this version, computing it once.
func (s *snapshot) analyze() *analysis.Result {
	s.once.Do(func() {
		defer close(s.analysed)
		name := s.path
		if name == "" {
			name = s.uri
		}
		switch {
		case s.onSave && s.saved && s.skip == nil:
			res, err := s.runner.Run(context.Background(), name, s.src, s.settings)
			if err != nil {
				return
			}
			res.Compact()
			s.result = res
			go pyast.ReleaseMemory() // the model of a large file is gone
		case s.tree != nil:
			s.result = s.runner.AnalyzeTree(s.base.Load(), name, s.src, s.tree, s.settings)
			s.base.Store(nil)
		}
	})
	return s.result
}

// model returns the analysis of this version if it is done, or else the
// one it would build on: the base for the next version.
func (s *snapshot) model() *analysis.Result {
	select {
	case <-s.analysed:
		if s.result != nil {
			return s.result
		}
	default:
	}
	return s.base.Load()
}

// lspDocument is the snapshot as codeactions sees it.
func (s *snapshot) lspDocument() codeactions.Document {
	return codeactions.Document{URI: protocol.DocumentURI(s.uri), Version: s.version, Mapper: s.mapper, Encoding: s.encoding}
}

// newSnapshot makes the snapshot of a version of a document: its text (with
// its line index) and tree.
func (s *Server) newSnapshot(d *document, version int32, src []byte, mapper *analysis.Mapper, tree *pyast.Tree, settings *analysis.Settings, skip error) *snapshot {
	return &snapshot{
		analysed: make(chan struct{}),
		uri:      d.uri, path: d.path, version: version, src: src, tree: tree,
		mapper: mapper, settings: settings,
		encoding: s.encoding, runner: s.runner, skip: skip,
	}
}

// parse parses the editor's text, src, incrementally where it can.
// Sources vramlint does not analyse, and large ones analysed on save, get
// no tree.
func parse(ed *pyast.Editor, src []byte, onSave bool) (*pyast.Tree, error) {
	if err := analysis.CheckSource(src); err != nil {
		return nil, err
	}
	if onSave {
		return nil, nil
	}
	return ed.Parse(context.Background())
}

// analysedOnSave reports whether a text of n bytes is too large to analyse
// as it is typed, saying so once per document. Call with s.mu held.
func (s *Server) analysedOnSave(uri string, n int) bool {
	limit := s.editor.maxLiveFileSize
	if limit <= 0 || n <= limit {
		return false
	}
	if !s.toldOnSave[uri] {
		s.toldOnSave[uri] = true
		s.notify("window/showMessage", map[string]any{"type": messageInfo, "message": fmt.Sprintf(
			"vramlint: %s is %.1f MB, over maxLiveFileSize (%.1f MB): it is analysed when opened and saved, not as you type",
			filepath.Base(uri), float64(n)/(1<<20), float64(limit)/(1<<20))})
	}
	return true
}

// settingsFor loads the settings for a document: the nearest
// pyproject.toml with [tool.vramlint] above the file (or the first
// workspace folder, for untitled buffers), then the editor's settings.
// A broken configuration file is shown once; the defaults apply.
// Call with s.mu held.
func (s *Server) settingsFor(path string) *analysis.Settings {
	dir := ""
	switch {
	case path != "":
		dir = filepath.Dir(path)
	case len(s.folders) > 0:
		dir = s.folders[0]
	}
	settings := &analysis.Settings{Root: dir}
	if dir != "" {
		found, err := analysis.FindSettings(dir)
		var ce *analysis.ConfigError
		if errors.As(err, &ce) && !s.reported[ce.File] {
			s.reported[ce.File] = true
			s.tell(messageError, "invalid configuration, using the defaults: %v", err)
			s.notify("window/showMessage", map[string]any{"type": messageError, "message": "vramlint: invalid configuration: " + err.Error()})
		}
		if found != nil {
			settings = found
		}
	}
	merged, err := settings.WithOverrides(s.editor.overrides)
	if err != nil {
		return settings
	}
	return merged
}
