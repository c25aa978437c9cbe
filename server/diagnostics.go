package server

import (
	"context"
	"encoding/json"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/pyast"
)

// scheduleDiagnostics (re)starts the debounce for d's current version: a
// newer version cancels the pending or running analysis of an older one.
// Call with s.mu held.
func (s *Server) scheduleDiagnostics(d *document) {
	d.stopDiagnostics()
	if s.pullMode() {
		return // the client asks (textDocument/diagnostic)
	}
	snap := d.snap
	ctx, cancel := context.WithCancel(context.Background())
	d.cancelRun = cancel
	run := func() { go s.publish(ctx, snap) }
	if s.editor.debounce <= 0 {
		run()
		return
	}
	d.timer = time.AfterFunc(s.editor.debounce, run)
}

// stopDiagnostics cancels d's pending and running analysis, and its
// pending summary for the workspace index.
func (d *document) stopDiagnostics() {
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	if d.summaryTimer != nil {
		d.summaryTimer.Stop()
		d.summaryTimer, d.toSummarise = nil, nil
	}
	if d.cancelRun != nil {
		d.cancelRun()
		d.cancelRun = nil
	}
}

// publish analyses snap and pushes its diagnostics, unless a newer version
// arrived meanwhile: a result for an old version is never published.
func (s *Server) publish(ctx context.Context, snap *snapshot) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Printf("panic while analysing %s: %v", snap.uri, p)
		}
	}()
	if ctx.Err() != nil {
		return
	}
	s.mu.Lock()
	d := s.docs[snap.uri]
	s.mu.Unlock()
	if d == nil {
		return // closed
	}
	s.foreground.begin()
	defer s.foreground.end()
	started := time.Now()
	var otherFiles int64 // the index's parses so far, for --trace-phases
	var otherParse time.Duration
	if s.opts.PhaseTrace != nil {
		otherFiles, otherParse = s.projects.Parsed()
	}
	res, ok := s.analyzeInTurn(ctx, d, snap, &started)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock() // held while sending, so no older result can overtake
	if s.docs[snap.uri] != d || !d.current(snap) || ctx.Err() != nil {
		return
	}
	analysed := time.Now()
	doc := snap.lspDocument()
	buf := encodeBuffers.Get().(*[]byte)
	b := appendPublishHead((*buf)[:0], doc.URI, uint32(snap.version))
	b, d.sent = appendDiagnostics(b, doc, snap.src, res, s.opts.Rules, s.client.TextDocument.PublishDiagnostics.RelatedInformation, d.sent)
	*buf = appendPublishTail(b)
	converted := time.Now()
	s.sendDiagnostics(buf)
	if s.opts.PhaseTrace != nil {
		files, parse := s.projects.Parsed()
		s.tracePhases(snap, res, started, analysed, converted, time.Now(), max(0, files-otherFiles), max(0, parse-otherParse))
	}
	s.prepareWhenIdle(d, snap)
	if d.analyseAgain {
		s.reanalyse(d, snap.settings)
	}
}

// analyzeInTurn analyses snap once no other version of d is being
// analysed for its diagnostics, and sets started to when it began; ok is
// false when ctx is cancelled first (a newer version arrived, or d
// closed). One analysis of a document at a time: an analysis cannot be
// stopped halfway, so a file whose analysis is slow had one more running
// on every keystroke, all but the last discarded, each taking a core; now
// the versions typed meanwhile give up, and only the latest runs after it.
func (s *Server) analyzeInTurn(ctx context.Context, d *document, snap *snapshot, started *time.Time) (res *analysis.Result, ok bool) {
	select {
	case d.analysing <- struct{}{}:
	case <-ctx.Done():
		return nil, false
	}
	defer func() { <-d.analysing }()
	if ctx.Err() != nil {
		return nil, false
	}
	*started = time.Now()
	return s.analyze(snap), true
}

// prepareWhenIdle makes the spares of the version after snap ready (see
// pyast.Editor.PrepareSparesLater) now that its diagnostics are sent, when
// the change that made it was analysed at once (debounce 0). Copying its
// laid-out text beside its analysis took a core from the analysis: at
// 50,000 lines, one-character edits took 4.1-4.3 ms at the server's median
// instead of 4.5-6.2. With a debounce, the parse did it (see didChange).
// Call with s.mu held.
func (s *Server) prepareWhenIdle(d *document, snap *snapshot) {
	if s.editor.debounce <= 0 && d.snap == snap && snap.tree != nil {
		snap.tree.PrepareForEdits()
	}
}

