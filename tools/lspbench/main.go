// Command lspbench measures a stdio language server the way an editor uses
// it: it opens Python files, edits the first one character at a time at
// the start, the middle and the end, types a 30-line function into it key
// by key (with the syntax errors on the way), asks for code actions at the
// cursor, and prints the latencies and the server's memory as a table.
//
//	go run ./tools/lspbench --server "vramlint server --debounce 0" --lines 10000
//	go run ./tools/lspbench --lines 10000 --copies 50   # fifty files open
//	go run ./tools/lspbench --lines 10000 --script      # module-level loops
//	go run ./tools/lspbench --server "ruff server" FILE.py...
//
// Each latency is from writing a change to reading the diagnostics the
// server publishes for it; the next change follows at once, or after
// --gap. vramlint is measured with maxLiveFileSize 0, so that large files
// are analysed as they are typed.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	sitter "github.com/smacker/go-tree-sitter"
	"github.com/smacker/go-tree-sitter/python"
	"github.com/vramlint/vramlint/internal/generated"
)

func main() {
	serverCmd := flag.String("server", "vramlint server --debounce 0", "the server's command line (split at spaces)")
	lines := flag.Int("lines", 0, "generate a training file of about this many lines instead of reading FILEs")
	copies := flag.Int("copies", 1, "with --lines, how many such files to open (each a little different)")
	edits := flag.Int("edits", 40, "one-character edits at each place (start, middle, end)")
	spread := flag.Int("spread", 0, "also type a letter and delete it at this many statement starts spread evenly over the file, each place edited once: what a keystroke costs varies from statement to statement (tree-sitter reparses more after some), which edits at three places do not show")
	typing := flag.Bool("typing", true, "type a 30-line training function into the middle of the file (or what --type says, where --type-at says)")
	typeFile := flag.String("type", "", "with --typing, type the text of this file, key by key, instead of the built-in function (a script's main block, a Dataset class)")
	typeAt := flag.String("type-at", "middle", "with --typing, where to type: middle (at the top-level line nearest the middle of the file), end (after its last line, where a script's main block goes) or method (indented as a method, on the blank line above the first method past the middle that has one: keystrokes inside a class)")
	actions := flag.Int("code-actions", 20, "code-action requests at diagnostics")
	settings := flag.String("settings", `{"maxLiveFileSize": 0}`, "initializationOptions, and the answer to workspace/configuration")
	timeout := flag.Duration("timeout", 30*time.Second, "how long to wait for one answer")
	settle := flag.Duration("settle", 3*time.Second, "pause before each memory reading, for work the server does after answering")
	noWorkspace := flag.Bool("no-workspace", false, "open the files without a workspace folder (rootUri null)")
	opens := flag.Int("opens", 1, "how many times the first file is opened (closed in between, its first line different each time): the open's p50 over them, beside tree-sitter's parse of the same texts in this process")
	gap := flag.Duration("gap", 0, "pause after each edit's diagnostics before the next edit or key (not timed): 0 sends the next one as soon as the diagnostics arrive, the harshest case; a person typing leaves 50-300 ms, in which a server may do work off the path to the diagnostics")
	keys := flag.String("keys", "", "write each key of the typing session to this file: its number, latency in ms, its reparse floor in ms (see --reparse) and the text typed so far on its line (to find the slow keys)")
	script := flag.Bool("script", false, "with --lines, generate a script whose training and evaluation loops are module code, as notebooks exported to Python are, instead of functions")
	openEarly := flag.Bool("open-early", false, "open the files as soon as the server is initialised, as an editor restoring its session does, while the server may still be reading the folder, instead of after the --settle pause (whose RSS reading is then taken at once)")
	reparse := flag.Bool("reparse", true, "reparse each change of the scenarios in this process too, with the tree-sitter binding the server uses, whole and incrementally, before sending it: the rows \"reparse (floor)\", the yardstick of an edit whose reparse alone is slow")
	leftOpen := flag.Bool("left-open", false, "with --lines, leave a bracket open in each file (`broken = foo(` before the first class past the middle), as in a file saved mid-edit")
	flag.Parse()
	if *typeAt != "middle" && *typeAt != "end" && *typeAt != "method" {
		check(fmt.Errorf("--type-at %q: want middle, end or method", *typeAt))
	}

	var paths []string
	switch {
	case *lines > 0:
		dir, err := os.MkdirTemp("", "lspbench")
		check(err)
		defer os.RemoveAll(dir)
		for i := range *copies {
			path := filepath.Join(dir, fmt.Sprintf("generated_%d_%d.py", *lines, i))
			// Each copy its own text, as different files have.
			gen := generate
			if *script {
				gen = generated.Script
			}
			text := fmt.Sprintf("# copy %d\n", i) + gen(*lines)
			if *leftOpen {
				k := strings.Index(text[len(text)/2:], "\nclass ")
				if k < 0 {
					// A script has no class to leave it before.
					fmt.Fprintln(os.Stderr, "lspbench: --left-open needs a class past the middle of the generated file (not --script)")
					os.Exit(2)
				}
				at := len(text)/2 + k + 1
				text = text[:at] + "broken = foo(\n" + text[at:]
			}
			check(os.WriteFile(path, []byte(text), 0o644))
			paths = append(paths, path)
		}
	case flag.NArg() > 0:
		paths = flag.Args()
	default:
		fmt.Fprintln(os.Stderr, "usage: lspbench [flags] FILE.py..., or lspbench --lines N [--copies K] [flags]")
		os.Exit(2)
	}
	var docs []*document
	for _, path := range paths {
		text, err := os.ReadFile(path)
		check(err)
		abs, err := filepath.Abs(path)
		check(err)
		docs = append(docs, &document{uri: "file://" + abs, text: string(text)})
	}

	var opts any
	check(json.Unmarshal([]byte(*settings), &opts))
	s, err := start(strings.Fields(*serverCmd), opts, *timeout)
	check(err)
	defer s.stop()
	s.gap = *gap
	root := strings.TrimSuffix(docs[0].uri, filepath.Base(docs[0].uri))
	if *noWorkspace {
		root = ""
	}
	check(s.initialize(root))
	initialized := time.Now()
	if !*openEarly {
		// After the pause, and after the server's work-done progress
		// (vramlint's indexing of the folder) is over: "after indexing".
		time.Sleep(*settle)
		switch ended, ok := s.progressOver(10 * time.Minute); {
		case !ok:
			fmt.Println("the server's work-done progress (indexing) was still under way after 10 minutes; opening anyway")
		case !ended.IsZero():
			fmt.Printf("the server's work-done progress (indexing) ended %.1f s after initialization\n", ended.Sub(initialized).Seconds())
		}
	}
	rssStart := s.rss()

	// Every file is opened; the scenarios then run on the first. The
	// first is opened --opens times, and each text it is opened with is
	// also parsed here, whole and on one core, by the tree-sitter binding
	// the server uses: the yardstick for an open, measured in the same
	// run, so that the machine's noise falls on both alike.
	var rows []row
	var openTimes, parseTimes []time.Duration
	var openCPU time.Duration
	n := max(1, *opens)
	for i := range n {
		d := docs[0]
		if i < n-1 {
			// A text the server has not seen, so that what it
			// remembers by file does not help it (its verdicts on fixes
			// are kept by the text of the statements they edit, and do:
			// the first open, below, is the cold one), under a name of its own,
			// so that what the server publishes when it is closed is
			// not taken for the next open's diagnostics.
			dir, name := path.Split(d.uri)
			d = &document{uri: fmt.Sprintf("%sreopened_%d_%s", dir, i, name), text: fmt.Sprintf("# reopened %d\n", i) + d.text}
		}
		took, err := parseFloor(d.text)
		check(err)
		parseTimes = append(parseTimes, took)
		cpu := s.cpu()
		took, err = s.open(d)
		check(err)
		openCPU += s.cpuSince(cpu)
		openTimes = append(openTimes, took)
		if i < n-1 {
			check(s.notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": d.uri}}))
			// Let the server finish what the close left (freeing trees)
			// first, as between two files a user opens.
			time.Sleep(100 * time.Millisecond)
		}
	}
	cpu := s.cpu()
	for _, d := range docs[1:] {
		took, err := s.open(d)
		check(err)
		openTimes = append(openTimes, took)
	}
	doc := docs[0]
	rows = append(rows, row{name: "open", samples: openTimes, cpu: openCPU + s.cpuSince(cpu)})
	rows = append(rows, row{name: "parse (floor)", samples: parseTimes, cpu: -1})
	time.Sleep(*settle)
	rssOpen := s.rss()
	// A server may publish an open file's findings in steps (vramlint's
	// wait for other files of the folder to be read): the open's row is
	// the first step, and this the last that came in the pause.
	firstCount := len(doc.diagnostics)
	openSteps := ""
	if last, n := s.lastOpenDiagnostics(doc); n > 0 {
		openSteps = fmt.Sprintf("open of %s: %d diagnostics first; %d later publication(s) in the %v pause, the last (%d diagnostics) %.1f ms after the open\n",
			path.Base(doc.uri), firstCount, n, *settle, len(doc.diagnostics), ms(last.Sub(doc.opened)))
	}
	if *reparse {
		doc.floor, err = newReparseFloor(doc.text)
		check(err)
		defer doc.floor.close()
	}
	// scenario runs one scenario of changes on doc and adds its row, and
	// the row of its changes' reparse floor; it returns the first.
	var edited []row // the rows of scenarios of changes, with their floors
	scenario := func(name string, run func() ([]time.Duration, error)) row {
		cpu := s.cpu()
		before := len(doc.reparses)
		took, err := run()
		check(err)
		r := row{name: name, samples: took, cpu: s.cpuSince(cpu), reparses: doc.reparses[before:]}
		rows = append(rows, r)
		if len(r.reparses) > 0 {
			rows = append(rows, row{name: "  reparse (floor)", samples: r.reparses, cpu: -1})
			edited = append(edited, r)
		}
		return r
	}
	for _, place := range []struct {
		name string
		at   float64
	}{{"edit at start", 0.02}, {"edit in middle", 0.5}, {"edit at end", 0.98}} {
		scenario(place.name, func() ([]time.Duration, error) { return s.editAt(doc, place.at, *edits) })
	}
	if *spread > 0 {
		scenario("edits spread", func() ([]time.Duration, error) { return s.editSpread(doc, *spread) })
	}
	if *typing {
		custom := ""
		if *typeFile != "" {
			text, err := os.ReadFile(*typeFile)
			check(err)
			custom = string(text)
		}
		typed, err := generated.TypedText(custom, doc.text, *typeAt)
		if err != nil {
			check(fmt.Errorf("--type-at %s: %w", *typeAt, err))
		}
		r := scenario("typing (per key)", func() ([]time.Duration, error) { return s.typeText(doc, typed, *typeAt) })
		if *keys != "" {
			check(writeKeys(*keys, typed, r.samples, r.reparses))
		}
	}
	if *actions > 0 {
		cpu := s.cpu()
		took, err := s.codeActions(doc, *actions)
		check(err)
		rows = append(rows, row{name: "code action", samples: took, cpu: s.cpuSince(cpu)})
	}
	time.Sleep(*settle)
	rssEnd, rssPeak := s.rss(), s.peakRSS()
	for _, d := range docs {
		check(s.notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": d.uri}}))
	}
	time.Sleep(*settle)
	rssClosed := s.rss()
	fmt.Printf("server: %s\nfiles: %d open; the scenarios ran on %s (%d lines, %d diagnostics at the end)\n\n", *serverCmd, len(docs), paths[0], strings.Count(doc.text, "\n"), len(doc.diagnostics))
	printTable(rows)
	printAgainstFloor(edited)
	if len(openTimes) == len(parseTimes) {
		fmt.Printf("\nopen / parse, p50: %.2f\n", ms(median(openTimes))/ms(median(parseTimes)))
		if len(openTimes) > 1 {
			// Later opens find the fix verdicts of the first (see above).
			fmt.Printf("open / parse, the first open (nothing verified yet): %.2f\n", ms(openTimes[0])/ms(parseTimes[0]))
		}
	}
	fmt.Print(openSteps)
	fmt.Printf("\nRSS before opening: %s; %v after open: %s; %v after the last request: %s; %v after closing every file: %s; at most, before closing: %s\n",
		rssStart, *settle, rssOpen, *settle, rssEnd, *settle, rssClosed, rssPeak)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "lspbench:", err)
		os.Exit(1)
	}
}

