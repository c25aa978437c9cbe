package server

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"go.lsp.dev/protocol"

	"github.com/vramlint/vramlint/codeactions"
)

// The diagnostics of a large file are sent on every keystroke: 227 of
// them at 50,000 lines, with their related locations and fixes, about
// 100 KB of JSON. encoding/json took half a millisecond a version for it,
// mostly finding its way through the types by reflection. These append
// the same bytes as json.Marshal for the shapes the server sends, and
// leave any other shape to json.Marshal (TestEncodingMatchesEncodingJSON).

// appendPublishDiagnostics appends the JSON-RPC notification that
// publishes params.
func appendPublishDiagnostics(b []byte, params protocol.PublishDiagnosticsParams) []byte {
	b = appendPublishHead(b, params.URI, params.Version)
	b = appendArray(b, params.Diagnostics, (*diagnosticEncoder)(nil).diagnostic)
	return appendPublishTail(b)
}

// appendPublishHead appends a publishDiagnostics notification up to its
// list of diagnostics, which appendPublishTail closes.
func appendPublishHead(b []byte, uri protocol.DocumentURI, version uint32) []byte {
	b = append(b, `{"jsonrpc":"2.0","method":"textDocument/publishDiagnostics","params":{"uri":`...)
	b = appendString(b, string(uri))
	if version != 0 {
		b = append(b, `,"version":`...)
		b = strconv.AppendUint(b, uint64(version), 10)
	}
	return append(b, `,"diagnostics":`...)
}

func appendPublishTail(b []byte) []byte { return append(b, "}}"...) }

// diagnosticEncoder appends diagnostics as json.Marshal writes them. With
// record set it notes where it wrote each line number and the fix data's
// version, so that the encoding can be written again for a later version
// of the document (see sentDiagnostics). A nil one records nothing.
type diagnosticEncoder struct {
	record bool
	holes  []numberHole
	// marshalled: a shape left to json.Marshal, whose numbers were not
	// noted.
	marshalled bool
}

// numberHole is a number in an encoded diagnostic: where it starts, its
// digits, and what it is.
type numberHole struct {
	at, width int
	version   bool // the document version in the fix data, or else
	line      int  // a line number
}

// number appends v, a line number or the version.
func (e *diagnosticEncoder) number(b []byte, v int64, version bool) []byte {
	at := len(b)
	b = strconv.AppendInt(b, v, 10)
	if e != nil && e.record {
		e.holes = append(e.holes, numberHole{at: at, width: len(b) - at, version: version, line: int(v)})
	}
	return b
}

// appendArray appends items as a JSON array, each by appendItem, and a
// nil slice as null, as json.Marshal does.
func appendArray[T any](b []byte, items []T, appendItem func([]byte, T) []byte) []byte {
	if items == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, item := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendItem(b, item)
	}
	return append(b, ']')
}

// diagnostic appends d as json.Marshal writes it.
func (e *diagnosticEncoder) diagnostic(b []byte, d protocol.Diagnostic) []byte {
	code, codeIsString := d.Code.(string)
	data, dataIsFixes := d.Data.(codeactions.FixData)
	if !integral(float64(d.Severity)) || d.Code != nil && !codeIsString || d.Data != nil && !dataIsFixes || len(d.Tags) > 0 {
		if e != nil {
			e.marshalled = true
		}
		return appendMarshalled(b, d)
	}
	b = append(b, `{"range":`...)
	b = e.rangeOf(b, d.Range)
	if d.Severity != 0 {
		b = append(b, `,"severity":`...)
		b = strconv.AppendInt(b, int64(d.Severity), 10)
	}
	if d.Code != nil {
		b = append(b, `,"code":`...)
		b = appendString(b, code)
	}
	if d.CodeDescription != nil {
		b = append(b, `,"codeDescription":{"href":`...)
		b = appendString(b, string(d.CodeDescription.Href))
		b = append(b, '}')
	}
	if d.Source != "" {
		b = append(b, `,"source":`...)
		b = appendString(b, d.Source)
	}
	b = append(b, `,"message":`...)
	b = appendString(b, d.Message)
	if len(d.RelatedInformation) > 0 {
		b = append(b, `,"relatedInformation":`...)
		b = appendArray(b, d.RelatedInformation, e.related)
	}
	if d.Data != nil {
		b = append(b, `,"data":`...)
		b = e.fixData(b, data)
	}
	return append(b, '}')
}

func (e *diagnosticEncoder) related(b []byte, r protocol.DiagnosticRelatedInformation) []byte {
	b = append(b, `{"location":{"uri":`...)
	b = appendString(b, string(r.Location.URI))
	b = append(b, `,"range":`...)
	b = e.rangeOf(b, r.Location.Range)
	b = append(b, `},"message":`...)
	b = appendString(b, r.Message)
	return append(b, '}')
}

func (e *diagnosticEncoder) fixData(b []byte, data codeactions.FixData) []byte {
	b = append(b, `{"version":`...)
	b = e.number(b, int64(data.Version), true)
	b = append(b, `,"fixes":`...)
	b = appendArray(b, data.Fixes, e.fixEdit)
	return append(b, '}')
}

func (e *diagnosticEncoder) fixEdit(b []byte, f codeactions.FixEdit) []byte {
	b = append(b, `{"title":`...)
	b = appendString(b, f.Title)
	b = append(b, `,"safety":`...)
	b = appendString(b, f.Safety)
	b = append(b, `,"edits":`...)
	b = appendArray(b, f.Edits, e.textEdit)
	if len(f.AlsoEdits) > 0 {
		b = append(b, `,"alsoEdits":`...)
		b = appendArray(b, f.AlsoEdits, appendString)
	}
	return append(b, '}')
}

func (e *diagnosticEncoder) textEdit(b []byte, edit protocol.TextEdit) []byte {
	b = append(b, `{"range":`...)
	b = e.rangeOf(b, edit.Range)
	b = append(b, `,"newText":`...)
	b = appendString(b, edit.NewText)
	return append(b, '}')
}

func (e *diagnosticEncoder) rangeOf(b []byte, r protocol.Range) []byte {
	b = append(b, `{"start":`...)
	b = e.position(b, r.Start)
	b = append(b, `,"end":`...)
	b = e.position(b, r.End)
	return append(b, '}')
}

func (e *diagnosticEncoder) position(b []byte, p protocol.Position) []byte {
	b = append(b, `{"line":`...)
	b = e.number(b, int64(p.Line), false)
	b = append(b, `,"character":`...)
	b = strconv.AppendUint(b, uint64(p.Character), 10)
	return append(b, '}')
}

// integral reports whether json.Marshal writes v as an integer, as
// AppendInt would.
func integral(v float64) bool {
	return v == math.Trunc(v) && math.Abs(v) < 1e15
}

// appendMarshalled appends json.Marshal's encoding of v ("null" should it
// fail, which a diagnostic cannot).
func appendMarshalled(b []byte, v any) []byte {
	out, err := json.Marshal(v)
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, out...)
}

const hexDigits = "0123456789abcdef"

// plainASCII marks the ASCII bytes a JSON string holds as they are:
// encoding/json escapes control characters, quotes, backslashes and (for
// HTML) <, > and &. One lookup a byte rather than six comparisons.
var plainASCII = func() (plain [utf8.RuneSelf]bool) {
	for c := range plain {
		plain[c] = c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return plain
}()

// appendString appends s as a JSON string, escaped as json.Marshal escapes
// it: quotes, backslashes and control characters; <, > and & (for HTML);
// U+2028 and U+2029 (for JavaScript); invalid UTF-8 as U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plainASCII[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
