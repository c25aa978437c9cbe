package server

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"go.lsp.dev/uri"

	"github.com/vramlint/vramlint/analysis"
)

// editorSettings are the settings the editor sends (initializationOptions,
// workspace/didChangeConfiguration). They override pyproject.toml.
type editorSettings struct {
	overrides analysis.Overrides
	debounce  time.Duration
	// maxLiveFileSize is the size in bytes above which a document is
	// analysed when opened and saved rather than as it is typed (0: no
	// limit): a model of a file near the 10 MB limit takes a gigabyte.
	maxLiveFileSize int
	// logDebug adds a line per request and notification, with its time,
	// to the log (logLevel "debug"); errors are always logged. Atomic: it
	// is read for every message, without the server's lock.
	logDebug atomic.Bool
	// workspaceMode: diagnosticMode "workspace" reports the files of the
	// workspace folders that are not open too (see workspace_diagnostics.go).
	workspaceMode bool
}

// logLevels are the values of the logLevel setting; only "debug" logs
// more than errors and what the server tells the editor.
var logLevels = map[string]bool{"error": true, "warning": true, "info": true, "debug": true}

// defaultMaxLiveFileSize is about 25,000 lines of Python.
const defaultMaxLiveFileSize = 1 << 20

// settingKeys are the [tool.vramlint] keys an editor may set.
var settingKeys = map[string]bool{
	"select": true, "ignore": true, "extend-select": true, "per-file-ignores": true,
	"severity": true, "unsafe-fixes": true, "exclude": true,
}

// apply reads editor settings: an object with the keys of [tool.vramlint]
// (camelCase accepted: unsafeFixes, extendSelect), plus `debounce` in
// milliseconds; it may sit under "settings" or "vramlint". Other keys
// (an extension's own, such as path) are ignored. `maxLiveFileSize` (bytes)
// is the size above which documents are analysed on open and save only;
// `logLevel` "debug" logs every message with its time; `diagnosticMode`
// "workspace" reports the workspace folders' files that are not open too.
func (e *editorSettings) apply(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return fmt.Errorf("settings must be an object: %w", err)
	}
	for _, wrapper := range []string{"settings", "vramlint"} {
		if inner, ok := obj[wrapper].(map[string]any); ok {
			obj = inner
		}
	}
	overrides := analysis.Overrides{}
	debounce, maxLive, logDebug, workspaceMode := e.debounce, e.maxLiveFileSize, e.logDebug.Load(), e.workspaceMode
	for key, v := range obj {
		if v == nil {
			continue // not set here: pyproject.toml or the default applies
		}
		switch key {
		case "unsafeFixes":
			key = "unsafe-fixes"
		case "extendSelect":
			key = "extend-select"
		case "perFileIgnores":
			key = "per-file-ignores"
		case "debounce":
			ms, ok := v.(float64)
			if !ok || ms < 0 {
				return fmt.Errorf("debounce: must be a number of milliseconds, got %v", v)
			}
			debounce = time.Duration(ms * float64(time.Millisecond))
			continue
		case "maxLiveFileSize":
			size, ok := v.(float64)
			if !ok || size < 0 || size > analysis.MaxFileSize {
				return fmt.Errorf("maxLiveFileSize: must be a number of bytes from 0 (no limit) to %d, got %v", analysis.MaxFileSize, v)
			}
			maxLive = int(size)
			continue
		case "diagnosticMode":
			switch v {
			case "workspace":
				workspaceMode = true
			case "openFilesOnly":
				workspaceMode = false
			default:
				return fmt.Errorf("diagnosticMode: must be openFilesOnly or workspace, got %v", v)
			}
			continue
		case "logLevel":
			level, ok := v.(string)
			if !ok || !logLevels[level] {
				return fmt.Errorf("logLevel: must be error, warning, info or debug, got %v", v)
			}
			logDebug = level == "debug"
			continue
		}
		if settingKeys[key] {
			overrides[key] = v
		}
	}
	if _, err := (&analysis.Settings{}).WithOverrides(overrides); err != nil {
		return err
	}
	e.overrides, e.debounce, e.maxLiveFileSize, e.workspaceMode = overrides, debounce, maxLive, workspaceMode
	e.logDebug.Store(logDebug)
	return nil
}

func (s *Server) initialized(json.RawMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pullFolderSettings()
	s.indexFolders()
	s.watchFiles()
	return nil
}