// row is one line of the table: a scenario's latencies.
type row struct {
	name    string
	samples []time.Duration
	// cpu is the CPU time the server used over the scenario, on every
	// core (garbage collection and work beside the requests included):
	// on a shared machine it varies less than the latencies.
	cpu time.Duration
	// reparses are the same changes' reparse floor, in order (see
	// reparseFloor); none for what is not a change.
	reparses []time.Duration
}

func printTable(rows []row) {
	fmt.Printf("%-18s %6s %9s %9s %9s %9s %11s\n", "scenario", "n", "p50 ms", "p95 ms", "p99 ms", "max ms", "cpu ms/op")
	for _, r := range rows {
		if len(r.samples) == 0 {
			continue
		}
		s := slices.Clone(r.samples)
		slices.Sort(s)
		cpu := "?"
		if r.cpu >= 0 {
			cpu = fmt.Sprintf("%.2f", ms(r.cpu)/float64(len(s)))
		}
		fmt.Printf("%-18s %6d %9.2f %9.2f %9.2f %9.2f %11s\n", r.name, len(s), ms(percentile(s, 50)), ms(percentile(s, 95)), ms(percentile(s, 99)), ms(s[len(s)-1]), cpu)
	}
}

// printAgainstFloor says, for each scenario of changes, how its latencies
// compare with its changes' reparse floor: the percentiles side by side,
// and how many of the changes over the p99 bound (15 ms) took at most
// three times their own reparse, the bound for an edit tree-sitter alone
// makes slow.
func printAgainstFloor(rows []row) {
	if len(rows) == 0 {
		return
	}
	fmt.Println()
	for _, r := range rows {
		took, floor := slices.Clone(r.samples), slices.Clone(r.reparses)
		slices.Sort(took)
		slices.Sort(floor)
		slow, explained := 0, 0
		for i, d := range r.samples {
			if d > 15*time.Millisecond {
				slow++
				if i < len(r.reparses) && d <= 3*r.reparses[i] {
					explained++
				}
			}
		}
		fmt.Printf("%s against its reparse: p50 %.2f / %.2f ms, p99 %.2f / %.2f ms; %d change(s) over 15 ms, %d of them within 3x their own reparse\n",
			r.name, ms(percentile(took, 50)), ms(percentile(floor, 50)), ms(percentile(took, 99)), ms(percentile(floor, 99)), slow, explained)
	}
}

