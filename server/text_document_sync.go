package server

import (
	"encoding/json"
	"fmt"

	"github.com/vramlint/vramlint/analysis/pyast"
	"go.lsp.dev/protocol"

	"github.com/vramlint/vramlint/analysis"
)

type didOpenParams struct {
	TextDocument struct {
		URI        string `json:"uri"`
		LanguageID string `json:"languageId"`
		Version    int32  `json:"version"`
		Text       string `json:"text"`
	} `json:"textDocument"`
}

func (s *Server) didOpen(params json.RawMessage) error {
	var p didOpenParams
	if err := json.Unmarshal(params, &p); err != nil {
		return fmt.Errorf("didOpen: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	td := p.TextDocument
	if old := s.docs[td.URI]; old != nil {
		old.stopDiagnostics()
		old.stopCompletion()
	}
	d := &document{uri: td.URI}
	d.path, _ = filePath(td.URI)
	src := []byte(td.Text)
	tree, skip := parse(pyast.NewEditor(nil, src), src)
	if skip != nil {
		s.tell(messageWarning, "%s is not analysed: %v", td.URI, skip)
	}
	d.snap = s.newSnapshot(d, td.Version, src, analysis.NewMapper(src), tree, s.settingsFor(d.path), skip)
	s.completeInBackground(d)
	s.docs[td.URI] = d
	s.scheduleDiagnostics(d)
	return nil
}

// didChangeParams is decoded here rather than with protocol v0.12.0's
// types: their Range is a value, so a whole-document change (no range)
// would look like an insertion at 0:0.
type didChangeParams struct {
	TextDocument struct {
		URI     string `json:"uri"`
		Version int32  `json:"version"`
	} `json:"textDocument"`
	ContentChanges []struct {
		Range *protocol.Range `json:"range"`
		Text  string          `json:"text"`
	} `json:"contentChanges"`
}

func (s *Server) didChange(params json.RawMessage) error {
	var p didChangeParams
	if err := json.Unmarshal(params, &p); err != nil {
		return fmt.Errorf("didChange: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.docs[p.TextDocument.URI]
	if d == nil {
		return fmt.Errorf("didChange for %s, which is not open", p.TextDocument.URI)
	}
	if p.TextDocument.Version <= d.snap.version {
		// The spec says versions only increase; apply the change anyway,
		// since the client's buffer already has it.
		s.log.Printf("%s: version went from %d to %d", d.uri, d.snap.version, p.TextDocument.Version)
	}
	prev := d.snap.tree
	if prev != nil && prev.NeedsCompletion() {
		prev = d.completed() // opened in chunks: wait for the whole parse
	}
	// The editor edits a copy of the tree: the old snapshot's stays as it was.
	ed := pyast.NewEditor(prev, d.snap.src)
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
		mapper = analysis.NewMapper(ed.Text())
	}
	src := ed.Text()
	tree, skip := parse(ed, src)
	if skip != nil && d.snap.skip == nil {
		s.tell(messageWarning, "%s is no longer analysed: %v", d.uri, skip)
	}
	base := d.snap.model()
	d.snap = s.newSnapshot(d, p.TextDocument.Version, src, mapper, tree, d.snap.settings, skip)
	d.snap.base = base
	s.completeInBackground(d) // when a whole new text was parsed in chunks
	s.scheduleDiagnostics(d)
	return nil
}

// offset converts a client position, clamping one past the end of its line
// or of the document.
func offset(m *analysis.Mapper, p protocol.Position, enc analysis.Encoding) (int, bool) {
	off, err := m.Offset(analysis.Position{Line: int(p.Line), Column: int(p.Character)}, enc)
	if err != nil {
		return off, true
	}
	return off, columnPastEnd(m, p, enc)
}

// columnPastEnd reports whether p's column lies beyond its line's end.
func columnPastEnd(m *analysis.Mapper, p protocol.Position, enc analysis.Encoding) bool {
	end := m.Position(m.LineEnd(int(p.Line)), enc)
	return int(p.Character) > end.Column
}

func (s *Server) didClose(params json.RawMessage) error {
	var p struct {
		TextDocument struct {
			URI string `json:"uri"`
		} `json:"textDocument"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return fmt.Errorf("didClose: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.docs[p.TextDocument.URI]
	if d == nil {
		return nil
	}
	d.stopDiagnostics()
	d.stopCompletion()
	delete(s.docs, p.TextDocument.URI)
	if !s.pullMode() {
		// Clearing is an empty array, never null.
		s.notify("textDocument/publishDiagnostics", protocol.PublishDiagnosticsParams{
			URI: protocol.DocumentURI(d.uri), Diagnostics: []protocol.Diagnostic{},
		})
	}
	return nil
}