// phaseTrace is one line of --trace-phases: a version's phases, in
// milliseconds of wall time, from reading its change (or didOpen) to
// sending its diagnostics. change is decoding the message and applying
// it, wait is the time between the parse and the analysis's start (the
// debounce, and a core to run on), and analysis is the whole analysis:
// model, rules, fixes, and the rest (suppressions, reused findings, and
// the wait for the server's lock to send), convert is converting the
// diagnostics to LSP and encoding them (see sentDiagnostics), and send
// is writing them. faults is how many minor page faults the process has
// taken so far (on Unix; 0 elsewhere): the difference between two lines
// is the pages the system had to map for the versions between them and
// the work beside them, about a microsecond each. gcCycles and gcAssist
// are the collections the process has finished so far and the CPU its
// goroutines spent helping the collector mark (ms): a slow version whose
// line differs from the last one's there was analysed while a collection
// ran, and paid for what it allocated meanwhile. otherFiles is how many
// files the workspace index parsed from the start of the version's
// analysis (or of its wait for the analysis before) to the sending of its
// diagnostics, whatever asked (the rules' questions about other files'
// functions, the indexing of the folder beside it), and otherFilesParse
// the milliseconds of those parses.
type phaseTrace struct {
	URI      string  `json:"uri"`
	Version  int32   `json:"version"`
	Bytes    int     `json:"bytes"`
	Change   float64 `json:"change"`
	Parse    float64 `json:"parse"`
	Wait     float64 `json:"wait"`
	Analysis float64 `json:"analysis"`
	Model    float64 `json:"model"`
	Rules    float64 `json:"rules"`
	Fixes    float64 `json:"fixes"`
	Convert  float64 `json:"convert"`
	Send     float64 `json:"send"`
	Total    float64 `json:"total"`
	Faults   int64   `json:"faults"`
	GCCycles uint64  `json:"gcCycles"`
	GCAssist float64 `json:"gcAssist"`

	OtherFiles      int64   `json:"otherFiles"`
	OtherFilesParse float64 `json:"otherFilesParse"`
}

// tracePhases writes snap's phaseTrace. Call with s.mu held.
func (s *Server) tracePhases(snap *snapshot, res *analysis.Result, started, analysed, converted, sent time.Time, otherFiles int64, otherParse time.Duration) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	received, parsing, parsed := snap.received, snap.parsing, snap.parsed
	if received.IsZero() {
		// A version analysed again without a change (new settings, a
		// save): it starts with the analysis.
		received, parsing, parsed = started, started, started
	}
	trace := phaseTrace{
		URI: snap.uri, Version: snap.version, Bytes: len(snap.src),
		Change:   ms(parsing.Sub(received)),
		Parse:    ms(parsed.Sub(parsing)),
		Wait:     ms(started.Sub(parsed)),
		Analysis: ms(analysed.Sub(started)),
		Model:    ms(res.Timings.Model),
		Rules:    ms(res.Timings.Rules),
		Fixes:    ms(res.Timings.Fixes),
		Convert:  ms(converted.Sub(analysed)),
		Send:     ms(sent.Sub(converted)),
		Total:    ms(sent.Sub(received)),
		Faults:   minorFaults(),

		OtherFiles:      otherFiles,
		OtherFilesParse: ms(otherParse),
	}
	trace.GCCycles, trace.GCAssist = collectorSoFar()
	line, err := json.Marshal(trace)
	if err == nil {
		_, err = s.opts.PhaseTrace.Write(append(line, '\n'))
	}
	if err != nil {
		s.log.Printf("--trace-phases: %v", err)
	}
}