// percentile of sorted samples, nearest rank.
func percentile(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	return sorted[max(0, min(len(sorted)-1, i-1))]
}

func median(samples []time.Duration) time.Duration {
	s := slices.Clone(samples)
	slices.Sort(s)
	return percentile(s, 50)
}

// parseFloor is how long tree-sitter's Python parser, through the binding
// vramlint uses, takes to parse text afresh on one core (the tree freed
// after the clock stops).
func parseFloor(text string) (time.Duration, error) {
	src := []byte(text)
	begin := time.Now()
	tree, err := floorParser.ParseCtx(context.Background(), nil, src)
	took := time.Since(begin)
	if err != nil {
		return 0, err
	}
	tree.Close()
	return took, nil
}

// floorParser is made once: making a parser allocates its buffers, which
// a server that parses many times does once too.
var floorParser = func() *sitter.Parser {
	p := sitter.NewParser()
	p.SetLanguage(python.GetLanguage())
	return p
}()

// reparseFloor is the yardstick of an edit: tree-sitter's incremental
// reparse of the same change, through the binding the server uses, of
// the whole file on one core. It keeps its own tree of the document as
// the client edits it; each change is applied to it and parsed again
// before the change is sent, so that it does not share the cores with
// the server's work on it. The bounds for an edit whose reparse
// alone is slow are relative to it (see docs/PERFORMANCE.md).
type reparseFloor struct {
	parser *sitter.Parser
	tree   *sitter.Tree
}

