package server

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/vramlint/vramlint/analysis/pyast"
	"go.lsp.dev/protocol"

	"github.com/vramlint/vramlint/analysis"
)

// textDocumentID names a document in a request's params.
type textDocumentID struct {
	URI string `json:"uri"`
}

// documentParams are the params of the notifications that only name a
// document (didSave, didClose).
type documentParams struct {
	TextDocument textDocumentID `json:"textDocument"`
}

type didOpenParams struct {
	TextDocument struct {
		URI        string      `json:"uri"`
		LanguageID string      `json:"languageId"`
		Version    json.Number `json:"version"`
		Text       string      `json:"text"`
	} `json:"textDocument"`
}

func (s *Server) didOpen(params json.RawMessage) error {
	received := time.Now()
	p, err := decodeDidOpen(params)
	if err != nil {
		return fmt.Errorf("didOpen: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopIdleCollect()
	td := p.TextDocument
	if old := s.docs[td.URI]; old != nil {
		old.stopDiagnostics()
	}
	d := &document{uri: td.URI, analysing: make(chan struct{}, 1)}
	d.path, _ = filePath(td.URI)
	src := []byte(td.Text)
	onSave := s.analysedOnSave(td.URI, len(src))
	// Its first analysis gives the workspace index its summary: told
	// before the parse, so that the index, if it is being built, does not
	// parse the same file at the same moment.
	ix := s.projects.For(d.path)
	if ix != nil && d.path != "" && !onSave {
		ix.Opening(d.path)
	}
	parsing := time.Now()
	// The indexing waits for the parse and the analysis (see
	// foregroundWork), and a large file it is parsing is left for later:
	// begun first, so that the file is not taken up again at once.
	s.foreground.begin()
	s.projects.Yield()
	tree, skip := parse(pyast.NewEditor(nil, src), src, onSave, false)
	s.foreground.end()
	parsed := time.Now()
	if tree != nil && !onSave && len(src) >= prepareOnOpen {
		prepareForEdits(tree)
	}
	if skip != nil {
		s.tell(messageWarning, "%s is not analysed: %v", td.URI, skip)
		if ix != nil && d.path != "" && !onSave {
			// Not analysed as a buffer: the file on disk counts.
			if left := s.closeInIndex(ix, d.path, td.URI); left != nil {
				go left()
			}
		}
	}
	version, _ := clampNumber(td.Version, 0, math.MaxInt32)
	d.snap = s.newSnapshot(d, int32(version), src, analysis.NewMapper(src), tree, s.settingsFor(d.path), skip)
	d.snap.onSave, d.snap.saved = onSave, onSave // analysed once opened
	d.snap.received, d.snap.parsing, d.snap.parsed = received, parsing, parsed
	s.docs[td.URI] = d
	s.editing = td.URI
	s.scheduleDiagnostics(d)
	return nil
}

// didChangeParams is decoded here rather than with protocol v0.12.0's
// types: their Range is a value, so a whole-document change (no range)
// would look like an insertion at 0:0; and their positions are uint32 and
// versions int32, so one number out of range would drop the whole change
// and leave the server's text behind the editor's. Numbers are read as
// they come and clamped.
type didChangeParams struct {
	TextDocument struct {
		URI     string      `json:"uri"`
		Version json.Number `json:"version"`
	} `json:"textDocument"`
	ContentChanges []struct {
		Range *wireRange `json:"range"`
		Text  string     `json:"text"`
	} `json:"contentChanges"`
}

type wireRange struct {
	Start wirePosition `json:"start"`
	End   wirePosition `json:"end"`
}

type wirePosition struct {
	Line      json.Number `json:"line"`
	Character json.Number `json:"character"`
}

func (r wireRange) String() string {
	return fmt.Sprintf("%s:%s-%s:%s", r.Start.Line, r.Start.Character, r.End.Line, r.End.Character)
}

// clampNumber reads n as an integer in [lo, hi], saying whether it had to
// be clamped (a fraction, a sign, or a size out of range).
func clampNumber(n json.Number, lo, hi int64) (int64, bool) {
	if n == "" { // absent
		return max(lo, min(0, hi)), false
	}
	if i, err := n.Int64(); err == nil {
		if i < lo {
			return lo, true
		}
		if i > hi {
			return hi, true
		}
		return i, false
	}
	f, err := n.Float64()
	switch {
	case err != nil && f == 0: // not a number at all
		return lo, true
	case f <= float64(lo):
		return lo, true
	case f >= float64(hi):
		return hi, true
	}
	return int64(f), true
}

// position is a wire position clamped to the Mapper's int range.
func (p wirePosition) position() (analysis.Position, bool) {
	line, c1 := clampNumber(p.Line, 0, math.MaxInt32)
	col, c2 := clampNumber(p.Character, 0, math.MaxInt32)
	return analysis.Position{Line: int(line), Column: int(col)}, c1 || c2
}

func (s *Server) didChange(params json.RawMessage) error {
	received := time.Now()
	var p didChangeParams
	if err := json.Unmarshal(params, &p); err != nil {
		return s.forgetUnappliable(params, err)
	}
	version, clamped := clampNumber(p.TextDocument.Version, 0, math.MaxInt32)
	if clamped {
		s.log.Printf("%s: version %s is out of range; taken as %d", p.TextDocument.URI, p.TextDocument.Version, version)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopIdleCollect()
	d := s.docs[p.TextDocument.URI]
	if d == nil {
		return fmt.Errorf("didChange for %s, which is not open", p.TextDocument.URI)
	}
	if int32(version) <= d.snap.version {
		// The spec says versions only increase; apply the change anyway,
		// since the client's buffer already has it.
		s.log.Printf("%s: version went from %d to %d", d.uri, d.snap.version, version)
	}
	s.editing = d.uri
	// The old snapshot's tree stays as it was. Analysed at once, the
	// version's spares wait for its diagnostics to be sent (see
	// prepareWhenIdle); with a debounce, they are made while it waits.
	ed := pyast.NewEditor(d.snap.tree, d.snap.src)
	if s.editor.debounce <= 0 {
		ed.PrepareSparesLater()
	}
	mapper := d.snap.mapper
	for _, c := range p.ContentChanges {
		if c.Range == nil {
			ed.ReplaceAll([]byte(c.Text)) // the whole document
			mapper = analysis.NewMapper(ed.Text())
			continue
		}
		start, clampedStart := offset(mapper, c.Range.Start, s.encoding)
		end, clampedEnd := offset(mapper, c.Range.End, s.encoding)
		if clampedStart || clampedEnd {
			s.log.Printf("%s: change range %v lies past the end of the document; clamped", d.uri, *c.Range)
		}
		if end < start {
			s.log.Printf("%s: change range %v ends before it starts; treated as empty", d.uri, *c.Range)
			end = start
		}
		ed.Replace(start, end, c.Text)
		mapper = mapper.Edited(ed.Text(), start, end, start+len(c.Text))
	}
	src := ed.Text()
	onSave := s.analysedOnSave(d.uri, len(src))
	if !onSave && d.snap.onSave {
		ed = pyast.NewEditor(nil, src) // small enough again: a fresh parse
	}
	// The last version's text was checked if it was taken for analysis.
	parsing := time.Now()
	tree, skip := parse(ed, src, onSave, d.snap.skip == nil)
	parsed := time.Now()
	if skip != nil && d.snap.skip == nil {
		s.tell(messageWarning, "%s is no longer analysed: %v", d.uri, skip)
	}
	base, old := d.snap.model(), d.snap
	d.snap = s.newSnapshot(d, int32(version), src, mapper, tree, old.settings, skip)
	d.snap.onSave = onSave
	d.snap.received, d.snap.parsing, d.snap.parsed = received, parsing, parsed
	if onSave && s.releaseDue {
		// No analysis follows this change to start the wait for the
		// release again (see stopIdleCollect): it starts now.
		s.releaseWhenIdle()
	}
	if onSave {
		// The diagnostics of the last save stay until the next one, and
		// an analysis still running for it goes on.
		if old.saved {
			d.lastSaved = old
		}
		return nil
	}
	d.lastSaved = nil // analysed as it is typed again
	if base != nil && base.Model() != nil {
		d.snap.base.Store(base)
	}
	s.scheduleDiagnostics(d)
	return nil
}

// didSave analyses a document that is analysed on save only; the others
// are analysed as they change.
func (s *Server) didSave(params json.RawMessage) error {
	var p documentParams
	if err := json.Unmarshal(params, &p); err != nil {
		return fmt.Errorf("didSave: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.docs[p.TextDocument.URI]
	if d != nil && s.editor.workspaceMode {
		// What the other files see of it is on disk now.
		s.workspaceDiagnostics()
	}
	if d == nil || !d.snap.onSave || d.snap.saved {
		return nil
	}
	old := d.snap
	d.snap = s.newSnapshot(d, old.version, old.src, old.mapper, nil, old.settings, old.skip)
	d.snap.onSave, d.snap.saved = true, true
	s.scheduleDiagnostics(d)
	return nil
}

// offset converts a client position, clamping one past the end of its line
// or of the document (or out of any range).
func offset(m *analysis.Mapper, wp wirePosition, enc analysis.Encoding) (int, bool) {
	p, clamped := wp.position()
	off, err := m.Offset(p, enc)
	if err != nil {
		return off, true
	}
	end := m.Position(m.LineEnd(p.Line), enc)
	return off, clamped || p.Column > end.Column
}

// forgetUnappliable handles a didChange that cannot be read at all: the
// server cannot know the editor's text any more, so it drops the document
// (and its diagnostics) and asks the user to reopen it, rather than go on
// analysing a text that is not the editor's.
func (s *Server) forgetUnappliable(params json.RawMessage, err error) error {
	var p documentParams
	if json.Unmarshal(params, &p) != nil {
		return fmt.Errorf("didChange: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.docs[p.TextDocument.URI] == nil {
		return fmt.Errorf("didChange: %w", err)
	}
	s.closeDocument(p.TextDocument.URI)
	s.notify("window/showMessage", map[string]any{
		"type":    messageError,
		"message": "vramlint: could not apply an edit to " + p.TextDocument.URI + "; close and reopen it to analyse it again",
	})
	return fmt.Errorf("didChange: %w; %s dropped", err, p.TextDocument.URI)
}

func (s *Server) didClose(params json.RawMessage) error {
	var p documentParams
	if err := json.Unmarshal(params, &p); err != nil {
		return fmt.Errorf("didClose: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeDocument(p.TextDocument.URI)
	return nil
}

// prepareOnOpen is the size from which an opened document gets its spares
// made ready (see pyast.Tree.PrepareForEdits) beside its first analysis:
// the first keystroke in a 50,000-line file (1.8 MB) otherwise copied its
// laid-out text, 5 MB, into fresh pages, 4 ms of its 12. Smaller files
// copy in a fraction of a millisecond, and fifty of them opened together
// would fill the spares' budget with texts no keystroke takes.
const prepareOnOpen = 1 << 20

// largeDocument is the size from which closing a document returns memory
// to the system at once.
const largeDocument = 256 << 10

// closeDocument forgets uri's document and clears its diagnostics; s.mu is
// held.
func (s *Server) closeDocument(uri string) {
	d := s.docs[uri]
	if d == nil {
		return
	}
	d.stopDiagnostics()
	delete(s.docs, uri)
	left := s.forgetModel(d)
	if len(d.snap.src) >= largeDocument {
		// Give its memory back to the system now, rather than let the
		// server look as large as its largest document ever was; after
		// the index's work on the closed file, which holds its model or
		// a parse of it from disk: given back beside it, a closed
		// 50,000-line file left the server at 80 MiB instead of 20.
		go func() {
			if left != nil {
				left()
			}
			s.giveMemoryBack()
		}()
	} else {
		// The same once the editor stops closing documents: fifty closed
		// 250 KB files left the server larger than while they were open.
		if left != nil {
			go left()
		}
		s.releaseWhenIdle()
	}
	if !s.pullMode() {
		// Clearing is an empty array, never null.
		s.publishDiagnostics(protocol.PublishDiagnosticsParams{
			URI: protocol.DocumentURI(d.uri), Diagnostics: []protocol.Diagnostic{},
		})
	}
}
