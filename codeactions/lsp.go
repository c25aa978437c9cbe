package codeactions

import (
	"context"
	"fmt"
	"strings"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/vramlint/vramlint/analysis"
)

// Code action kinds vramlint offers. protocol v0.12.0 stops at
// source.organizeImports, so source.fixAll is spelled out here.
const (
	KindQuickFix protocol.CodeActionKind = "quickfix"
	KindFixAll   protocol.CodeActionKind = "source.fixAll.vramlint"
)

// Document is what converting analysis results to LSP needs to know about
// one document version: the mapper is the one edge where byte offsets
// become line/column positions.
type Document struct {
	URI      protocol.DocumentURI
	Version  int32
	Mapper   *analysis.Mapper
	Encoding analysis.Encoding
}

// Position converts a byte offset.
func (d Document) Position(off int) protocol.Position {
	p := d.Mapper.Position(off, d.Encoding)
	return protocol.Position{Line: uint32(p.Line), Character: uint32(p.Column)}
}

// Range converts a byte range.
func (d Document) Range(start, end int) protocol.Range {
	return protocol.Range{Start: d.Position(start), End: d.Position(end)}
}

// Offset converts a position, clamping a position past the end of a line
// or of the document (the second result says whether it was clamped).
func (d Document) Offset(p protocol.Position) (int, bool) {
	off, err := d.Mapper.Offset(analysis.Position{Line: int(p.Line), Column: int(p.Character)}, d.Encoding)
	return off, err != nil
}

// TextEdits converts byte edits.
func (d Document) TextEdits(edits []analysis.Edit) []protocol.TextEdit {
	out := make([]protocol.TextEdit, 0, len(edits))
	for _, e := range edits {
		out = append(out, protocol.TextEdit{Range: d.Range(e.Start, e.End), NewText: e.NewText})
	}
	return out
}

// crossFileEdit is the edit of a fix that also edits other files, nil when
// one of them no longer holds the text the fix was computed on.
func (d Document) crossFileEdit(res *analysis.Result, fix analysis.Fix, req ActionRequest) *protocol.WorkspaceEdit {
	if req.Other == nil {
		return nil
	}
	edit := d.WorkspaceEdit(fix.Edits, req.DocumentChanges)
	for _, o := range fix.Others {
		other, versioned, ok := req.Other(o.Path, res.Others[o.Path])
		if !ok {
			return nil
		}
		te := other.TextEdits(o.Edits)
		if !req.DocumentChanges {
			edit.Changes[other.URI] = te
			continue
		}
		id := protocol.OptionalVersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: other.URI}}
		if versioned {
			version := other.Version
			id.Version = &version
		}
		edit.DocumentChanges = append(edit.DocumentChanges, protocol.TextDocumentEdit{TextDocument: id, Edits: te})
	}
	return edit
}

// WorkspaceEdit wraps edits to this document version: as documentChanges
// when the client supports them, else as plain changes (Neovim 0.7).
func (d Document) WorkspaceEdit(edits []analysis.Edit, documentChanges bool) *protocol.WorkspaceEdit {
	te := d.TextEdits(edits)
	if documentChanges {
		return &protocol.WorkspaceEdit{DocumentChanges: []protocol.TextDocumentEdit{{
			TextDocument: protocol.OptionalVersionedTextDocumentIdentifier{
				TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: d.URI},
				Version:                &d.Version,
			},
			Edits: te,
		}}}
	}
	return &protocol.WorkspaceEdit{Changes: map[protocol.DocumentURI][]protocol.TextEdit{d.URI: te}}
}

// FixData is what a diagnostic's `data` carries: its fixes as LSP edits of
// the version it was computed for.
type FixData struct {
	Version int32     `json:"version"`
	Fixes   []FixEdit `json:"fixes"`
}

// FixEdit is one fix in FixData.
type FixEdit struct {
	Title  string              `json:"title"`
	Safety string              `json:"safety"`
	Edits  []protocol.TextEdit `json:"edits"`
	// AlsoEdits names the other files a cross-file fix edits (its code
	// action carries those edits too).
	AlsoEdits []string `json:"alsoEdits,omitempty"`
}

