package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/rules"
)

// testClient is an in-process LSP client that speaks raw JSON over pipes,
// so that decoding bugs in the library surface instead of being hidden by
// shared types.
type testClient struct {
	t      testing.TB
	srv    *Server
	in     *io.PipeWriter // the server's stdin
	nextID int
	exit   chan int

	mu    sync.Mutex
	cond  *sync.Cond
	msgs  []message // everything the server sent, in order
	eof   bool
	texts map[string]string // the client's copy of each open document
	vers  map[string]int
}

type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
	raw    string
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%d: %s", e.Code, e.Message) }

// startServer runs a server over pipes. opts.Rules defaults to every rule.
func startServer(t testing.TB, opts Options) *testClient {
	t.Helper()
	if opts.Rules == nil {
		opts.Rules = rules.All()
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &testClient{t: t, in: inW, exit: make(chan int, 1), texts: map[string]string{}, vers: map[string]int{}}
	c.cond = sync.NewCond(&c.mu)
	c.srv = newServer(opts)
	go func() {
		code := c.srv.serve(context.Background(), inR, outW)
		outW.Close()
		c.exit <- code
	}()
	go c.read(outR)
	t.Cleanup(func() { inW.Close() })
	return c
}

// read parses every frame the server writes; anything that is not a
// well-formed frame fails the test (stdout must hold protocol only).
func (c *testClient) read(r io.Reader) {
	br := bufio.NewReader(r)
	defer func() {
		c.mu.Lock()
		c.eof = true
		c.cond.Broadcast()
		c.mu.Unlock()
	}()
	for {
		length := -1
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimSpace(line)
			if line == "" {
				break
			}
			name, value, _ := strings.Cut(line, ":")
			if name != "Content-Length" {
				c.t.Errorf("unexpected header or stray output on stdout: %q", line)
				continue
			}
			length, _ = strconv.Atoi(strings.TrimSpace(value))
		}
		body := make([]byte, length)
		if _, err := io.ReadFull(br, body); err != nil {
			return
		}
		var m message
		if err := json.Unmarshal(body, &m); err != nil {
			c.t.Errorf("server sent invalid JSON: %s", body)
			continue
		}
		m.raw = string(body)
		c.mu.Lock()
		c.msgs = append(c.msgs, m)
		c.cond.Broadcast()
		c.mu.Unlock()
	}
}

func (c *testClient) sendRaw(body string) {
	c.t.Helper()
	if _, err := fmt.Fprintf(c.in, "Content-Length: %d\r\n\r\n%s", len(body), body); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *testClient) send(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	c.sendRaw(string(b))
}

func (c *testClient) notify(method string, params any) {
	c.t.Helper()
	c.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// call sends a request with the given id and returns its response.
func (c *testClient) call(id any, method string, params any) message {
	c.t.Helper()
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	idJSON, _ := json.Marshal(id)
	return c.await(fmt.Sprintf("response to %s %s", method, idJSON), func(m message) bool {
		return m.Method == "" && string(m.ID) == string(idJSON)
	})
}

// request sends a request with a fresh numeric id and decodes its result.
func (c *testClient) request(method string, params, result any) *rpcError {
	c.t.Helper()
	c.nextID++
	m := c.call(c.nextID, method, params)
	if m.Error != nil {
		return m.Error
	}
	if result != nil {
		if err := json.Unmarshal(m.Result, result); err != nil {
			c.t.Fatalf("%s result: %v\n%s", method, err, m.Result)
		}
	}
	return nil
}

// hungAfter is how long a test waits for what the server must do (a
// message, an exit, a release) before it calls the server hung. Waits end
// as soon as the thing happens; the bound is generous because CI runs the
// tests under the race detector on a loaded machine, where opening a 3 MB
// document took over 10 s (2.5 s here).
const hungAfter = time.Minute

// await waits for the first message (old or new) matching pred, and
// removes it from the queue.
func (c *testClient) await(what string, pred func(message) bool) message {
	c.t.Helper()
	return c.awaitSuperseding(what, pred, func(message) bool { return false })
}

// awaitSuperseding is await that also removes the messages before the one
// found that it supersedes: a document's earlier diagnostics, which a
// later wait must not take for the document's state.
func (c *testClient) awaitSuperseding(what string, pred, superseded func(message) bool) message {
	c.t.Helper()
	deadline := time.Now().Add(hungAfter)
	timer := time.AfterFunc(hungAfter, func() { c.mu.Lock(); c.cond.Broadcast(); c.mu.Unlock() })
	defer timer.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		for i, m := range c.msgs {
			if pred(m) {
				kept := slices.DeleteFunc(slices.Clone(c.msgs[:i]), superseded)
				c.msgs = append(kept, c.msgs[i+1:]...)
				return m
			}
		}
		if c.eof || time.Now().After(deadline) {
			c.t.Fatalf("no %s (eof=%v)", what, c.eof)
		}
		c.cond.Wait()
	}
}

