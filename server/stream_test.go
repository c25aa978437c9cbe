package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"strings"
	"testing"

	"go.lsp.dev/jsonrpc2"
)

// After each kind of broken framing the server answers the broken part with
// an error (id null) and then the next valid request, in the same stream.
func TestFramingRecoversAtTheNextHeader(t *testing.T) {
	const probe = `{"jsonrpc":"2.0","id":%d,"method":"shutdown"}`
	body := fmt.Sprintf(probe, 0)
	cases := []struct {
		name, input string
		code        int // the error code for the broken part
	}{
		{"negative length", "Content-Length: -5\r\n\r\n" + body, -32700},
		{"length not a number", "Content-Length: abc\r\n\r\n" + body, -32700},
		{"length 2^62", "Content-Length: 4611686018427387904\r\n\r\n" + body, -32700},
		{"length over the limit", "Content-Length: 100000000\r\n\r\n" + body, -32700},
		{"empty length", "Content-Length:\r\n\r\n" + body, -32700},
		{"length too small", "Content-Length: 3\r\n\r\n" + body, -32700},
		{"no Content-Length", "Foo: 1\r\n\r\n" + body, -32700},
		{"bytes that are no header", "\x00\xff garbage\n\n\n" + strings.Repeat("x", 100000), -32700},
		{"not JSON", "Content-Length: 5\r\n\r\n{{{{{", -32700},
		{"nested too deeply", fmt.Sprintf("Content-Length: %d\r\n\r\n%s", 1<<20, strings.Repeat("[", 1<<20)), -32700},
		{"a JSON array", "Content-Length: 5\r\n\r\n[1,2]", -32600},
		{"a JSON number", "Content-Length: 2\r\n\r\n42", -32600},
		{"an object that is not JSON-RPC", "Content-Length: 7\r\n\r\n{\"a\":1}", -32600},
	}
	c := startServer(t, Options{})
	for i, tc := range cases {
		fmt.Fprint(c.in, tc.input)
		c.sendRaw(fmt.Sprintf(probe, i+1))
		m := c.await(tc.name+": error", func(m message) bool { return m.Error != nil && string(m.ID) == "null" })
		if m.Error.Code != tc.code {
			t.Errorf("%s: %s, want code %d", tc.name, m.raw, tc.code)
		}
		c.await(tc.name+": the next request answered", func(m message) bool { return string(m.ID) == fmt.Sprint(i+1) })
		// What remains of the broken part may be answered once more.
		c.mu.Lock()
		c.msgs = nil
		c.mu.Unlock()
	}
}

// A Content-Length larger than its message: the message is found, whether
// the next header follows it or nothing does.
func TestContentLengthTooLarge(t *testing.T) {
	c := startServer(t, Options{})
	first := `{"jsonrpc":"2.0","id":1,"method":"shutdown"}`
	fmt.Fprintf(c.in, "Content-Length: %d\r\n\r\n%s", len(first)+40, first)
	c.sendRaw(`{"jsonrpc":"2.0","id":2,"method":"shutdown"}`)
	c.await("the message with the wrong length", func(m message) bool { return string(m.ID) == "1" })
	c.await("the message after it", func(m message) bool { return string(m.ID) == "2" })
	// The last message before a pause: taken once no more input comes.
	last := `{"jsonrpc":"2.0","id":3,"method":"shutdown"}`
	fmt.Fprintf(c.in, "Content-Length: %d\r\n\r\n%s", len(last)+1000, last)
	c.await("the last message, after a pause", func(m message) bool { return string(m.ID) == "3" })
}