// pullFolderSettings asks a client that answers workspace/configuration for
// the "vramlint" section of each workspace folder, in the background, and
// re-publishes under what it answers: VS Code keeps settings per folder.
// Call with s.mu held.
func (s *Server) pullFolderSettings() {
	if !s.client.Workspace.Configuration || len(s.folders) == 0 {
		return
	}
	folders := slices.Clone(s.folders)
	type item struct {
		ScopeURI string `json:"scopeUri"`
		Section  string `json:"section"`
	}
	items := make([]item, len(folders))
	for i, f := range folders {
		items[i] = item{ScopeURI: string(uri.File(f)), Section: "vramlint"}
	}
	go func() {
		var answers []json.RawMessage
		if _, err := s.conn.Call(context.Background(), "workspace/configuration", map[string]any{"items": items}, &answers); err != nil {
			s.log.Printf("workspace/configuration: %v", err)
			return
		}
		byFolder := map[string]analysis.Overrides{}
		for i, raw := range answers {
			if i >= len(folders) {
				break
			}
			var e editorSettings
			if err := e.apply(raw); err != nil {
				s.mu.Lock()
				s.tell(messageError, "settings of %s: %v (using the others)", folders[i], err)
				s.mu.Unlock()
				continue
			}
			if len(e.overrides) > 0 {
				byFolder[folders[i]] = e.overrides
			}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if !maps.EqualFunc(byFolder, s.folderOverrides, func(a, b analysis.Overrides) bool { return reflect.DeepEqual(a, b) }) {
			s.folderOverrides = byFolder
			s.refreshAll()
		}
	}()
}

// overridesFor is what the editor set for a file: its folder's settings
// (the innermost folder holding it) over the ones sent for all.
func (s *Server) overridesFor(path string) analysis.Overrides {
	best := ""
	for folder := range s.folderOverrides {
		if len(folder) > len(best) && (path == folder || strings.HasPrefix(path, folder+string(filepath.Separator))) {
			best = folder
		}
	}
	if best == "" {
		return s.editor.overrides
	}
	merged := maps.Clone(s.editor.overrides)
	if merged == nil {
		merged = analysis.Overrides{}
	}
	maps.Copy(merged, s.folderOverrides[best])
	return merged
}

func (s *Server) didChangeConfiguration(params json.RawMessage) error {
	var p struct {
		Settings json.RawMessage `json:"settings"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return fmt.Errorf("didChangeConfiguration: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.editor.apply(p.Settings); err != nil {
		s.tell(messageError, "settings: %v (keeping the previous ones)", err)
		return nil
	}
	s.refreshAll()
	s.pullFolderSettings()
	return nil
}

func (s *Server) didChangeWorkspaceFolders(params json.RawMessage) error {
	var p struct {
		Event struct {
			Added   []workspaceFolder `json:"added"`
			Removed []workspaceFolder `json:"removed"`
		} `json:"event"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return fmt.Errorf("didChangeWorkspaceFolders: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range p.Event.Removed {
		if path, ok := filePath(f.URI); ok {
			s.projects.Remove(path)
			for i, have := range s.folders {
				if have == path {
					s.folders = append(s.folders[:i], s.folders[i+1:]...)
					break
				}
			}
		}
	}
	for _, f := range p.Event.Added {
		if path, ok := filePath(f.URI); ok {
			s.folders = append(s.folders, path)
		}
	}
	s.indexFolders()
	s.refreshAll()
	s.pullFolderSettings()
	return nil
}

// refreshAll reloads every open document's settings (pyproject.toml and
// the editor's) and re-publishes its diagnostics. Call with s.mu held.
func (s *Server) refreshAll() {
	s.reported = map[string]bool{}
	for _, d := range s.docs {
		s.reanalyse(d, s.settingsFor(d.path)) // under the new settings
	}
	s.workspaceDiagnostics()
	s.askToPull()
}

// askToPull asks a client that pulls diagnostics to pull them all again.
// Call with s.mu held.
func (s *Server) askToPull() {
	if s.pullMode() && s.client.Workspace.Diagnostics.RefreshSupport {
		// A request, not a notification: the client re-pulls.
		go func() {
			if _, err := s.conn.Call(context.Background(), "workspace/diagnostic/refresh", nil, nil); err != nil {
				s.log.Printf("workspace/diagnostic/refresh: %v", err)
			}
		}()
	}
}