// analyze returns snap's analysis for its diagnostics, pushed or pulled:
// it logs the rules that failed, and after a large document's analysis, or
// once much was allocated since the last release, it arranges for memory
// to go back to the system when the editor pauses.
func (s *Server) analyze(snap *snapshot) *analysis.Result {
	res := snap.analyze()
	s.logRuleErrors(snap.uri, res)
	// The index learns the new version off the path to the diagnostics,
	// once the editor pauses: summarising every version while typing
	// (milliseconds at 50,000 lines) took a core from the next keystroke,
	// and the other files need only the version the typing stops at.
	s.mu.Lock()
	s.collectWhenIdle()
	if d := s.docs[snap.uri]; d != nil && d.snap == snap {
		d.toSummarise = res
		if d.summaryTimer == nil {
			d.summaryTimer = time.AfterFunc(summaryPause, func() { s.summariseLatest(d) })
		} else {
			d.summaryTimer.Reset(summaryPause)
		}
	}
	if s.releaseDue || len(snap.src) >= largeDocument || allocatedSinceRelease() >= releaseAfter.Load() {
		s.releaseWhenIdle()
	}
	s.mu.Unlock()
	return res
}

// summaryPause is how long a version of an open buffer must stay the
// latest before the workspace index summarises it for the other files.
var summaryPause = 150 * time.Millisecond

// summariseLatest gives the workspace index the summary of d's latest
// analysed version, if it is still the current one. It is summarised
// without the server's lock, which every change takes; a version typed
// over meanwhile is not recorded.
func (s *Server) summariseLatest(d *document) {
	s.mu.Lock()
	snap, res := d.snap, d.toSummarise
	d.toSummarise = nil
	open := s.docs[d.uri] == d
	s.mu.Unlock()
	if res == nil || res.Model() == nil || res.Model().Tree != snap.tree {
		return // typed over already: the newer version will be recorded
	}
	if open {
		// A large class parsed in parts when the buffer was opened keeps
		// its tree from now on, so that its first edit is parsed
		// incrementally: the parse this takes was kept off the open's
		// path.
		snap.tree.KeepSplitTrees(context.Background())
	}
	summary := s.summarizeModel(snap, res)
	s.mu.Lock()
	d.summaries++
	current := s.docs[snap.uri] == d && d.snap == snap
	askFacts := current && !d.factsAsked
	if current {
		s.recordModel(snap, summary)
		d.factsAsked = true
	}
	s.mu.Unlock()
	if askFacts {
		s.askProjectFacts(snap, res)
	}
}