// Other headers may come before Content-Length, and a body may quote a
// header; neither is taken for broken framing.
func TestHeadersAndQuotedHeaders(t *testing.T) {
	c := startServer(t, Options{})
	body := `{"jsonrpc":"2.0","id":1,"method":"shutdown","params":"Content-Length: 5\r\n"}`
	fmt.Fprintf(c.in, "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	c.sendRaw(`{"jsonrpc":"2.0","id":2,"method":"shutdown"}`)
	c.await("the first message", func(m message) bool { return string(m.ID) == "1" })
	c.await("the second message", func(m message) bool { return string(m.ID) == "2" })
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.msgs {
		if m.Error != nil && string(m.ID) == "null" {
			t.Errorf("valid framing answered with %s", m.raw)
		}
	}
}

func TestNesting(t *testing.T) {
	for in, want := range map[string]int{`{}`: 1, `[[1],{"a":[2]}]`: 3, `"[[[["`: 0, `["\"[[["]`: 1, ``: 0} {
		if got := nesting([]byte(in)); got != want {
			t.Errorf("nesting(%s) = %d, want %d", in, got, want)
		}
	}
}

// Arbitrary bytes on stdin never crash the reader, which reads to their
// end; after garbage that holds no Content-Length header, a valid request
// is read.
func FuzzStream(f *testing.F) {
	for _, seed := range []string{
		"", "Content-Length: 5\r\n\r\n[1,2]", "Content-Length: -1\r\n\r\n", "Content-Length: 99999999999999999999\r\n",
		"\x00\xff\xfe", strings.Repeat("[", 2000), "Content-Length: 3\r\nContent-Type: x\r\n\r\n{}}",
		"content-length:2\n\n{}", "Content-Length: 10\r\n\r\n{\"a\":1}",
		`["a\\", ["b\"[", {"c\\\"{": [[]]}], "unterminated [`, `"\"[[[[[", "\\"[[`,
	} {
		f.Add([]byte(seed))
	}
	const request = `{"jsonrpc":"2.0","id":42,"method":"shutdown"}`
	f.Fuzz(func(t *testing.T, garbage []byte) {
		if got, want := nesting(garbage), nestingByteByByte(garbage); got != want {
			t.Fatalf("nesting(%q) = %d, byte by byte %d", garbage, got, want)
		}
		// Anything: read to the end.
		s := newStream(bytes.NewReader(garbage), io.Discard, io.NopCloser(nil), log.New(io.Discard, "", 0))
		for range len(garbage) + 2 {
			if _, _, err := s.Read(context.Background()); err != nil {
				break
			}
		}
		if bytes.Contains(bytes.ToLower(garbage), []byte("content-length")) {
			return
		}
		// Recoverable garbage, then a request: the request is read.
		input := append(bytes.Clone(garbage), fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(request), request)...)
		s = newStream(bytes.NewReader(input), io.Discard, io.NopCloser(nil), log.New(io.Discard, "", 0))
		for {
			msg, _, err := s.Read(context.Background())
			if err != nil {
				t.Fatalf("the request after %q was not read: %v", garbage, err)
			}
			if call, ok := msg.(*jsonrpc2.Call); ok && call.Method() == "shutdown" && fmt.Sprint(call.ID()) == "42" {
				return
			}
		}
	})
}

// Reading one 9 MB didOpen (a file near the size limit): framing checks
// must not cost more than decoding it.
func BenchmarkReadLargeMessage(b *testing.B) {
	text := strings.Repeat(`x = torch.ones(3).cuda()  # Content-Length: 5\n`, 200000)
	body := fmt.Sprintf(`{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///a.py","languageId":"python","version":1,"text":"%s"}}}`, text)
	input := []byte(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body))
	b.SetBytes(int64(len(input)))
	for b.Loop() {
		s := newStream(bytes.NewReader(input), io.Discard, io.NopCloser(nil), log.New(io.Discard, "", 0))
		if _, _, err := s.Read(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// nestingByteByByte is nesting as a state machine over every byte: what
// nesting must agree with.
func nestingByteByByte(data []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, b := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == '"':
			inString = true
		case b == '[' || b == '{':
			depth++
			deepest = max(deepest, depth)
		case b == ']' || b == '}':
			depth--
		}
	}
	return deepest
}
