package server

import (
	"context"
	"encoding/json"

	"go.lsp.dev/protocol"

	"github.com/vramlint/vramlint/codeactions"
)

type codeActionParams struct {
	TextDocument struct {
		URI string `json:"uri"`
	} `json:"textDocument"`
	Range   protocol.Range `json:"range"`
	Context struct {
		Only        []protocol.CodeActionKind `json:"only"`
		TriggerKind int                       `json:"triggerKind"`
	} `json:"context"`
}

// codeAction answers from the snapshot of the current version, with the
// diagnostics and fixes computed together for it.
func (s *Server) codeAction(params json.RawMessage) (requestWork, error) {
	var p codeActionParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, invalidParams("textDocument/codeAction", err)
	}
	snap, err := s.snapshotOf(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	documentChanges := s.client.Workspace.WorkspaceEdit.DocumentChanges
	related := s.client.TextDocument.PublishDiagnostics.RelatedInformation
	s.mu.Unlock()
	return func(ctx context.Context) (any, error) {
		res := snap.analyze()
		if res == nil {
			return []protocol.CodeAction{}, nil
		}
		doc := snap.lspDocument()
		start, _ := doc.Offset(p.Range.Start)
		end, _ := doc.Offset(p.Range.End)
		return doc.CodeActions(ctx, res, codeactions.ActionRequest{
			Start: start, End: max(start, end),
			Only:            p.Context.Only,
			Automatic:       p.Context.TriggerKind == 2,
			Unsafe:          snap.settings.UnsafeFixes,
			DocumentChanges: documentChanges,
			Rules:           s.opts.Rules,
			Related:         related,
			FixAll: func(ctx context.Context, unsafe bool) ([]byte, error) {
				fixed, err := codeactions.FixAll(ctx, snap.runner, snap.uri, snap.src, snap.settings, codeactions.Preferred(unsafe))
				if err != nil {
					return nil, err
				}
				return fixed.Source, nil
			},
		}), nil
	}, nil
}
