package server

import (
	"bytes"
	"strconv"

	"go.lsp.dev/protocol"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/codeactions"
)

// Every version publishes all of the file's diagnostics again (LSP has no
// other way): at 50,000 lines 225 of them, about 140 KB of JSON, of which
// a keystroke changes a few. Converting them all to LSP positions and
// encoding them took about half a millisecond a keystroke, as long as
// analysing the edit did. So the server keeps, for each document, the
// encoding of every diagnostic it last published, and writes it again for
// a diagnostic of the next version that is the same one moved by whole
// lines, with its line numbers and the version put in anew.
//
// "The same one moved by whole lines" is proven, not assumed: every field
// that is encoded is equal, every offset is the old one shifted by one
// amount, the new start of the window below is a line start, and the
// source's bytes in that window are the same in both versions. The window
// runs from the start of the line of the diagnostic's first offset to a
// few bytes past its last one (what Mapper.Position reads: the line's
// text before an offset, the bytes at it for a line break or a character
// to step back to the start of). Every position then has the same column,
// and its line moved by as many lines as the window's start did.

// sentDiagnostics are the diagnostics last published for a document.
type sentDiagnostics struct {
	src      []byte // the text they were computed on
	uri      protocol.DocumentURI
	encoding analysis.Encoding
	related  bool             // related information was sent
	list     []sentDiagnostic // in the order sent
	// byKey indexes list by sentKey, made when first needed: a
	// diagnostic is looked for there when it is not where its
	// neighbours were.
	byKey map[sentKey][]int
	// reused counts the diagnostics written again from the last ones (for
	// tests).
	reused int
}

// sentKey finds a diagnostic's candidates among the last ones sent.
type sentKey struct {
	code, message string
	length        int
}

func keyOf(d analysis.Diagnostic) sentKey { return sentKey{d.Code, d.Message, d.End - d.Start} }

// candidates returns the positions in list of the diagnostics sent with
// key.
func (s *sentDiagnostics) candidates(key sentKey) []int {
	if s.byKey == nil {
		s.byKey = make(map[sentKey][]int, len(s.list))
		for i := range s.list {
			k := keyOf(s.list[i].diag)
			s.byKey[k] = append(s.byKey[k], i)
		}
	}
	return s.byKey[key]
}

// sentDiagnostic is one diagnostic as published.
type sentDiagnostic struct {
	diag analysis.Diagnostic
	rule *analysis.Rule
	// from, to: the window of the source its positions depend on (to may
	// be past the end); firstLine is the line at from.
	from, to, firstLine int
	json                []byte
	holes               []numberHole // its line numbers (from firstLine) and version
}

// appendDiagnostics appends the diagnostics of res, computed on src (doc's
// text), as the JSON array of a publishDiagnostics notification, writing
// again those of last that are the same (see above). It returns what the
// next version may reuse.
func appendDiagnostics(b []byte, doc codeactions.Document, src []byte, res *analysis.Result, rules []*analysis.Rule, related bool, last *sentDiagnostics) ([]byte, *sentDiagnostics) {
	b = append(b, '[')
	if res == nil || len(res.Diagnostics) == 0 {
		return append(b, ']'), nil
	}
	if last != nil && (last.uri != doc.URI || last.encoding != doc.Encoding || last.related != related) {
		last = nil
	}
	sent := &sentDiagnostics{src: src, uri: doc.URI, encoding: doc.Encoding, related: related, list: make([]sentDiagnostic, 0, len(res.Diagnostics))}
	// Diagnostics keep their order: the i-th is most likely the last
	// version's (i+skew)-th, skew being what it was for the one before
	// (findings come and go where the edit was). Only when it is not
	// there is it looked for by its key: generated and copied code
	// repeats one finding hundreds of times.
	skew := 0
	for i, d := range res.Diagnostics {
		if i > 0 {
			b = append(b, ',')
		}
		rule := analysis.FindRule(rules, d.Code)
		var entry sentDiagnostic
		found := false
		if last != nil {
			if j := i + skew; j >= 0 && j < len(last.list) {
				entry, found = last.list[j].movedTo(d, rule, last.src, doc.Mapper, src)
			}
			if !found {
				for _, j := range last.candidates(keyOf(d)) {
					if j != i+skew {
						if entry, found = last.list[j].movedTo(d, rule, last.src, doc.Mapper, src); found {
							skew = j - i
							break
						}
					}
				}
			}
		}
		if found {
			sent.reused++
		} else {
			converted := doc.Diagnostic(d, rule, related, res.Others)
			if entry, found = encodeSent(d, rule, converted, doc.Mapper); !found {
				b = (*diagnosticEncoder)(nil).diagnostic(b, converted)
				continue
			}
		}
		b = entry.appendTo(b, doc.Version)
		sent.list = append(sent.list, entry)
	}
	return append(b, ']'), sent
}

