package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/workspace"
	"github.com/vramlint/vramlint/codeactions"
)

// With diagnosticMode "workspace" (as pyright has), the files of the
// workspace folders that are not open are reported too: pushed after the
// folder is indexed, when one changes on disk, after a save and when the
// settings change; or, for a client that pulls, answered to
// workspace/diagnostic. An open file's diagnostics are its buffer's. The
// results are kept by the file's text and the index's generation, so a
// pass after a save re-analyses only what may have changed.

// closedFiles are the workspace diagnostics of files that are not open.
type closedFiles struct {
	cancel    context.CancelFunc      // the running push pass
	results   map[string]closedResult // by path
	published map[string]bool         // URIs pushed with diagnostics
}

type closedResult struct {
	key string // the text's hash and the generation it was analysed at
	res *analysis.Result
}

// workspaceDiagnostics starts a pass over the workspace's closed files, or,
// in openFilesOnly mode, withdraws what earlier passes pushed. A pulling
// client is told to pull again instead. Call with s.mu held.
func (s *Server) workspaceDiagnostics() {
	if s.closed.cancel != nil {
		s.closed.cancel()
		s.closed.cancel = nil
	}
	if !s.editor.workspaceMode {
		for u := range s.closed.published {
			s.publishDiagnostics(protocol.PublishDiagnosticsParams{URI: protocol.DocumentURI(u), Diagnostics: []protocol.Diagnostic{}})
		}
		s.closed.results, s.closed.published = nil, nil
		return
	}
	if s.pullMode() {
		return // refreshAll and the index ask the client to pull again
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.closed.cancel = cancel
	indexes := s.projects.All()
	go func() {
		defer cancel()
		var files []string
		for _, ix := range indexes {
			files = append(files, ix.Files()...)
		}
		progress := s.startProgress(ctx, "Analysing the workspace", cancel)
		listed := map[string]bool{}
		for i, path := range files {
			if ctx.Err() != nil {
				break
			}
			listed[string(uri.File(path))] = true
			s.publishClosed(ctx, path)
			progress.report(i+1, len(files))
		}
		progress.end("")
		// Files that are gone (deleted, now excluded) keep no diagnostics.
		s.mu.Lock()
		defer s.mu.Unlock()
		for u, shown := range s.closed.published {
			if shown && !listed[u] && ctx.Err() == nil {
				s.closed.published[u] = false
				s.publishDiagnostics(protocol.PublishDiagnosticsParams{URI: protocol.DocumentURI(u), Diagnostics: []protocol.Diagnostic{}})
			}
		}
	}()
}

// publishClosed pushes the diagnostics of path unless it is open.
func (s *Server) publishClosed(ctx context.Context, path string) {
	res, _, ok := s.closedResult(ctx, path)
	u := string(uri.File(path))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isOpen(path) || ctx.Err() != nil || !s.editor.workspaceMode {
		return
	}
	if !ok {
		res = nil // deleted, or no longer Python vramlint reads: withdraw
		delete(s.closed.results, path)
	}
	diags := s.closedDocument(u, res).Diagnostics(res, s.opts.Rules, s.client.TextDocument.PublishDiagnostics.RelatedInformation)
	if len(diags) == 0 && !s.closed.published[u] {
		return // nothing to say, nothing to withdraw
	}
	if s.closed.published == nil {
		s.closed.published = map[string]bool{}
	}
	s.closed.published[u] = len(diags) > 0
	s.publishDiagnostics(protocol.PublishDiagnosticsParams{URI: protocol.DocumentURI(u), Diagnostics: diags})
}

// closedDocument is a closed file's analysis as codeactions sees it.
func (s *Server) closedDocument(u string, res *analysis.Result) codeactions.Document {
	doc := codeactions.Document{URI: protocol.DocumentURI(u), Encoding: s.encoding}
	if res != nil && res.Src != nil {
		doc.Mapper = res.Mapper()
	}
	return doc
}

// isOpen reports whether a document of path is open. Call with s.mu held.
func (s *Server) isOpen(path string) bool {
	for _, d := range s.docs {
		if d.path == path {
			return true
		}
	}
	return false
}

// openPaths are the paths of the open documents. Call without s.mu held.
func (s *Server) openPaths() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	open := map[string]bool{}
	for _, d := range s.docs {
		open[d.path] = true
	}
	return open
}

// closedResult analyses the file at path as it is on disk, or returns the
// result kept for the same text and generation; ok is false when it cannot
// be read or is not Python vramlint analyses.
func (s *Server) closedResult(ctx context.Context, path string) (*analysis.Result, string, bool) {
	src, err := analysis.ReadFile(path)
	if err != nil || analysis.CheckSource(src) != nil {
		return nil, "", false
	}
	sum := sha256.Sum256(src)
	key := hex.EncodeToString(sum[:8]) + "-" + strconv.FormatUint(s.projects.Generation(path), 10)
	s.mu.Lock()
	if r, ok := s.closed.results[path]; ok && r.key == key {
		s.mu.Unlock()
		return r.res, key, true
	}
	settings := s.settingsFor(path)
	s.mu.Unlock()
	var res *analysis.Result
	if settings != nil && workspace.WorthAnalysing(s.projects.For(path), path, src) {
		if res, err = s.runner.Run(ctx, path, src, settings); err != nil {
			return nil, "", false
		}
		s.logRuleErrors(path, res)
		res.Compact()
	}
	s.mu.Lock()
	if s.closed.results == nil {
		s.closed.results = map[string]closedResult{}
	}
	s.closed.results[path] = closedResult{key: key, res: res}
	s.mu.Unlock()
	return res, key, true
}

// workspaceDiagnosticRequest answers workspace/diagnostic (LSP 3.17): the
// closed files' reports, "unchanged" where the client has the same.
func (s *Server) workspaceDiagnosticRequest(params json.RawMessage) (requestWork, error) {
	var p struct {
		PreviousResultIDs []struct {
			URI   string `json:"uri"`
			Value string `json:"value"`
		} `json:"previousResultIds"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, invalidParams("workspace/diagnostic", err)
	}
	previous := map[string]string{}
	for _, r := range p.PreviousResultIDs {
		previous[r.URI] = r.Value
	}
	s.mu.Lock()
	mode := s.editor.workspaceMode
	related := s.client.TextDocument.PublishDiagnostics.RelatedInformation
	s.mu.Unlock()
	indexes := s.projects.All()
	return func(ctx context.Context) (any, error) {
		items := []any{}
		if !mode {
			return map[string]any{"items": items}, nil
		}
		for _, ix := range indexes {
			for _, path := range ix.Files() {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				s.mu.Lock()
				open := s.isOpen(path)
				s.mu.Unlock()
				if open {
					continue // its document's own pull reports it
				}
				res, key, ok := s.closedResult(ctx, path)
				if !ok {
					continue
				}
				u := string(uri.File(path))
				if previous[u] == key {
					items = append(items, map[string]any{"kind": "unchanged", "uri": u, "version": nil, "resultId": key})
					continue
				}
				items = append(items, map[string]any{
					"kind": "full", "uri": u, "version": nil, "resultId": key,
					"items": s.closedDocument(u, res).Diagnostics(res, s.opts.Rules, related),
				})
			}
		}
		return map[string]any{"items": items}, nil
	}, nil
}
