package server

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
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
	// analysing is held while a version of the document is analysed for
	// its pushed diagnostics: one at a time (see Server.publish).
	analysing chan struct{}

	// The latest analysis, for the workspace index once the editor pauses
	// (see Server.analyze), the timer that waits for the pause, and how
	// many summaries were made.
	toSummarise  *analysis.Result
	summaryTimer *time.Timer
	summaries    int
	// factsAsked: the other files' facts its calls need were asked for
	// (see Server.askProjectFacts), at the first pause it was current.
	factsAsked bool
	// analyseAgain: answers about other files that its findings waited
	// for came while the current version was being analysed; it is
	// analysed again once that is published (see Server.answersKnown).
	analyseAgain bool

	// lastSaved is the last analysed version of a document analysed on
	// save only, which its unsaved versions show (see current).
	lastSaved *snapshot

	// sent are the diagnostics last published, as encoded (see
	// sentDiagnostics); guarded by Server.mu.
	sent *sentDiagnostics
}

// current reports whether snap's diagnostics are the ones to show: it is
// the current version, or, for a document analysed on save only, the last
// saved one (typing after a save does not discard its analysis).
func (d *document) current(snap *snapshot) bool {
	return d.snap == snap || d.snap.onSave && !d.snap.saved && d.lastSaved == snap
}

// snapshot is one version of a document, never modified: requests and the
// diagnostics worker read it without locks.
type snapshot struct {
	uri     string
	path    string
	version int32
	// resultID names this snapshot's diagnostics for pulling clients: a
	// document is analysed again at the same version when the settings or
	// the workspace index change, and a client that sends the version's
	// report back as its previous result must then get the new one.
	resultID string
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

	// received, parsing and parsed: when the message that made this
	// version was read, and when its parse began and ended (see
	// Options.PhaseTrace).
	received, parsing, parsed time.Time
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
			res.Compact() // the model goes; Server.analyze gives its memory back
			s.result = res
		case s.tree != nil:
			s.result = s.runner.AnalyzeTree(s.base.Load(), name, s.src, s.tree, s.settings)
			s.base.Store(nil)
		}
	})
	return s.result
}

// isAnalysed reports whether this version's analysis is done.
func (s *snapshot) isAnalysed() bool {
	select {
	case <-s.analysed:
		return true
	default:
		return false
	}
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
		resultID: strconv.Itoa(int(version)) + "." + strconv.FormatUint(snapshotSerial.Add(1), 10),
		uri:      d.uri, path: d.path, version: version, src: src, tree: tree,
		mapper: mapper, settings: settings,
		encoding: s.encoding, runner: s.runner, skip: skip,
	}
}

// snapshotSerial numbers snapshots (see snapshot.resultID).
var snapshotSerial atomic.Uint64

// parse parses the editor's text, src, incrementally where it can.
// Sources vramlint does not analyse, and large ones analysed on save, get
// no tree. checked says that the text the editor started from passed
// analysis.CheckSource: only what the changes wrote is checked.
func parse(ed *pyast.Editor, src []byte, onSave, checked bool) (tree *pyast.Tree, skip error) {
	lo, hi, changed := ed.Changed()
	if checked && changed {
		skip = analysis.CheckEdited(src, lo, hi)
	} else {
		skip = analysis.CheckSource(src)
	}
	if skip != nil {
		return nil, skip
	}
	if onSave {
		return nil, nil
	}
	// A panic here (a bug in the parser's mirror) would leave the
	// document without this version's text, and every later change
	// applied to the wrong one: the text is kept, and not analysed.
	defer func() {
		if p := recover(); p != nil {
			tree, skip = nil, fmt.Errorf("internal error while parsing, please report it: %v", p)
		}
	}()
	return parseEditor(ed)
}

// parseEditor parses an editor's text (a variable for tests).
var parseEditor = func(ed *pyast.Editor) (*pyast.Tree, error) { return ed.Parse(context.Background()) }

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
// workspace folder, for untitled buffers), then the editor's settings (its
// folder's over the ones for all).
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
	merged, err := settings.WithOverrides(s.overridesFor(path))
	if err != nil {
		return settings
	}
	return merged
}
