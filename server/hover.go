package server

import (
	"context"
	"encoding/json"

	"go.lsp.dev/protocol"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/codeactions"
)

// hover shows a rule's documentation over one of its diagnostics, or over
// its code in a `# noqa: ...` comment.
func (s *Server) hover(params json.RawMessage) (requestWork, error) {
	var p struct {
		TextDocument textDocumentID    `json:"textDocument"`
		Position     protocol.Position `json:"position"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, invalidParams("textDocument/hover", err)
	}
	snap, err := s.snapshotOf(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	return func(context.Context) (any, error) {
		res := snap.analyze()
		if res == nil {
			return nil, nil
		}
		doc := snap.lspDocument()
		off, _ := doc.Offset(p.Position)
		code, start, end := res.NoqaCodeAt(off)
		var diag *analysis.Diagnostic
		for i, d := range res.Diagnostics {
			if code == "" && d.Start <= off && off <= d.End {
				code, start, end, diag = d.Code, d.Start, d.End, &res.Diagnostics[i]
			}
		}
		rule := analysis.FindRule(s.opts.Rules, code)
		if rule == nil {
			return nil, nil
		}
		r := doc.Range(start, end)
		return protocol.Hover{
			Contents: protocol.MarkupContent{Kind: protocol.Markdown, Value: codeactions.HoverMarkdown(rule, diag)},
			Range:    &r,
		}, nil
	}, nil
}