var severities = map[analysis.Severity]protocol.DiagnosticSeverity{
	analysis.SeverityError:   protocol.DiagnosticSeverityError,
	analysis.SeverityWarning: protocol.DiagnosticSeverityWarning,
	analysis.SeverityInfo:    protocol.DiagnosticSeverityInformation,
	analysis.SeverityHint:    protocol.DiagnosticSeverityHint,
}

// Diagnostic converts one diagnostic. Related locations are included only
// when the client supports them.
//
// Related places in other files (res.Others holds their text) point at
// those files.
func (d Document) Diagnostic(diag analysis.Diagnostic, rule *analysis.Rule, related bool, others map[string][]byte) protocol.Diagnostic {
	out := protocol.Diagnostic{
		Range:    d.Range(diag.Start, diag.End),
		Severity: severities[diag.Severity],
		Code:     diag.Code,
		Source:   "vramlint",
		Message:  diag.Message,
	}
	if rule != nil {
		out.CodeDescription = &protocol.CodeDescription{Href: protocol.URI(rule.DocURL())}
	}
	if related {
		for _, r := range diag.Related {
			loc := protocol.Location{URI: d.URI, Range: d.Range(r.Start, r.End)}
			if r.Path != "" {
				src, ok := others[r.Path]
				if !ok {
					continue
				}
				other := Document{URI: protocol.DocumentURI(uri.File(r.Path)), Mapper: analysis.NewMapper(src), Encoding: d.Encoding}
				loc = protocol.Location{URI: other.URI, Range: other.Range(r.Start, r.End)}
			}
			out.RelatedInformation = append(out.RelatedInformation, protocol.DiagnosticRelatedInformation{Location: loc, Message: r.Message})
		}
	}
	data := FixData{Version: d.Version, Fixes: []FixEdit{}}
	for _, f := range diag.Fixes {
		fe := FixEdit{Title: f.Title, Safety: f.Applicability.String(), Edits: d.TextEdits(f.Edits)}
		for _, o := range f.Others {
			fe.AlsoEdits = append(fe.AlsoEdits, o.Path)
		}
		data.Fixes = append(data.Fixes, fe)
	}
	out.Data = data
	return out
}

// Diagnostics converts a result's diagnostics (never nil: an empty list
// clears the client's).
func (d Document) Diagnostics(res *analysis.Result, rules []*analysis.Rule, related bool) []protocol.Diagnostic {
	out := []protocol.Diagnostic{}
	if res == nil {
		return out
	}
	for _, diag := range res.Diagnostics {
		out = append(out, d.Diagnostic(diag, analysis.FindRule(rules, diag.Code), related, res.Others))
	}
	return out
}

// Action is a code action, with the data codeAction/resolve reads back:
// protocol v0.12.0's CodeAction has no data field.
type Action struct {
	protocol.CodeAction
	Data *FixAllData `json:"data,omitempty"`
}

// FixAllData identifies a fix-all action whose edit is computed when the
// client resolves it: the document version it was offered for, and whether
// unsafe fixes were on.
type FixAllData struct {
	URI     protocol.DocumentURI `json:"uri"`
	Version int32                `json:"version"`
	Unsafe  bool                 `json:"unsafe"`
}

// FixAllTitle is the fix-all action's title.
const FixAllTitle = "vramlint: Fix all auto-fixable problems"