// newReparseFloor parses text whole (untimed) to start from.
func newReparseFloor(text string) (*reparseFloor, error) {
	p := sitter.NewParser()
	p.SetLanguage(python.GetLanguage())
	tree, err := p.ParseCtx(context.Background(), nil, []byte(text))
	if err != nil {
		p.Close()
		return nil, err
	}
	return &reparseFloor{parser: p, tree: tree}, nil
}

// apply tells the tree that old's bytes [start, end) became text, making
// edited, and reparses edited, the old tree given; it returns the parse's
// time.
func (f *reparseFloor) apply(old, edited string, start, end int, text string) (time.Duration, error) {
	at := bytePoint(old, start)
	f.tree.Edit(sitter.EditInput{
		StartIndex:  uint32(start),
		OldEndIndex: uint32(end),
		NewEndIndex: uint32(start + len(text)),
		StartPoint:  at,
		OldEndPoint: pointAfter(at, old[start:end]),
		NewEndPoint: pointAfter(at, text),
	})
	src := []byte(edited)
	begin := time.Now()
	tree, err := f.parser.ParseCtx(context.Background(), f.tree, src)
	took := time.Since(begin)
	if err != nil {
		return 0, err
	}
	f.tree.Close()
	f.tree = tree
	return took, nil
}

func (f *reparseFloor) close() {
	f.tree.Close()
	f.parser.Close()
}

// bytePoint is tree-sitter's point of byte offset off: its row, and its
// column in bytes.
func bytePoint(text string, off int) sitter.Point {
	return pointAfter(sitter.Point{}, text[:off])
}