// askProjectFacts asks, at the first pause after a buffer is opened, for
// the facts of the other files of its project that later versions'
// judgements may ask for (see semantic.File.AskProjectFacts): read now
// rather than on a keystroke. In tensordict's TensorDictBase two letters
// typed of 80 spread over the class took 60 ms each reading them, and one
// 35 ms. A file read for the first time is a summary the index did not
// have, which the next version's model would find as a change of the
// project, and analyse the whole buffer again on the next keystroke: the
// folder's open buffers are analysed again now instead, in the pause.
func (s *Server) askProjectFacts(snap *snapshot, res *analysis.Result) {
	ix := s.projects.For(snap.path)
	if ix == nil {
		return
	}
	before := ix.Changes()
	res.Model().AskProjectFacts()
	if ix.Changes() == before {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reanalyseIndexed(ix, "")
}

// releaseAfter is how much the server may allocate, since it last gave
// memory back, before it gives it back at the next pause even though no
// single document was large: opening fifty 250 KB files allocates as much
// as one very large one, and left the process holding twice what lives.
var releaseAfter = func() *atomic.Uint64 {
	var after atomic.Uint64 // set by tests while servers run
	after.Store(64 << 20)
	return &after
}()

// released is the count of bytes allocated when memory last went back
// (runtime/metrics' cumulative count).
var released atomic.Uint64

// allocatedSinceRelease is how many bytes the process allocated since
// memory last went back.
func allocatedSinceRelease() uint64 {
	return allocatedBytes() - released.Load()
}

// allocatedBytes is how many bytes the process has allocated so far.
func allocatedBytes() uint64 {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// idleRelease is how long the server waits, after the diagnostics of a
// large document, for the next edit before it gives memory back.
var idleRelease = 2 * time.Second

// releaseMemory gives the memory the collector and the C allocator hold
// back to the system (a variable for tests).
var releaseMemory = pyast.ReleaseMemory

// giveMemoryBack releases memory and notes how much had been allocated.
// The document being edited then gets a spare text and source made ready
// (see pyast.Tree.PrepareForEdits): the release let its spares go and gave
// the pages back, and the first keystrokes after the pause would otherwise
// copy its whole text and source into pages the system maps one by one
// (at 50,000 lines, about 2,000 page faults and 1-3 ms a keystroke until
// the collector ran again).
func (s *Server) giveMemoryBack() {
	released.Store(allocatedBytes())
	s.release()
	s.mu.Lock()
	var tree *pyast.Tree
	if d := s.docs[s.editing]; d != nil {
		tree = d.snap.tree
	}
	s.mu.Unlock()
	if tree != nil {
		prepareForEdits(tree)
	}
}

// prepareForEdits calls pyast.Tree.PrepareForEdits, or what a test put in
// its place (prepareHook): atomically, since the servers of earlier tests
// may still be releasing memory when a test replaces it.
func prepareForEdits(tree *pyast.Tree) { (*prepareHook.Load())(tree) }

var prepareHook atomic.Pointer[func(*pyast.Tree)]

func init() {
	prepare := (*pyast.Tree).PrepareForEdits
	prepareHook.Store(&prepare)
}

// releaseWhenIdle gives memory back once no large document has been
// analysed for idleRelease. Opening, typing in or saving (when analysed on
// save) a large file leaves garbage several times what stays live (the
// parse's buffers, each version's text and indexes, a whole model); the
// collector reuses it, but the process keeps it, so an idle server looked
// as large as its busiest moment. A collection costs tens of milliseconds
// on a large file, so it waits for a pause. Call with s.mu held.
func (s *Server) releaseWhenIdle() {
	if s.idle != nil {
		s.idle.Stop()
	}
	s.releaseDue = false
	s.idle = time.AfterFunc(idleRelease, s.giveMemoryBack)
}

// collectWhenIdle collects garbage, if due, once no change has come for
// collectPause (see collectIfDue); a change stops the wait (stopIdleCollect).
// Call with s.mu held.
func (s *Server) collectWhenIdle() {
	if s.collect == nil {
		s.collect = time.AfterFunc(s.collectPause, func() { s.collectInPause() })
		return
	}
	s.collect.Reset(s.collectPause)
}

// stopIdleCollect stops the waits of collectWhenIdle and releaseWhenIdle:
// a change or a document has come, and its analysis must not share the
// machine with a collection the server started. Call with s.mu held.
func (s *Server) stopIdleCollect() {
	if s.collect != nil {
		s.collect.Stop()
	}
	// A release waiting for the pause waits again after this change's
	// analysis: a keystroke that came just before the wait ran out, or
	// whose analysis outlasted it, would otherwise pay for a collection.
	if s.idle != nil && s.idle.Stop() {
		s.releaseDue = true
	}
}

// logRuleErrors logs the rules that failed on a document, and the fixes
// withheld because they would break the syntax.
func (s *Server) logRuleErrors(uri string, res *analysis.Result) {
	if res != nil {
		for _, err := range res.RuleErrors {
			s.log.Printf("%s: %v", uri, err)
		}
		for _, msg := range res.DroppedFixes {
			s.log.Print(msg)
		}
	}
}

// pullDiagnostics answers textDocument/diagnostic (LSP 3.17).
func (s *Server) pullDiagnostics(params json.RawMessage) (requestWork, error) {
	var p struct {
		TextDocument     textDocumentID `json:"textDocument"`
		PreviousResultID string         `json:"previousResultId"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, invalidParams("textDocument/diagnostic", err)
	}
	snap, err := s.snapshotOf(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	return func(context.Context) (any, error) {
		resultID := snap.resultID
		if snap.onSave && !snap.saved && p.PreviousResultID != "" {
			// Analysed on save only: the last save's diagnostics stand.
			return map[string]any{"kind": "unchanged", "resultId": p.PreviousResultID}, nil
		}
		if p.PreviousResultID == resultID {
			return map[string]any{"kind": "unchanged", "resultId": resultID}, nil
		}
		res := s.analyze(snap)
		doc := snap.lspDocument()
		return map[string]any{
			"kind":     "full",
			"resultId": resultID,
			"items":    doc.Diagnostics(res, s.opts.Rules, s.client.TextDocument.PublishDiagnostics.RelatedInformation),
		}, nil
	}, nil
}

// snapshotOf returns the current snapshot of an open document.
func (s *Server) snapshotOf(uri string) (*snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.docs[uri]
	if d == nil {
		return nil, invalidParams("request", errNotOpen(uri))
	}
	return d.snap, nil
}

type errNotOpen string

func (e errNotOpen) Error() string { return "document " + string(e) + " is not open" }
