package server

import (
	"context"
	"encoding/json"
	"net/url"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/codeactions"
)

// clientCapabilities are the client capabilities vramlint acts on, decoded
// from the raw initialize params: protocol v0.12.0 lacks several of them
// (positionEncodings, textDocument.diagnostic).
type clientCapabilities struct {
	General struct {
		PositionEncodings []string `json:"positionEncodings"`
	} `json:"general"`
	TextDocument struct {
		Diagnostic         *json.RawMessage `json:"diagnostic"`
		PublishDiagnostics struct {
			RelatedInformation bool `json:"relatedInformation"`
		} `json:"publishDiagnostics"`
		CodeAction struct {
			DataSupport    bool `json:"dataSupport"`
			ResolveSupport struct {
				Properties []string `json:"properties"`
			} `json:"resolveSupport"`
		} `json:"codeAction"`
	} `json:"textDocument"`
	Workspace struct {
		// Configuration: the client answers workspace/configuration, so
		// settings can be asked for per workspace folder.
		Configuration bool `json:"configuration"`
		WorkspaceEdit struct {
			DocumentChanges bool `json:"documentChanges"`
		} `json:"workspaceEdit"`
		Diagnostics struct {
			RefreshSupport bool `json:"refreshSupport"`
		} `json:"diagnostics"`
		DidChangeWatchedFiles struct {
			DynamicRegistration bool `json:"dynamicRegistration"`
		} `json:"didChangeWatchedFiles"`
	} `json:"workspace"`
	Window struct {
		WorkDoneProgress bool `json:"workDoneProgress"`
	} `json:"window"`
}

type initializeParams struct {
	ProcessID             *int               `json:"processId"`
	RootURI               string             `json:"rootUri"`
	RootPath              string             `json:"rootPath"`
	WorkspaceFolders      []workspaceFolder  `json:"workspaceFolders"`
	InitializationOptions json.RawMessage    `json:"initializationOptions"`
	Capabilities          clientCapabilities `json:"capabilities"`
}

type workspaceFolder struct {
	URI  string `json:"uri"`
	Name string `json:"name"`
}