// diagnostics waits for the publishDiagnostics of uri at version.
// forget drops the messages received so far, for a test that measures
// the server's memory in this process.
func (c *testClient) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = nil
}

func (c *testClient) diagnostics(uri string, version int) []lspDiagnostic {
	c.t.Helper()
	m := c.await(fmt.Sprintf("diagnostics for %s v%d", uri, version), func(m message) bool {
		if m.Method != "textDocument/publishDiagnostics" {
			return false
		}
		var p struct {
			URI     string `json:"uri"`
			Version int    `json:"version"`
		}
		// Only the head: the diagnostics may be long.
		head := m.Params[:min(len(m.Params), 200+len(uri))]
		if i := bytes.Index(head, []byte(`"diagnostics"`)); i > 0 {
			head = append(append([]byte{}, head[:i]...), []byte(`"x":0}`)...)
		}
		if json.Unmarshal(head, &p) != nil {
			json.Unmarshal(m.Params, &p)
		}
		return p.URI == uri && p.Version == version
	})
	var p struct {
		Diagnostics []lspDiagnostic `json:"diagnostics"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		c.t.Fatal(err)
	}
	if p.Diagnostics == nil {
		c.t.Fatalf("diagnostics must be an array, never null: %s", m.raw)
	}
	return p.Diagnostics
}

// publicationOf matches the diagnostics published for uri.
func publicationOf(uri string) func(message) bool {
	return func(m message) bool {
		return m.Method == "textDocument/publishDiagnostics" && strings.Contains(string(m.Params), `"uri":"`+uri+`"`)
	}
}

// awaitCodes waits for diagnostics of uri whose codes and severities are
// want ("GPU001/1 GPU001/1"; "" for none), and returns them. The earlier
// diagnostics of uri go with them: the server may publish a file's
// findings in steps (some wait for other files to be read, see
// workspace.Projects.InBackground), and a later wait must not find an
// early step that no longer holds.
func awaitCodes(c *testClient, uri, want string) []lspDiagnostic {
	c.t.Helper()
	var got []lspDiagnostic
	of := publicationOf(uri)
	c.awaitSuperseding("diagnostics of "+uri+": "+want, func(m message) bool {
		if !of(m) {
			return false
		}
		var p struct{ Diagnostics []lspDiagnostic }
		json.Unmarshal(m.Params, &p)
		var codes []string
		for _, d := range p.Diagnostics {
			codes = append(codes, fmt.Sprintf("%s/%d", d.Code, d.Severity))
		}
		got = p.Diagnostics
		return strings.Join(codes, " ") == want
	}, of)
	return got
}

// initializeFolders runs the handshake with workspace folders (paths).
func (c *testClient) initializeFolders(caps, options any, folders ...string) {
	c.t.Helper()
	var list []map[string]any
	for _, f := range folders {
		list = append(list, map[string]any{"uri": "file://" + f, "name": filepath.Base(f)})
	}
	if err := c.request("initialize", map[string]any{
		"processId": nil, "rootUri": nil, "capabilities": caps, "initializationOptions": options, "workspaceFolders": list,
	}, nil); err != nil {
		c.t.Fatalf("initialize: %v", err)
	}
	c.notify("initialized", map[string]any{})
}

type lspPosition struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

type lspRange struct {
	Start lspPosition `json:"start"`
	End   lspPosition `json:"end"`
}

type lspDiagnostic struct {
	Range           lspRange               `json:"range"`
	Severity        int                    `json:"severity"`
	Code            string                 `json:"code"`
	CodeDescription *struct{ Href string } `json:"codeDescription"`
	Source          string                 `json:"source"`
	Message         string                 `json:"message"`
	Related         []struct {
		Location struct {
			URI   string   `json:"uri"`
			Range lspRange `json:"range"`
		} `json:"location"`
		Message string `json:"message"`
	} `json:"relatedInformation"`
	Data json.RawMessage `json:"data"`
}

type lspTextEdit struct {
	Range   lspRange `json:"range"`
	NewText string   `json:"newText"`
}

type lspCodeAction struct {
	Title       string          `json:"title"`
	Kind        string          `json:"kind"`
	IsPreferred bool            `json:"isPreferred"`
	Diagnostics []lspDiagnostic `json:"diagnostics"`
	Edit        struct {
		Changes         map[string][]lspTextEdit `json:"changes"`
		DocumentChanges []struct {
			TextDocument struct {
				URI     string `json:"uri"`
				Version int    `json:"version"`
			} `json:"textDocument"`
			Edits []lspTextEdit `json:"edits"`
		} `json:"documentChanges"`
	} `json:"edit"`
}

// edits returns the action's edits for uri, in either form.
func (a lspCodeAction) edits(uri string) []lspTextEdit {
	if len(a.Edit.DocumentChanges) > 0 {
		return a.Edit.DocumentChanges[0].Edits
	}
	return a.Edit.Changes[uri]
}

// initialize runs the handshake with the given capabilities and options.
func (c *testClient) initialize(caps, options any) map[string]any {
	c.t.Helper()
	var result map[string]any
	if err := c.request("initialize", map[string]any{
		"processId": nil, "rootUri": nil, "capabilities": caps, "initializationOptions": options,
	}, &result); err != nil {
		c.t.Fatalf("initialize: %v", err)
	}
	c.notify("initialized", map[string]any{})
	return result
}

func (c *testClient) open(uri, text string) {
	c.t.Helper()
	c.texts[uri], c.vers[uri] = text, 1
	c.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{
		"uri": uri, "languageId": "python", "version": 1, "text": text,
	}})
}

// change applies edits (positions in enc) to the client's copy, in order,
// and sends them as one incremental didChange; it returns the new version.
func (c *testClient) change(uri string, enc analysis.Encoding, edits ...lspTextEdit) int {
	c.t.Helper()
	changes := []map[string]any{}
	for _, e := range edits {
		text := c.texts[uri]
		start, end := clientOffset(text, e.Range.Start, enc), clientOffset(text, e.Range.End, enc)
		c.texts[uri] = text[:start] + e.NewText + text[end:]
		changes = append(changes, map[string]any{"range": e.Range, "text": e.NewText})
	}
	c.vers[uri]++
	c.notify("textDocument/didChange", map[string]any{
		"textDocument":   map[string]any{"uri": uri, "version": c.vers[uri]},
		"contentChanges": changes,
	})
	return c.vers[uri]
}

// applyAction applies a code action's edits the way an editor does: all
// against the same text, sent as one change (last edit first, so earlier
// positions stay valid).
func (c *testClient) applyAction(uri string, enc analysis.Encoding, a lspCodeAction) int {
	c.t.Helper()
	edits := append([]lspTextEdit(nil), a.edits(uri)...)
	if len(edits) == 0 {
		c.t.Fatalf("action %q has no edit for %s", a.Title, uri)
	}
	text := c.texts[uri]
	sortDesc(edits, text, enc)
	return c.change(uri, enc, edits...)
}

func sortDesc(edits []lspTextEdit, text string, enc analysis.Encoding) {
	sort.SliceStable(edits, func(i, j int) bool {
		return clientOffset(text, edits[i].Range.Start, enc) > clientOffset(text, edits[j].Range.Start, enc)
	})
}

// clientOffset converts a position the way an editor would: lines split at
// \n (a \r before it belongs to the line end), columns in enc units. It is
// written independently of analysis.Mapper on purpose.
func clientOffset(text string, p lspPosition, enc analysis.Encoding) int {
	off := 0
	for line := 0; line < p.Line; line++ {
		i := strings.IndexByte(text[off:], '\n')
		if i < 0 {
			return len(text)
		}
		off += i + 1
	}
	end := strings.IndexByte(text[off:], '\n')
	if end < 0 {
		end = len(text)
	} else {
		end += off
		if end > off && text[end-1] == '\r' {
			end--
		}
	}
	col := 0
	for off < end && col < p.Character {
		r, size := utf8.DecodeRuneInString(text[off:])
		switch enc {
		case analysis.UTF8:
			col += size
		case analysis.UTF16:
			col += len(utf16.Encode([]rune{r}))
		default:
			col++
		}
		off += size
	}
	return off
}

// clientPosition converts a byte offset the same independent way.
func clientPosition(text string, off int, enc analysis.Encoding) lspPosition {
	line := strings.Count(text[:off], "\n")
	start := strings.LastIndexByte(text[:off], '\n') + 1
	col := 0
	for _, r := range text[start:off] {
		switch enc {
		case analysis.UTF8:
			col += utf8.RuneLen(r)
		case analysis.UTF16:
			col += len(utf16.Encode([]rune{r}))
		default:
			col++
		}
	}
	return lspPosition{line, col}
}

func (c *testClient) codeActions(uri string, r lspRange, only []string, trigger int) []lspCodeAction {
	c.t.Helper()
	ctx := map[string]any{"diagnostics": []any{}}
	if only != nil {
		ctx["only"] = only
	}
	if trigger != 0 {
		ctx["triggerKind"] = trigger
	}
	var actions []lspCodeAction
	if err := c.request("textDocument/codeAction", map[string]any{
		"textDocument": map[string]any{"uri": uri}, "range": r, "context": ctx,
	}, &actions); err != nil {
		c.t.Fatalf("codeAction: %v", err)
	}
	return actions
}

func (c *testClient) shutdownAndExit() int {
	c.t.Helper()
	if err := c.request("shutdown", nil, nil); err != nil {
		c.t.Fatalf("shutdown: %v", err)
	}
	c.notify("exit", nil)
	select {
	case code := <-c.exit:
		return code
	case <-time.After(hungAfter):
		c.t.Fatal("the server did not exit")
		return -1
	}
}