// pointAfter is the point reached from p over text.
func pointAfter(p sitter.Point, text string) sitter.Point {
	if k := strings.LastIndexByte(text, '\n'); k >= 0 {
		return sitter.Point{Row: p.Row + uint32(strings.Count(text, "\n")), Column: uint32(len(text) - k - 1)}
	}
	return sitter.Point{Row: p.Row, Column: p.Column + uint32(len(text))}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// server is a running language server and what it has said.
type server struct {
	cmd      *exec.Cmd
	in       io.WriteCloser
	settings any
	timeout  time.Duration
	nextID   int
	gap      time.Duration // see --gap

	// fullSync: the server asked for the whole text on every change
	// (textDocumentSync 1, as ast-grep's does).
	fullSync bool

	mu      sync.Mutex
	waiting map[int]chan json.RawMessage // responses by request id
	// progress are the server's work-done progress tokens begun and not
	// ended; progressEnded is when the last one ended.
	progress      map[string]bool
	progressEnded time.Time
	diags         chan published // publishDiagnostics, in order
	done          chan struct{}  // closed when the server's output ends
}

type published struct {
	uri     string
	version *int
	starts  []position // where each diagnostic starts
	// arrived is when the message's last byte was read, before this client
	// decoded it: decoding 100 KB of diagnostics takes milliseconds of the
	// client's, which are not the server's latency.
	arrived time.Time
}

// position is an LSP position.
type position struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

func start(argv []string, settings any, timeout time.Duration) (*server, error) {
	if len(argv) == 0 {
		return nil, errors.New("no server command")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, in: in, settings: settings, timeout: timeout,
		waiting: map[int]chan json.RawMessage{}, progress: map[string]bool{}, diags: make(chan published, 1<<16), done: make(chan struct{})}
	go s.read(bufio.NewReaderSize(out, 1<<20))
	return s, nil
}

func (s *server) stop() {
	s.request("shutdown", nil)
	s.notify("exit", nil)
	s.in.Close()
	select {
	case <-s.done:
	case <-time.After(2 * time.Second):
		s.cmd.Process.Kill()
	}
	s.cmd.Wait()
}

// read reads the server's messages: it answers its requests, hands
// responses to their callers and queues published diagnostics.
func (s *server) read(r *bufio.Reader) {
	defer close(s.done)
	for {
		body, err := readMessage(r)
		if err != nil {
			return
		}
		arrived := time.Now()
		var m struct {
			ID     *json.RawMessage `json:"id"`
			Method string           `json:"method"`
			Params json.RawMessage  `json:"params"`
			Result json.RawMessage  `json:"result"`
			Error  json.RawMessage  `json:"error"`
		}
		if json.Unmarshal(body, &m) != nil {
			continue
		}
		switch {
		case m.Method == "textDocument/publishDiagnostics":
			var p struct {
				URI         string `json:"uri"`
				Version     *int   `json:"version"`
				Diagnostics []struct {
					Range struct {
						Start position `json:"start"`
					} `json:"range"`
				} `json:"diagnostics"`
			}
			if json.Unmarshal(m.Params, &p) == nil {
				starts := make([]position, len(p.Diagnostics))
				for i, d := range p.Diagnostics {
					starts[i] = d.Range.Start
				}
				s.diags <- published{p.URI, p.Version, starts, arrived}
			}
		case m.Method == "$/progress":
			var p struct {
				Token json.RawMessage `json:"token"`
				Value struct {
					Kind string `json:"kind"`
				} `json:"value"`
			}
			if json.Unmarshal(m.Params, &p) == nil {
				s.mu.Lock()
				switch p.Value.Kind {
				case "begin":
					s.progress[string(p.Token)] = true
				case "end":
					delete(s.progress, string(p.Token))
					s.progressEnded = arrived
				}
				s.mu.Unlock()
			}
		case m.Method != "" && m.ID != nil:
			s.answer(*m.ID, m.Method, m.Params)
		case m.ID != nil:
			id, _ := strconv.Atoi(string(*m.ID))
			s.mu.Lock()
			ch := s.waiting[id]
			delete(s.waiting, id)
			s.mu.Unlock()
			if ch != nil {
				if m.Error != nil {
					ch <- nil
				} else {
					ch <- m.Result
				}
			}
		}
	}
}

// progressOver waits, at most limit, until no work-done progress of the
// server's is under way, and says when the last one ended (zero when none
// did); ok is false when it waited in vain.
func (s *server) progressOver(limit time.Duration) (ended time.Time, ok bool) {
	deadline := time.Now().Add(limit)
	for {
		s.mu.Lock()
		busy, last := len(s.progress) > 0, s.progressEnded
		s.mu.Unlock()
		if !busy {
			return last, true
		}
		if time.Now().After(deadline) {
			return last, false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// answer replies to a request from the server: the settings for each
// configuration item asked for, null for anything else.
func (s *server) answer(id json.RawMessage, method string, params json.RawMessage) {
	var result any
	if method == "workspace/configuration" {
		var p struct {
			Items []json.RawMessage `json:"items"`
		}
		json.Unmarshal(params, &p)
		items := make([]any, len(p.Items))
		for i := range items {
			items[i] = s.settings
		}
		result = items
	}
	s.write(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func readMessage(r *bufio.Reader) ([]byte, error) {
	length := -1
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Content-Length:"); ok {
			length, err = strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return nil, err
			}
		}
	}
	if length < 0 {
		return nil, errors.New("a message without Content-Length")
	}
	body := make([]byte, length)
	_, err := io.ReadFull(r, body)
	return body, err
}

func (s *server) write(msg any) error {
	body, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	return s.writeBody(body)
}

func (s *server) writeBody(body []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := fmt.Fprintf(s.in, "Content-Length: %d\r\n\r\n%s", len(body), body)
	return err
}

func (s *server) notify(method string, params any) error {
	body, err := notification(method, params)
	if err != nil {
		return err
	}
	return s.writeBody(body)
}

// notification encodes a notification's message.
func notification(method string, params any) ([]byte, error) {
	return json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// request sends a request and waits for its result.
func (s *server) request(method string, params any) (json.RawMessage, error) {
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	ch := make(chan json.RawMessage, 1)
	s.waiting[id] = ch
	s.mu.Unlock()
	if err := s.write(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return nil, err
	}
	select {
	case res := <-ch:
		return res, nil
	case <-s.done:
		return nil, fmt.Errorf("%s: the server exited", method)
	case <-time.After(s.timeout):
		return nil, fmt.Errorf("%s: no answer in %v", method, s.timeout)
	}
}

func (s *server) initialize(root string) error {
	var rootURI any // null: no workspace
	if root != "" {
		rootURI = root
	}
	result, err := s.request("initialize", map[string]any{
		"processId": os.Getpid(), "rootUri": rootURI, "initializationOptions": s.settings,
		"capabilities": map[string]any{
			"workspace": map[string]any{"configuration": true},
			// Its progress tells when the server's indexing is over.
			"window": map[string]any{"workDoneProgress": true},
			"textDocument": map[string]any{
				"synchronization":    map[string]any{"didSave": true},
				"publishDiagnostics": map[string]any{"versionSupport": true},
				"codeAction": map[string]any{"codeActionLiteralSupport": map[string]any{
					"codeActionKind": map[string]any{"valueSet": []string{"quickfix", "source.fixAll"}}}},
			},
		},
	})
	if err != nil {
		return err
	}
	var caps struct {
		Capabilities struct {
			TextDocumentSync json.RawMessage `json:"textDocumentSync"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(result, &caps) == nil {
		var kind int
		var options struct {
			Change int `json:"change"`
		}
		if json.Unmarshal(caps.Capabilities.TextDocumentSync, &kind) != nil && json.Unmarshal(caps.Capabilities.TextDocumentSync, &options) == nil {
			kind = options.Change
		}
		s.fullSync = kind == 1
	}
	return s.notify("initialized", map[string]any{})
}

// document is the open file as the client sees it.
type document struct {
	uri         string
	text        string
	version     int
	diagnostics []position // where the last published diagnostics start
	opened      time.Time  // when its didOpen was sent
	// floor, when set, reparses each change in this process before it
	// is sent, and reparses holds how long each took (see reparseFloor).
	floor    *reparseFloor
	reparses []time.Duration
}

// lastOpenDiagnostics takes the diagnostics of doc's first version that
// came after the first (see open), and says how many came and when the
// last did. Those of other documents, which no scenario waits for, go too.
func (s *server) lastOpenDiagnostics(doc *document) (last time.Time, n int) {
	for {
		select {
		case p := <-s.diags:
			if p.uri == doc.uri && (p.version == nil || *p.version == 1) {
				doc.diagnostics, last = p.starts, p.arrived
				n++
			}
		default:
			return last, n
		}
	}
}

// awaitDiagnostics waits for the diagnostics of doc's current version (of
// any version, for servers that do not say which) and says when they
// arrived.
func (s *server) awaitDiagnostics(doc *document) (arrived time.Time, err error) {
	deadline := time.After(s.timeout)
	for {
		select {
		case p := <-s.diags:
			if p.uri == doc.uri && (p.version == nil || *p.version >= doc.version) {
				doc.diagnostics = p.starts
				return p.arrived, nil
			}
		case <-s.done:
			return time.Time{}, errors.New("the server exited")
		case <-deadline:
			return time.Time{}, fmt.Errorf("no diagnostics for version %d in %v", doc.version, s.timeout)
		}
	}
}

func (s *server) open(doc *document) (time.Duration, error) {
	doc.version = 1
	// The message is encoded before the clock starts: encoding a
	// megabyte of text is the client's time, not the server's.
	body, err := notification("textDocument/didOpen", map[string]any{"textDocument": map[string]any{
		"uri": doc.uri, "languageId": "python", "version": doc.version, "text": doc.text}})
	if err != nil {
		return 0, err
	}
	begin := time.Now()
	doc.opened = begin
	if err := s.writeBody(body); err != nil {
		return 0, err
	}
	arrived, err := s.awaitDiagnostics(doc)
	return arrived.Sub(begin), err
}

// change replaces the bytes [start, end) of doc's text with text, sent as
// one incremental change, and returns the time to its diagnostics.
func (s *server) change(doc *document, start, end int, text string) (time.Duration, error) {
	from, to := positionOf(doc.text, start), positionOf(doc.text, end)
	edited := doc.text[:start] + text + doc.text[end:]
	if doc.floor != nil {
		// Before the change is sent: the server is idle meanwhile.
		took, err := doc.floor.apply(doc.text, edited, start, end, text)
		if err != nil {
			return 0, err
		}
		doc.reparses = append(doc.reparses, took)
	}
	doc.text = edited
	doc.version++
	begin := time.Now()
	change := map[string]any{"range": map[string]any{"start": from, "end": to}, "text": text}
	if s.fullSync {
		change = map[string]any{"text": doc.text}
	}
	if err := s.notify("textDocument/didChange", map[string]any{
		"textDocument":   map[string]any{"uri": doc.uri, "version": doc.version},
		"contentChanges": []any{change},
	}); err != nil {
		return 0, err
	}
	arrived, err := s.awaitDiagnostics(doc)
	return arrived.Sub(begin), err
}

// positionOf is the LSP position (UTF-16 columns) of byte offset off.
func positionOf(text string, off int) position {
	line := strings.Count(text[:off], "\n")
	lineStart := strings.LastIndexByte(text[:off], '\n') + 1
	col := 0
	for _, r := range text[lineStart:off] {
		col++
		if r > 0xFFFF {
			col++
		}
	}
	return position{Line: line, Character: col}
}

// editAt types a letter before the first word of a statement near the given
// share of the file and deletes it again, n times in all.
func (s *server) editAt(doc *document, share float64, n int) ([]time.Duration, error) {
	at := statementStart(doc.text, int(share*float64(len(doc.text))))
	var took []time.Duration
	for i := range n {
		if i > 0 {
			time.Sleep(s.gap)
		}
		var d time.Duration
		var err error
		if i%2 == 0 {
			d, err = s.change(doc, at, at, "x")
		} else {
			d, err = s.change(doc, at, at+1, "")
		}
		if err != nil {
			return nil, err
		}
		took = append(took, d)
	}
	return took, nil
}

// editSpread types a letter at the first statement start past each of n
// evenly spread places of the file, and deletes it again.
func (s *server) editSpread(doc *document, n int) ([]time.Duration, error) {
	var took []time.Duration
	for i := range n {
		if i > 0 {
			time.Sleep(s.gap)
		}
		place, err := s.editAt(doc, (float64(i)+0.5)/float64(n), 2)
		if err != nil {
			return nil, err
		}
		took = append(took, place...)
	}
	return took, nil
}

// statementStart finds, from off on, the first letter of a line that
// starts with a name which is not a keyword: typing there keeps the code
// valid.
func statementStart(text string, off int) int {
	keywords := " def class for while if elif else try except finally with return import from pass raise "
	for off < len(text) {
		lineEnd := strings.IndexByte(text[off:], '\n')
		if lineEnd < 0 {
			break
		}
		next := off + lineEnd + 1
		line := text[next:]
		if i := strings.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		body := strings.TrimLeft(line, " \t")
		word := body
		if i := strings.IndexFunc(body, func(r rune) bool {
			return r != '_' && !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
		}); i >= 0 {
			word = body[:i]
		}
		if word != "" && (word[0] < '0' || word[0] > '9') && !strings.Contains(keywords, " "+word+" ") {
			return next + len(line) - len(body)
		}
		off = next
	}
	return 0
}

// typeText types text where says (see --type-at), one character a
// change, as an editor sends keys: at the top-level line nearest the
// middle of the file, after its last line, or on the blank line above
// the first method past the middle that has one (see generated.TypingAt;
// text indented as it, see generated.AsMethod).
func (s *server) typeText(doc *document, text, where string) ([]time.Duration, error) {
	at, err := generated.TypingAt(doc.text, where)
	if err != nil {
		return nil, fmt.Errorf("--type-at %s: %w", where, err)
	}
	var took []time.Duration
	for _, r := range text {
		if len(took) > 0 {
			time.Sleep(s.gap)
		}
		d, err := s.change(doc, at, at, string(r))
		if err != nil {
			return nil, err
		}
		took = append(took, d)
		at += len(string(r))
	}
	return took, nil
}

// writeKeys writes the typing session's latencies a key a line, each with
// its reparse floor (0 without --reparse) and the line of text as typed up
// to and including that key.
func writeKeys(path, text string, took, reparses []time.Duration) error {
	var b strings.Builder
	line := ""
	key := 0
	for _, r := range text {
		if r == '\n' {
			line = ""
		} else {
			line += string(r)
		}
		var floor time.Duration
		if key < len(reparses) {
			floor = reparses[key]
		}
		fmt.Fprintf(&b, "%d\t%.2f\t%.2f\t%q\n", key+1, ms(took[key]), ms(floor), line)
		key++
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// codeActions asks for code actions at the cursor, without `only`, at the
// start of each published diagnostic in turn (or, with none, at lines
// spread over the file), as an editor does when the cursor moves.
func (s *server) codeActions(doc *document, n int) ([]time.Duration, error) {
	at := doc.diagnostics
	if len(at) == 0 {
		total := strings.Count(doc.text, "\n") + 1
		for i := range n {
			at = append(at, position{Line: i * total / n})
		}
	}
	var took []time.Duration
	for i := range n {
		cursor := at[i%len(at)]
		begin := time.Now()
		_, err := s.request("textDocument/codeAction", map[string]any{
			"textDocument": map[string]any{"uri": doc.uri},
			"range":        map[string]any{"start": cursor, "end": cursor},
			"context":      map[string]any{"diagnostics": []any{}},
		})
		if err != nil {
			return nil, err
		}
		took = append(took, time.Since(begin))
	}
	return took, nil
}

// cpu is the CPU time the server process has used so far, user and
// system (/proc/PID/stat, in clock ticks of 10 ms), or -1 where it cannot
// be read (a system without /proc).
func (s *server) cpu() time.Duration {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	// The fields after the command, which is in parentheses and may hold
	// spaces: state is the 3rd field of stat, utime and stime the 14th
	// and 15th.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(fields) < 13 {
		return -1
	}
	user, err1 := strconv.ParseInt(fields[11], 10, 64)
	system, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return time.Duration(user+system) * (time.Second / clockTicks)
}

// cpuSince is the CPU time the server used since it had used before, or
// -1 where either cannot be read.
func (s *server) cpuSince(before time.Duration) time.Duration {
	now := s.cpu()
	if before < 0 || now < 0 {
		return -1
	}
	return now - before
}

// clockTicks is Linux's USER_HZ, the unit of /proc's CPU times: 100 on
// every architecture Go supports.
const clockTicks = 100

// rss is the server's resident memory now, from /proc ("?" elsewhere).
func (s *server) rss() string { return s.memory("VmRSS:") }

// peakRSS is the most resident memory the server had at any moment.
func (s *server) peakRSS() string { return s.memory("VmHWM:") }

// memory reads a size from /proc/PID/status.
func (s *server) memory(field string) string {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return fmt.Sprintf("%.1f MiB", float64(kb)/1024)
		}
	}
	return "?"
}

// generate writes a PyTorch training file of about n lines: datasets,
// models, training and evaluation functions, with a device move in a
// Dataset, an empty_cache in a loop and a loss kept with its graph now
// and then.
func generate(n int) string {
	var b strings.Builder
	b.WriteString("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nfrom torch.utils.data import DataLoader, Dataset\n\ndevice = torch.device(\"cuda\")\n")
	for i := 0; strings.Count(b.String(), "\n") < n; i++ {
		move, keep, clear := "x", "loss.item()", ""
		if i%7 == 0 {
			move = "x.cuda()"
		}
		if i%5 == 0 {
			keep = "loss"
		}
		if i%9 == 0 {
			clear = "\n            torch.cuda.empty_cache()"
		}
		fmt.Fprintf(&b, `

class Data%[1]d(Dataset):
    """Samples for experiment %[1]d."""

    def __init__(self, n):
        self.x = torch.randn(n, 16)
        self.y = torch.randint(0, 4, (n,))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        return %[2]s, self.y[i]


class Model%[1]d(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def train%[1]d(epochs=3):
    model = Model%[1]d().to(device)
    loader = DataLoader(Data%[1]d(256), batch_size=32, num_workers=2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    history = []
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            out = model(x.to(device))
            loss = F.cross_entropy(out, y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(%[3]s)%[4]s
    return history
`, i, move, keep, clear)
	}
	return b.String()
}
