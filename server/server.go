// Package server is vramlint's language server: LSP over stdio, built on
// go.lsp.dev/jsonrpc2 v0.10.0 and the types of go.lsp.dev/protocol v0.12.0.
//
// The library's own dispatcher has known defects (lsp-notes.md §3), so
// this package owns dispatch: each method's params are decoded here from
// raw JSON. Handlers decode, take a snapshot, call into analysis and
// codeactions, and encode.
package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"runtime/debug"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/workspace"
)

// Options configure a server.
type Options struct {
	// Rules are the rules to run (the registry, or a test's own).
	Rules []*analysis.Rule
	// Log receives the server's log (stderr or --log-file); never stdout.
	Log io.Writer
	// Debounce is the default delay between a change and its diagnostics.
	Debounce time.Duration
	// ParentPollInterval is how often the editor's process is checked.
	ParentPollInterval time.Duration
	// Version is reported in serverInfo.
	Version string
	// PhaseTrace, when set, receives a line of JSON for every version
	// whose diagnostics are pushed: how long each phase took, from
	// reading the change to sending the diagnostics (see phaseTrace).
	PhaseTrace io.Writer
}

// codeRequestCancelled is LSP's error code for a cancelled request.
const codeRequestCancelled jsonrpc2.Code = -32800

// codeContentModified (LSP): the document changed under a request.
const codeContentModified jsonrpc2.Code = -32801

type lifecycle int

const (
	uninitialized lifecycle = iota
	running
	shuttingDown
)

// Server is one language-server session.
type Server struct {
	opts   Options
	log    *log.Logger
	runner *analysis.Runner
	conn   jsonrpc2.Conn
	stream *stream

	mu       sync.Mutex
	state    lifecycle
	client   clientCapabilities
	encoding analysis.Encoding
	folders  []string // workspace folder paths
	editor   editorSettings
	// folderOverrides are the settings the client gave for each workspace
	// folder (workspace/configuration with its scopeUri); they apply over
	// editor.overrides to the documents in that folder.
	folderOverrides map[string]analysis.Overrides
	docs            map[string]*document
	inflight        map[string]context.CancelFunc // request id (JSON) -> cancel
	exit            chan int
	reported        map[string]bool // configuration problems already shown
	// toldOnSave: documents already said to be analysed on save only.
	toldOnSave map[string]bool
	idle       *time.Timer // see releaseWhenIdle
	releaseDue bool        // a release waits for the next analysis (stopIdleCollect)
	collect    *time.Timer // see collectWhenIdle
	// collectInPause and collectPause are the package's collectionInPause
	// and collectPause when the server was made (see release).
	collectInPause func() bool
	collectPause   time.Duration
	// release gives memory back (releaseMemory when the server was made,
	// so that a test's hook sees only its own server's releases).
	release func()
	// editing is the URI of the document opened or changed last: the one
	// being typed in, whose spares are made ready after a release (see
	// giveMemoryBack).
	editing string
	// projects are the workspace folders' indexes (see workspace.go); the
	// runner reads them.
	projects       *workspace.Projects
	cancelProgress map[string]context.CancelFunc // by $/progress token
	closed         closedFiles                   // diagnosticMode "workspace"
	foreground     foregroundWork                // buffers' parses and analyses, which indexing makes way for
}

// foregroundWork counts the parses of opened buffers and the analyses for
// pushed diagnostics under way. The indexing of a folder waits, between
// two files, until none is (see buildIndex): on two cores it took one
// from the buffers opened with the folder. An open also interrupts the
// indexing's parse of a large file (workspace.Index.Yield), which would
// otherwise go on beside it.
type foregroundWork struct {
	mu      sync.Mutex
	idle    *sync.Cond // made by the first wait
	running int
	ended   time.Time // when the last one under way ended
}

func (f *foregroundWork) begin() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.running++
}

func (f *foregroundWork) end() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running--; f.running == 0 {
		f.ended = time.Now()
		if f.idle != nil {
			f.idle.Broadcast()
		}
	}
}

// wait returns once no parse or analysis is under way, and none was for
// quiet: a buffer typed in is analysed on every keystroke, and indexing
// a file in the gap between two took a core from the next one (edits of
// trainer.py during transformers' indexing, in the middle and at the
// end: p99 11-18 ms without the quiet time, 7-11 with it).
func (f *foregroundWork) wait(quiet time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.idle == nil {
		f.idle = sync.NewCond(&f.mu)
	}
	for {
		for f.running > 0 {
			f.idle.Wait()
		}
		left := quiet - time.Since(f.ended)
		if f.ended.IsZero() || left <= 0 {
			return
		}
		f.mu.Unlock()
		time.Sleep(left)
		f.mu.Lock()
	}
}

// Run serves one client on in/out until it exits, stdin closes or the
// editor process dies, and returns the process exit status: 0 after an
// orderly shutdown and exit, else 1.
func Run(ctx context.Context, in io.ReadCloser, out io.Writer, opts Options) int {
	return newServer(opts).serve(ctx, in, out)
}