// ActionRequest is a textDocument/codeAction request, decoded and mapped
// to byte offsets.
type ActionRequest struct {
	Start, End      int
	Only            []protocol.CodeActionKind
	Automatic       bool // triggerKind 2: only quick fixes, unless `only` names a kind
	Unsafe          bool // unsafe fixes in source.fixAll
	DocumentChanges bool
	Rules           []*analysis.Rule
	Related         bool
	// FixAll computes the file after all applicable fixes (in rounds).
	FixAll func(ctx context.Context, unsafe bool) ([]byte, error)
	// ResolveEdits: the client resolves a code action's edit lazily
	// (codeAction/resolve), so fix-all can be listed without computing it.
	ResolveEdits bool
	// Other finds another file a cross-file fix edits, holding exactly src
	// (the text the fix was computed on): the open document's version, or
	// the file on disk (Version nil). ok is false when it holds something
	// else now; nil offers no cross-file fix.
	Other func(path string, src []byte) (doc Document, versioned bool, ok bool)
}

// asksFor reports whether the request names kind (or a kind above it) in
// its `only` filter, rather than taking whatever there is.
func (r ActionRequest) asksFor(kind protocol.CodeActionKind) bool {
	return len(r.Only) > 0 && r.wants(kind)
}

// wants reports whether the request's `only` filter admits kind.
func (r ActionRequest) wants(kind protocol.CodeActionKind) bool {
	if len(r.Only) == 0 {
		// An automatic request (the lightbulb as the cursor moves) that
		// names no kind gets quick fixes only. One that names a kind gets
		// it: VS Code's editor.codeActionsOnSave sends triggerKind 2 with
		// `only: ["source.fixAll.vramlint"]`.
		return !r.Automatic || kind == KindQuickFix
	}
	for _, o := range r.Only {
		if kind == o || strings.HasPrefix(string(kind), string(o)+".") {
			return true
		}
	}
	return false
}

// CodeActions lists the actions for the diagnostics whose ranges overlap
// the request's: one quick fix per fix, a "Disable ... for this line"
// action, and source.fixAll.vramlint.
//
// The first fix (safe ones come first, see Diagnostic.Fixes) is marked
// isPreferred even when it is unsafe, as its title says: VS Code's "Auto
// Fix" and "Fix all of type" apply only preferred fixes. A display-only
// fix is not offered at all: it has no edits, only advice.
//
// Quick fixes carry their edits, computed with the diagnostics. Fix-all
// reanalyses the file in rounds, far too dear for a request sent on every
// cursor move: it is computed here only when the request asks for it by
// kind (`only: ["source.fixAll"]`, as editors do on save); a client that
// resolves edits gets it listed without one, and the edit comes with
// codeAction/resolve (see ResolveFixAll); other clients get it when they
// ask by kind.
//
// Diagnostics are matched by range overlap with the server's own results,
// not by equality with those the client echoes back: Neovim 0.7 echoes them
// with byte columns instead of UTF-16 ones.
func (d Document) CodeActions(ctx context.Context, res *analysis.Result, req ActionRequest) []Action {
	actions := []Action{}
	if req.wants(KindQuickFix) {
		for _, diag := range res.Diagnostics {
			if !Overlaps(diag.Start, diag.End, req.Start, req.End) {
				continue
			}
			lspDiag := d.Diagnostic(diag, analysis.FindRule(req.Rules, diag.Code), req.Related, res.Others)
			for i, fix := range diag.Fixes {
				if fix.Applicability == analysis.DisplayOnly {
					continue // advice, not an edit: hover and check show it
				}
				title := fix.Title
				if fix.Applicability == analysis.Unsafe {
					title += " (unsafe)"
				}
				edit := d.WorkspaceEdit(fix.Edits, req.DocumentChanges)
				if len(fix.Others) > 0 {
					if edit = d.crossFileEdit(res, fix, req); edit == nil {
						continue // another file changed since: the next analysis offers it again
					}
				}
				actions = append(actions, Action{CodeAction: protocol.CodeAction{
					Title:       "vramlint (" + diag.Code + "): " + title,
					Kind:        KindQuickFix,
					Diagnostics: []protocol.Diagnostic{lspDiag},
					IsPreferred: i == 0,
					Edit:        edit,
				}})
			}
			if edit, ok := res.NoqaEdit(diag); ok {
				actions = append(actions, Action{CodeAction: protocol.CodeAction{
					Title:       "vramlint (" + diag.Code + "): Disable " + diag.Code + " for this line",
					Kind:        KindQuickFix,
					Diagnostics: []protocol.Diagnostic{lspDiag},
					Edit:        d.WorkspaceEdit([]analysis.Edit{edit}, req.DocumentChanges),
				}})
			}
		}
	}
	switch {
	case !req.wants(KindFixAll) || req.FixAll == nil:
	case req.asksFor(KindFixAll):
		if edit := d.fixAllEdit(ctx, res, req); edit != nil {
			actions = append(actions, Action{CodeAction: protocol.CodeAction{Title: FixAllTitle, Kind: KindFixAll, Edit: edit}})
		}
	case req.ResolveEdits && anyApplicable(res, req.Unsafe):
		actions = append(actions, Action{
			CodeAction: protocol.CodeAction{Title: FixAllTitle, Kind: KindFixAll},
			Data:       &FixAllData{URI: d.URI, Version: d.Version, Unsafe: req.Unsafe},
		})
	}
	return actions
}

