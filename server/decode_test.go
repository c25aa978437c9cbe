package server

import (
	"encoding/json"
	"strings"
	"testing"
)

// didOpenSeeds are params as clients send them, and params written to
// catch the fast path reading them differently from json.Unmarshal.
var didOpenSeeds = []string{
	`{"textDocument":{"uri":"file:///a.py","languageId":"python","version":1,"text":"import torch\nx = \"a\\\\b\"\n\tprint(x)\r\n"}}`,
	`{"textDocument":{"uri":"file:///a.py","languageId":"python","version":1,"text":""}}`,
	`{ "textDocument" : { "text" : "a\\\"b\\\\" , "uri" : "x" , "version" : 2 } , "other" : [1, {"text": "no"}, "\"}"] }`,
	`{"textDocument":{"uri":"u","version":1,"text":"caf\u00e9 \ud83d\ude00 \ud800"}}`,
	`{"textDocument":{"uri":"u","version":1,"text":"é😀"}}`,
	`{"textDocument":{"uri":"u","version":1,"text":"if a \u003c b \u0026\u0026 c \u003e d:\u2028\u2029"}}`,
	`{"textDocument":{"uri":"u","version":1,"text":"\ud83d\ude00 \ud800x \ud800\u0041 \udc00 \uDBFF\uDFFF \ud800\ud800\udc00 \ud800"}}`,
	`{"textDocument":{"uri":"u","version":1,"text":"a","Text":"b"}}`,
	`{"textDocument":{"uri":"u","version":1,"TEXT":"b"}}`,
	`{"textDocument":{"uri":"u","version":1,"text":"a"},"textdocument":{"text":"b"}}`,
	`{"textDocument":{"uri":"u","version":1,"te\u0078t":"b","text":"a"}}`,
	`{"textDocument":{"uri":"u","version":1,"text":"a","text":"b"}}`,
	`{"textDocument":{"uri":"u","version":{"n":1},"text":"a"}}`,
	`{"textDocument":{"uri":"u","version":1.5e3,"text":"a\/b\b\f\t"}}`,
	`{"textDocument":{"uri":"u","version":1,"text":5}}`,
	`{"textDocument":null}`,
	`{"textDocument":[]}`,
	`[]`,
	`{}`,
	`{"textDocument":{"text":"x","uri":"\"text\":\"y\""}}`,
}

// decodeDidOpen decodes any params exactly as json.Unmarshal does.
func FuzzDecodeDidOpen(f *testing.F) {
	for _, seed := range didOpenSeeds {
		if !json.Valid([]byte(seed)) {
			f.Fatalf("seed %s is not JSON: it would test nothing", seed)
		}
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		if !json.Valid(params) {
			return // the stream answers those before any handler sees them
		}
		var want didOpenParams
		wantErr := json.Unmarshal(params, &want)
		got, err := decodeDidOpen(params)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q: error %v, json.Unmarshal's %v", params, err, wantErr)
		}
		if wantErr == nil && got != want {
			t.Fatalf("%q: decoded %+v, json.Unmarshal %+v", params, got, want)
		}
	})
}

// The fast path is taken for what clients send: a Python file's text with
// its line breaks, quotes and backslashes escaped, some characters as \u
// escapes, and UTF-8 as it is.
func TestDidOpenTextIsFoundAndUnescaped(t *testing.T) {
	// json.Marshal, as Go clients, escapes <, > and & as \u003c and so on.
	text := strings.Repeat("def f(x) -> bool:\n    return x < 2 and \"a\\\\b\" + 'é😀' > '&'\t# c\r\n", 100)
	params, err := json.Marshal(map[string]any{"textDocument": map[string]any{"uri": "file:///a.py", "languageId": "python", "version": 3, "text": text}})
	if err != nil {
		t.Fatal(err)
	}
	lo, hi, ok := textString(params)
	if !ok {
		t.Fatalf("the text of %q was not found", params[:80])
	}
	got, ok := unquoteText(params[lo:hi])
	if !ok || got != text {
		t.Fatalf("unquoted %v: %q", ok, got[:min(len(got), 80)])
	}
	p, err := decodeDidOpen(params)
	if err != nil || p.TextDocument.Text != text || p.TextDocument.URI != "file:///a.py" || p.TextDocument.Version != "3" {
		t.Fatalf("decoded %v: %+v", err, p.TextDocument.URI)
	}
}