func newServer(opts Options) *Server {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.ParentPollInterval == 0 {
		opts.ParentPollInterval = 5 * time.Second
	}
	projects := &workspace.Projects{}
	s := &Server{
		opts:           opts,
		log:            log.New(opts.Log, "vramlint: ", log.LstdFlags|log.Lmicroseconds),
		runner:         &analysis.Runner{Rules: opts.Rules, Project: projects},
		projects:       projects,
		cancelProgress: map[string]context.CancelFunc{},
		docs:           map[string]*document{},
		inflight:       map[string]context.CancelFunc{},
		exit:           make(chan int, 1),
		reported:       map[string]bool{},
		toldOnSave:     map[string]bool{},
		release:        releaseMemory,
		collectInPause: collectionInPause,
		collectPause:   collectPause,
	}
	s.editor.debounce = opts.Debounce
	s.editor.maxLiveFileSize = defaultMaxLiveFileSize
	// Other files' callers are read off the path to the diagnostics.
	projects.InBackground(s.answersKnown)
	return s
}

func (s *Server) serve(ctx context.Context, in io.ReadCloser, out io.Writer) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.stream = newStream(in, out, in, s.log)
	s.conn = jsonrpc2.NewConn(s.stream)
	s.conn.Go(ctx, s.handle)
	select {
	case code := <-s.exit:
		s.conn.Close()
		return code
	case <-s.conn.Done():
		// stdin closed: the editor is gone. Without a shutdown first that
		// is an abnormal end.
		s.mu.Lock()
		defer s.mu.Unlock()
		s.log.Printf("connection closed: %v", s.conn.Err())
		if s.state == shuttingDown {
			return 0
		}
		return 1
	}
}

// handle is called by jsonrpc2 for each message, one at a time, in order.
// Notifications are processed here, synchronously, so they keep their
// order; requests take what they need and answer from a goroutine, so a
// slow request never holds up the notifications after it.
func (s *Server) handle(ctx context.Context, reply jsonrpc2.Replier, req jsonrpc2.Request) (err error) {
	call, isCall := req.(*jsonrpc2.Call)
	defer func() {
		if p := recover(); p != nil {
			s.log.Printf("panic in %s: %v\n%s", req.Method(), p, debug.Stack())
			if isCall {
				err = reply(ctx, nil, jsonrpc2.Errorf(jsonrpc2.InternalError, "internal error in %s: %v", req.Method(), p))
			}
		}
	}()
	s.mu.Lock()
	state := s.state
	s.mu.Unlock()
	method := req.Method()
	switch {
	case method == "exit":
		s.onExit()
		return nil
	case state == uninitialized && method != "initialize":
		if isCall {
			return reply(ctx, nil, jsonrpc2.NewError(jsonrpc2.ServerNotInitialized, "the server is not initialized"))
		}
		return nil
	case state == shuttingDown && isCall:
		return reply(ctx, nil, jsonrpc2.NewError(jsonrpc2.InvalidRequest, "the server is shutting down"))
	}
	if !isCall {
		s.notification(ctx, method, req.Params())
		return nil
	}
	h, ok := requestHandlers[method]
	if !ok {
		return reply(ctx, nil, jsonrpc2.NewError(jsonrpc2.MethodNotFound, "method not found: "+method))
	}
	work, err := h(s, req.Params())
	if err != nil {
		return reply(ctx, nil, asWireError(err))
	}
	s.async(ctx, call, reply, work)
	return nil
}

// requestWork is the part of a request that runs off the message loop, on
// the snapshot its handler took.
type requestWork func(ctx context.Context) (any, error)

// requestHandlers decode a request's params and take a snapshot; the work
// they return runs in its own goroutine.
var requestHandlers = map[string]func(*Server, json.RawMessage) (requestWork, error){
	"initialize":              (*Server).initialize,
	"shutdown":                (*Server).shutdown,
	"textDocument/codeAction": (*Server).codeAction,
	"codeAction/resolve":      (*Server).codeActionResolve,
	"textDocument/hover":      (*Server).hover,
	"textDocument/diagnostic": (*Server).pullDiagnostics,
	"workspace/diagnostic":    (*Server).workspaceDiagnosticRequest,
}

// notificationHandlers run on the message loop, in order.
var notificationHandlers = map[string]func(*Server, json.RawMessage) error{
	"initialized":                         (*Server).initialized,
	"textDocument/didOpen":                (*Server).didOpen,
	"textDocument/didChange":              (*Server).didChange,
	"textDocument/didClose":               (*Server).didClose,
	"textDocument/didSave":                (*Server).didSave,
	"workspace/didChangeConfiguration":    (*Server).didChangeConfiguration,
	"workspace/didChangeWorkspaceFolders": (*Server).didChangeWorkspaceFolders,
	"workspace/didChangeWatchedFiles":     (*Server).didChangeWatchedFiles,
	"window/workDoneProgress/cancel":      (*Server).cancelWorkDoneProgress,
	"$/cancelRequest":                     (*Server).cancelRequest,
	"$/setTrace":                          func(*Server, json.RawMessage) error { return nil },
}