// encodeSent encodes d (converted: its LSP form) and notes what a later
// version needs to write it again; ok is false when it cannot be written
// again: it points into other files, or its shape was left to
// json.Marshal.
func encodeSent(d analysis.Diagnostic, rule *analysis.Rule, converted protocol.Diagnostic, mapper *analysis.Mapper) (entry sentDiagnostic, ok bool) {
	lo, hi, ok := offsetBounds(d)
	if !ok {
		return entry, false
	}
	e := diagnosticEncoder{record: true}
	json := e.diagnostic(nil, converted)
	if e.marshalled {
		return entry, false
	}
	line := mapper.LineOf(lo)
	entry = sentDiagnostic{diag: d, rule: rule, from: mapper.LineStart(line), to: hi + windowPast, firstLine: line, json: json, holes: e.holes}
	for i := range entry.holes {
		if !entry.holes[i].version {
			entry.holes[i].line -= line
		}
	}
	return entry, true
}

// windowPast is how far past a diagnostic's last offset its window runs:
// Position reads the bytes at an offset (a "\r\n" to step back over, up to
// utf8.UTFMax bytes of a character to step back to the start of).
const windowPast = 4

// movedTo returns the entry for d when d is e's diagnostic moved by whole
// lines in src (the text after lastSrc); ok is false otherwise.
func (e *sentDiagnostic) movedTo(d analysis.Diagnostic, rule *analysis.Rule, lastSrc []byte, mapper *analysis.Mapper, src []byte) (moved sentDiagnostic, ok bool) {
	shift := d.Start - e.diag.Start
	from := e.from + shift
	if rule != e.rule || from < 0 || from > len(src) || !sameMoved(e.diag, d, shift) {
		return moved, false
	}
	window := func(text []byte, from, to int) []byte { return text[from:min(to, len(text))] }
	if !bytes.Equal(window(lastSrc, e.from, e.to), window(src, from, e.to+shift)) {
		return moved, false
	}
	line := mapper.LineOf(from)
	if mapper.LineStart(line) != from {
		return moved, false
	}
	return sentDiagnostic{diag: d, rule: rule, from: from, to: e.to + shift, firstLine: line, json: e.json, holes: e.holes}, true
}

// appendTo writes the diagnostic for the document's version.
func (e *sentDiagnostic) appendTo(b []byte, version int32) []byte {
	at := 0
	for _, h := range e.holes {
		b = append(b, e.json[at:h.at]...)
		if h.version {
			b = strconv.AppendInt(b, int64(version), 10)
		} else {
			b = strconv.AppendInt(b, int64(e.firstLine+h.line), 10)
		}
		at = h.at + h.width
	}
	return append(b, e.json[at:]...)
}

// offsetBounds returns the least and greatest offsets of d; ok is false
// when d also points into other files.
func offsetBounds(d analysis.Diagnostic) (lo, hi int, ok bool) {
	if d.ReachesOtherFiles() {
		return 0, 0, false
	}
	lo, hi = d.Start, d.Start
	for start, end := range d.Ranges() {
		lo, hi = min(lo, start, end), max(hi, start, end)
	}
	return lo, hi, lo >= 0
}

// sameMoved reports whether b is a moved by shift bytes: every field that
// is encoded the same, every offset shifted by shift. (Detail is not
// encoded.)
func sameMoved(a, b analysis.Diagnostic, shift int) bool {
	if a.Code != b.Code || a.Message != b.Message || a.Severity != b.Severity ||
		a.Start+shift != b.Start || a.End+shift != b.End ||
		len(a.Related) != len(b.Related) || len(a.Fixes) != len(b.Fixes) {
		return false
	}
	for i, r := range a.Related {
		o := b.Related[i]
		if r.Path != "" || o.Path != "" || r.Message != o.Message || r.Start+shift != o.Start || r.End+shift != o.End {
			return false
		}
	}
	for i, f := range a.Fixes {
		o := b.Fixes[i]
		if f.Title != o.Title || f.Applicability != o.Applicability || len(f.Others) > 0 || len(o.Others) > 0 || len(f.Edits) != len(o.Edits) {
			return false
		}
		for j, e := range f.Edits {
			oe := o.Edits[j]
			if e.NewText != oe.NewText || e.Start+shift != oe.Start || e.End+shift != oe.End {
				return false
			}
		}
	}
	return true
}