// ResolveFixAll fills in the edit of a fix-all action listed without one.
func (d Document) ResolveFixAll(ctx context.Context, res *analysis.Result, req ActionRequest, action Action) Action {
	action.Edit = d.fixAllEdit(ctx, res, req)
	if action.Edit == nil {
		action.Edit = &protocol.WorkspaceEdit{} // nothing left to fix
	}
	action.Data = nil
	return action
}

// fixAllEdit is the edit that applies every applicable fix, or nil when
// there is none.
func (d Document) fixAllEdit(ctx context.Context, res *analysis.Result, req ActionRequest) *protocol.WorkspaceEdit {
	fixed, err := req.FixAll(ctx, req.Unsafe)
	if err != nil || string(fixed) == string(res.Src) {
		return nil
	}
	return d.WorkspaceEdit([]analysis.Edit{analysis.MinimalEdit(res.Src, fixed)}, req.DocumentChanges)
}

// anyApplicable reports whether some diagnostic has a fix fix-all applies.
func anyApplicable(res *analysis.Result, unsafe bool) bool {
	for _, diag := range res.Diagnostics {
		for _, fix := range diag.Fixes {
			if Applicable(fix, unsafe) {
				return true
			}
		}
	}
	return false
}

// Overlaps reports whether [a, b) and [c, d) share a byte, or an empty
// range (a cursor) touches the other.
func Overlaps(a, b, c, d int) bool {
	return a < d && c < b || c == d && a <= c && c <= b || a == b && c <= a && a <= d
}

// HoverMarkdown is the hover over a finding (diag) or over a rule's code
// in a `# noqa` comment (diag nil). It opens with one bold title line, not
// a heading (editors render a heading as a banner) with this finding's
// severity, then its explanation, the rule's severity policy, and the
// rule's documentation without the examples.
func HoverMarkdown(rule *analysis.Rule, diag *analysis.Diagnostic) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** `%s`", rule.Code, rule.Name)
	if diag != nil {
		fmt.Fprintf(&b, " · %s", diag.Severity)
	}
	b.WriteString("\n\n")
	if diag != nil {
		// Editors show the message with the hover already (VS Code above
		// it, Neovim as virtual text): the detail is what is new here.
		if diag.Detail != "" {
			b.WriteString(diag.Detail + "\n\n")
		}
	} else {
		b.WriteString(rule.Summary + "\n\n")
	}
	fmt.Fprintf(&b, "Severity: %s.\n\n", rule.SeverityText())
	fmt.Fprintf(&b, "**What it does.** %s\n\n", strings.TrimSpace(rule.Doc.What))
	fmt.Fprintf(&b, "**Why is this bad?** %s\n\n", strings.TrimSpace(rule.Doc.Why))
	fmt.Fprintf(&b, "**Fix safety.** %s\n\n", strings.TrimSpace(rule.Doc.FixSafety))
	fmt.Fprintf(&b, "[Documentation](%s)\n", rule.DocURL())
	return b.String()
}