func (s *Server) notification(ctx context.Context, method string, params json.RawMessage) {
	h, ok := notificationHandlers[method]
	if !ok {
		return // unknown notifications are ignored, as the spec asks
	}
	start := time.Now()
	if err := h(s, params); err != nil {
		s.log.Printf("%s: %v", method, err)
	}
	s.logTime(method, start)
}

// logTime logs how long a message took, when logLevel is "debug".
func (s *Server) logTime(method string, start time.Time) {
	if s.editor.logDebug.Load() {
		s.log.Printf("%s: %.2f ms", method, float64(time.Since(start).Microseconds())/1000)
	}
}

// async answers a request from a goroutine, with a context that
// $/cancelRequest cancels.
func (s *Server) async(ctx context.Context, call *jsonrpc2.Call, reply jsonrpc2.Replier, work requestWork) {
	id := idKey(call.ID())
	ctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	s.inflight[id] = cancel
	s.mu.Unlock()
	go func() {
		defer func() {
			s.mu.Lock()
			delete(s.inflight, id)
			s.mu.Unlock()
			cancel()
		}()
		start := time.Now()
		result, err := s.safely(ctx, call.Method(), work)
		s.logTime(call.Method(), start)
		if ctx.Err() != nil && err == nil {
			err = jsonrpc2.NewError(codeRequestCancelled, "request cancelled")
		}
		if err := reply(ctx, result, asWireError(err)); err != nil {
			s.log.Printf("replying to %s: %v", call.Method(), err)
		}
	}()
}

// safely runs work, turning a panic into an internal error.
func (s *Server) safely(ctx context.Context, method string, work requestWork) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Printf("panic in %s: %v\n%s", method, p, debug.Stack())
			result, err = nil, jsonrpc2.Errorf(jsonrpc2.InternalError, "internal error in %s: %v", method, p)
		}
	}()
	return work(ctx)
}

// asWireError makes sure no plain Go error goes out with code 0 (jsonrpc2
// v0.10.0 sends those as code 0, which editors show as "Code: 0").
func asWireError(err error) error {
	if err == nil {
		return nil
	}
	if we, ok := err.(*jsonrpc2.Error); ok {
		return we
	}
	return jsonrpc2.NewError(jsonrpc2.InternalError, err.Error())
}

// invalidParams is the error for params that do not decode.
func invalidParams(method string, err error) error {
	return jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: invalid params: %v", method, err)
}

// idKey canonicalises a request id, numeric or string, for cancellation.
func idKey(id jsonrpc2.ID) string {
	b, _ := json.Marshal(&id) // MarshalJSON has a pointer receiver
	return string(b)
}

func (s *Server) cancelRequest(params json.RawMessage) error {
	var p struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return err
	}
	// Numeric ids arrive as JSON numbers (jsonrpc2's CancelHandler would
	// see a float64 and give up); both forms are matched by their JSON.
	var key string
	var n json.Number
	if err := json.Unmarshal(p.ID, &n); err == nil {
		key = n.String()
	} else {
		var str string
		if err := json.Unmarshal(p.ID, &str); err != nil {
			return fmt.Errorf("cancel: id %s is neither a number nor a string", p.ID)
		}
		b, _ := json.Marshal(str)
		key = string(b)
	}
	s.mu.Lock()
	cancel := s.inflight[key]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	return nil
}

// notify sends a notification to the client, logging failures. It is
// encoded once, here: jsonrpc2's Notify encodes params, then validates and
// re-encodes them inside the message, which for a large diagnostics list
// costs more than the analysis.
func (s *Server) notify(method string, params any) {
	body, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", method, params})
	if err == nil {
		_, err = s.stream.writeRaw(body)
	}
	if err != nil {
		s.log.Printf("sending %s: %v", method, err)
	}
}

// publishDiagnostics sends a textDocument/publishDiagnostics notification,
// encoded without reflection (see encode.go) into a buffer of the last
// ones': a large file's are 100 KB or more on every keystroke.
func (s *Server) publishDiagnostics(params protocol.PublishDiagnosticsParams) {
	buf := encodeBuffers.Get().(*[]byte)
	*buf = appendPublishDiagnostics((*buf)[:0], params)
	s.sendDiagnostics(buf)
}

// sendDiagnostics writes a publishDiagnostics notification encoded into
// buf, a buffer of encodeBuffers, which it gives back.
func (s *Server) sendDiagnostics(buf *[]byte) {
	if _, err := s.stream.writeRaw(*buf); err != nil {
		s.log.Printf("sending textDocument/publishDiagnostics: %v", err)
	}
	if cap(*buf) <= maxEncodeBuffer {
		encodeBuffers.Put(buf)
	}
}

// encodeBuffers hold the bytes of notifications once sent (writeRaw keeps
// none of them).
var encodeBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxEncodeBuffer is the largest buffer encodeBuffers keeps.
const maxEncodeBuffer = 8 << 20

// Message types of window/logMessage and window/showMessage.
const (
	messageError   = 1
	messageWarning = 2
	messageInfo    = 3
)

// tell logs a message and shows it in the editor's log.
func (s *Server) tell(kind int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.log.Print(msg)
	s.notify("window/logMessage", map[string]any{"type": kind, "message": "vramlint: " + msg})
}
