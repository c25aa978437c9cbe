package server

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"testing"

	"go.lsp.dev/protocol"

	"github.com/vramlint/vramlint/analysis"
	"github.com/vramlint/vramlint/analysis/analysistest"
	"github.com/vramlint/vramlint/analysis/rules"
	"github.com/vramlint/vramlint/codeactions"
)

// marshalled is how notify sends a publishDiagnostics notification, by
// reflection: what appendPublishDiagnostics must write byte for byte.
func marshalled(t *testing.T, params protocol.PublishDiagnosticsParams) []byte {
	t.Helper()
	body, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", "textDocument/publishDiagnostics", params})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// The diagnostics of every rule fixture, with their related information
// and fixes, and diagnostics of every shape the types allow, encode as
// encoding/json encodes them.
func TestEncodingMatchesEncodingJSON(t *testing.T) {
	runner := &analysis.Runner{Rules: rules.All()}
	var all []protocol.Diagnostic
	for i, src := range analysistest.Sources(t, "../analysis/rules/testdata/*/*.py") {
		res := analysistest.Analyze(t, runner, src)
		doc := codeactions.Document{URI: "file:///w/a%20b/x.py", Version: int32(i), Mapper: analysis.NewMapper(src), Encoding: analysis.UTF16}
		diags := doc.Diagnostics(res, rules.All(), i%2 == 0)
		all = append(all, diags...)
		params := protocol.PublishDiagnosticsParams{URI: doc.URI, Version: uint32(i), Diagnostics: diags}
		if got, want := appendPublishDiagnostics(nil, params), marshalled(t, params); !bytes.Equal(got, want) {
			t.Fatalf("fixture %d:\n got %s\nwant %s", i, got, want)
		}
	}
	if len(all) < 50 {
		t.Fatalf("the fixtures gave %d diagnostics: too few to test the encoding", len(all))
	}
	odd := []protocol.Diagnostic{
		{Message: "no code, no severity, no data"},
		{Code: int32(7), Message: "a number for a code"},
		{Code: "GPU002", Severity: 2.5, Message: "a severity json writes as a fraction"},
		{Code: "GPU002", Tags: []protocol.DiagnosticTag{protocol.DiagnosticTagUnnecessary}, Message: "tagged"},
		{Code: "GPU002", Data: map[string]int{"other": 1}, Message: "other data"},
		{Code: "GPU002", Data: codeactions.FixData{}, Message: "no fixes: null"},
		{Code: "GPU002", Data: codeactions.FixData{Fixes: []codeactions.FixEdit{{Title: "t", AlsoEdits: []string{"a.py", "b\".py"}}, {Title: "u", AlsoEdits: []string{"c.py"}}}}, Message: "edits null, other files"},
		{Code: "GPU002", RelatedInformation: []protocol.DiagnosticRelatedInformation{}, Message: "empty related: left out"},
	}
	for _, params := range []protocol.PublishDiagnosticsParams{
		{URI: "file:///x.py", Diagnostics: odd},
		{URI: "file:///x.py", Version: 3},                                       // diagnostics null
		{URI: "file:///x.py", Version: 4, Diagnostics: []protocol.Diagnostic{}}, // cleared
	} {
		if got, want := appendPublishDiagnostics(nil, params), marshalled(t, params); !bytes.Equal(got, want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	}
}

// Strings are escaped as encoding/json escapes them, control characters,
// HTML, line separators and invalid UTF-8 included.
func TestEncodedStringsMatchEncodingJSON(t *testing.T) {
	pieces := []string{"a", "é", "😀", "\"", "\\", "<", ">", "&", "\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "\x7f",
		"\u2028", "\u2029", "\xff", "\xe2\x80", "\xed\xa0\x80", "`code`", " "}
	rng := rand.New(rand.NewSource(1))
	for range 5000 {
		var s string
		for range rng.Intn(12) {
			s += pieces[rng.Intn(len(pieces))]
		}
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	}
}

func FuzzEncodedString(f *testing.F) {
	f.Add("plain")
	f.Add("<\u2028\xff\"\\\x01")
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	})
}
