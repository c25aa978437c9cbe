package server

import (
	"context"
	"encoding/json"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"github.com/vramlint/vramlint/codeactions"
)

type codeActionParams struct {
	TextDocument textDocumentID `json:"textDocument"`
	Range        protocol.Range `json:"range"`
	Context      struct {
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
	resolves := s.resolvesEdits()
	s.mu.Unlock()
	return func(ctx context.Context) (any, error) {
		doc := snap.lspDocument()
		start, _ := doc.Offset(p.Range.Start)
		end, _ := doc.Offset(p.Range.End)
		res := s.freshCrossFileFixes(snap, snap.analyze(), start, max(start, end))
		if res == nil {
			return []codeactions.Action{}, nil
		}
		req := s.actionRequest(snap, documentChanges, related)
		req.Start, req.End = start, max(start, end)
		req.Only, req.Automatic, req.ResolveEdits = p.Context.Only, p.Context.TriggerKind == 2, resolves
		return doc.CodeActions(ctx, res, req), nil
	}, nil
}

// actionRequest is what every code action request on snap shares.
func (s *Server) actionRequest(snap *snapshot, documentChanges, related bool) codeactions.ActionRequest {
	return codeactions.ActionRequest{
		Unsafe:          snap.settings.UnsafeFixes,
		DocumentChanges: documentChanges,
		Rules:           s.opts.Rules,
		Related:         related,
		Other:           s.otherDocument,
		FixAll: func(ctx context.Context, unsafe bool) ([]byte, error) {
			fixed, err := codeactions.FixAll(ctx, snap.runner, snap.uri, snap.src, snap.settings, codeactions.Preferred(unsafe))
			if err != nil {
				return nil, err
			}
			return fixed.Source, nil
		},
	}
}

// codeActionResolve fills in the edit of the fix-all action, which
// textDocument/codeAction lists without one for clients that resolve.
// A document changed since is answered with ContentModified: the client
// asks for code actions again.
func (s *Server) codeActionResolve(params json.RawMessage) (requestWork, error) {
	var action codeactions.Action
	if err := json.Unmarshal(params, &action); err != nil {
		return nil, invalidParams("codeAction/resolve", err)
	}
	if action.Data == nil || action.Kind != codeactions.KindFixAll {
		return func(context.Context) (any, error) { return action, nil }, nil // nothing to resolve
	}
	snap, err := s.snapshotOf(string(action.Data.URI))
	if err != nil {
		return nil, err
	}
	if snap.version != action.Data.Version {
		return nil, jsonrpc2.NewError(codeContentModified, "the document changed since the action was offered")
	}
	s.mu.Lock()
	req := s.actionRequest(snap, s.client.Workspace.WorkspaceEdit.DocumentChanges, false)
	s.mu.Unlock()
	req.Unsafe = action.Data.Unsafe
	return func(ctx context.Context) (any, error) {
		res := snap.analyze()
		if res == nil {
			return nil, jsonrpc2.NewError(codeContentModified, "the document is not analysed")
		}
		return snap.lspDocument().ResolveFixAll(ctx, res, req, action), nil
	}, nil
}