func (s *Server) initialize(params json.RawMessage) (requestWork, error) {
	var p initializeParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, invalidParams("initialize", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != uninitialized {
		return nil, invalidRequest("initialize was already called")
	}
	s.client = p.Capabilities
	s.encoding = negotiateEncoding(p.Capabilities.General.PositionEncodings)
	for _, f := range p.WorkspaceFolders {
		if path, ok := filePath(f.URI); ok {
			s.folders = append(s.folders, path)
		}
	}
	if len(s.folders) == 0 {
		if path, ok := filePath(p.RootURI); ok {
			s.folders = append(s.folders, path)
		} else if p.RootPath != "" {
			s.folders = append(s.folders, p.RootPath)
		}
	}
	if err := s.editor.apply(p.InitializationOptions); err != nil {
		s.reported["initializationOptions"] = true
		defer s.tell(messageError, "initializationOptions: %v (using the defaults)", err)
	}
	s.state = running
	if p.ProcessID != nil && *p.ProcessID > 0 {
		go s.watchParent(*p.ProcessID)
	}
	result := initializeResult{
		Capabilities: serverCapabilities{
			PositionEncoding: s.encoding.String(),
			TextDocumentSync: textDocumentSyncOptions{OpenClose: true, Change: protocol.TextDocumentSyncKindIncremental, Save: &saveOptions{}},
			CodeActionProvider: codeActionOptions{
				CodeActionKinds: []protocol.CodeActionKind{codeactions.KindQuickFix, codeactions.KindFixAll},
				ResolveProvider: true,
			},
			HoverProvider: true,
			Workspace: map[string]any{
				"workspaceFolders": map[string]any{"supported": true, "changeNotifications": true},
			},
		},
		ServerInfo: serverInfo{Name: "vramlint", Version: s.opts.Version},
	}
	if s.pullMode() {
		// Findings depend on other files (a DataLoader in another module);
		// with diagnosticMode "workspace" closed files are reported too.
		result.Capabilities.DiagnosticProvider = &diagnosticOptions{Identifier: "vramlint", InterFileDependencies: true, WorkspaceDiagnostics: true}
	}
	return func(context.Context) (any, error) { return result, nil }, nil
}

// pullMode reports whether the client pulls diagnostics
// (textDocument/diagnostic); otherwise they are pushed.
// resolvesEdits reports whether the client fills in a code action's edit
// with codeAction/resolve, keeping its data.
func (s *Server) resolvesEdits() bool {
	ca := s.client.TextDocument.CodeAction
	return ca.DataSupport && slices.Contains(ca.ResolveSupport.Properties, "edit")
}

func (s *Server) pullMode() bool { return s.client.TextDocument.Diagnostic != nil }

// negotiateEncoding picks the position encoding: UTF-8 when the client
// offers it (no conversion at all), else UTF-32, else the LSP default UTF-16.
func negotiateEncoding(offered []string) analysis.Encoding {
	best := analysis.UTF16
	for _, e := range offered {
		switch e {
		case "utf-8":
			return analysis.UTF8
		case "utf-32":
			best = analysis.CodePoints
		}
	}
	return best
}

func (s *Server) shutdown(json.RawMessage) (requestWork, error) {
	s.mu.Lock()
	s.state = shuttingDown
	for _, d := range s.docs {
		d.stopDiagnostics()
	}
	s.mu.Unlock()
	return func(context.Context) (any, error) { return nil, nil }, nil
}

// onExit ends the session: status 0 after shutdown, else 1.
func (s *Server) onExit() {
	s.mu.Lock()
	code := 1
	if s.state == shuttingDown {
		code = 0
	}
	s.mu.Unlock()
	select {
	case s.exit <- code:
	default:
	}
}

// watchParent ends the server when the editor's process dies, so that no
// orphaned server outlives its editor.
func (s *Server) watchParent(pid int) {
	for {
		time.Sleep(s.opts.ParentPollInterval)
		if processGone(pid) {
			s.log.Printf("the editor process %d is gone; exiting", pid)
			select {
			case s.exit <- 1:
			default:
			}
			return
		}
	}
}

// Result types protocol v0.12.0 lacks (positionEncoding,
// diagnosticProvider).
type initializeResult struct {
	Capabilities serverCapabilities `json:"capabilities"`
	ServerInfo   serverInfo         `json:"serverInfo"`
}

type serverInfo struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

type serverCapabilities struct {
	PositionEncoding   string                  `json:"positionEncoding"`
	TextDocumentSync   textDocumentSyncOptions `json:"textDocumentSync"`
	CodeActionProvider codeActionOptions       `json:"codeActionProvider"`
	HoverProvider      bool                    `json:"hoverProvider"`
	DiagnosticProvider *diagnosticOptions      `json:"diagnosticProvider,omitempty"`
	Workspace          map[string]any          `json:"workspace"`
}

type textDocumentSyncOptions struct {
	OpenClose bool                          `json:"openClose"`
	Change    protocol.TextDocumentSyncKind `json:"change"`
	// Save asks for didSave, which analyses documents too large to analyse
	// as they are typed.
	Save *saveOptions `json:"save,omitempty"`
}

type saveOptions struct {
	IncludeText bool `json:"includeText"`
}

type codeActionOptions struct {
	CodeActionKinds []protocol.CodeActionKind `json:"codeActionKinds"`
	// ResolveProvider: fix-all's edit comes with codeAction/resolve.
	ResolveProvider bool `json:"resolveProvider"`
}

type diagnosticOptions struct {
	Identifier            string `json:"identifier"`
	InterFileDependencies bool   `json:"interFileDependencies"`
	WorkspaceDiagnostics  bool   `json:"workspaceDiagnostics"`
}

// filePath returns the local path of a file: URI. It parses the URI itself:
// go.lsp.dev/uri v0.3.0 panics on other schemes and on bad escapes
// (`file:///a%zz.py`). A URI that is not a valid file: URI has no path; its
// document is still analysed from its text, as an untitled buffer is.
func filePath(u string) (string, bool) {
	parsed, err := url.Parse(u)
	if err != nil || !strings.EqualFold(parsed.Scheme, "file") || parsed.Path == "" {
		return "", false
	}
	path := parsed.Path
	if parsed.Host != "" && !strings.EqualFold(parsed.Host, "localhost") {
		path = "//" + parsed.Host + path // a UNC path: file://server/share/x.py
	}
	if runtime.GOOS == "windows" {
		// file:///C:/x.py names C:/x.py.
		if len(path) >= 3 && path[0] == '/' && path[2] == ':' {
			path = path[1:]
		}
		path = filepath.FromSlash(path)
	}
	return path, true
}

func invalidRequest(msg string) error {
	return jsonrpc2.NewError(jsonrpc2.InvalidRequest, msg)
}
