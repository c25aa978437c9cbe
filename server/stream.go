package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"
)

// stream frames LSP messages (Content-Length headers) like jsonrpc2's own
// stream, but survives bad input: jsonrpc2 v0.10.0 closes the connection on
// the first message it cannot decode, and one wrong Content-Length would
// leave any reader that trusts it out of step for good.
//
// Here every problem is answered with an error (id null), logged, and
// skipped, and the reader finds its way back to the next message: a raw
// header line ("Content-Length: 52" followed by a line break) can never
// occur inside a JSON body, whose strings escape their line breaks, so the
// reader can look for one wherever the framing went wrong:
//   - a Content-Length that is not a number, negative or over the limit:
//     what follows it is skipped up to the next header;
//   - one that is too small: the rest of the body is skipped the same way;
//   - one that is too large: a header inside the body, or a pause after a
//     complete JSON value, ends the message early;
//   - bytes that are not a header at all: skipped up to the next header.
type stream struct {
	in  *input
	out io.Writer
	c   io.Closer
	log *log.Logger

	writeMu   sync.Mutex
	closeOnce sync.Once
}

func newStream(in io.Reader, out io.Writer, c io.Closer, logger *log.Logger) *stream {
	return &stream{in: newInput(in), out: out, c: c, log: logger}
}

const (
	// maxMessage bounds one message (a 10 MB file is sent as JSON, escaped).
	maxMessage = 64 << 20
	// maxHeader bounds a header block; clients send one or two short lines.
	maxHeader = 8 << 10
	// maxNesting bounds how deep arrays and objects nest: LSP messages
	// nest a dozen levels, and a decoder recursing through millions
	// overflows its stack.
	maxNesting = 512
	// stallTimeout is how long the reader waits, with a complete JSON value
	// already read, for the rest of a body whose Content-Length was too
	// large, before it takes the value as the message.
	stallTimeout = 300 * time.Millisecond
)

// contentLength finds a Content-Length header line: the name, any value, and
// the line break that ends it.
var contentLength = regexp.MustCompile(`(?i)content-length[ \t]*:([^\r\n]*)\r?\n`)

// numericContentLength is a header line with a plausible value: inside a
// body it shows that the body's Content-Length was too large.
var numericContentLength = regexp.MustCompile(`(?i)content-length[ \t]*:[ \t]*[0-9]+[ \t]*\r?\n`)

func (s *stream) Read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	for {
		data, err := s.readFrame()
		var bad frameError
		switch {
		case errors.As(err, &bad):
			s.log.Printf("skipping malformed input: %v", bad)
			s.replyError(jsonrpc2.ParseError, bad.Error())
			continue
		case err != nil:
			return nil, 0, err
		}
		if code, why := checkMessage(data); why != "" {
			s.log.Printf("skipping a message: %s", why)
			s.replyError(code, why)
			continue
		}
		msg, err := jsonrpc2.DecodeMessage(data)
		if err != nil {
			code, why := jsonrpc2.InvalidRequest, "not a JSON-RPC message: "+err.Error()
			if !json.Valid(data) {
				code, why = jsonrpc2.ParseError, "the message is not valid JSON"
			}
			s.log.Printf("skipping a message: %s", why)
			s.replyError(code, why)
			continue
		}
		return msg, int64(len(data)), nil
	}
}

// checkMessage says why data must not reach the decoder, with the error
// code to answer: ParseError for what nests too deeply (the decoder would
// overflow its stack) or is not JSON, InvalidRequest for JSON that is not
// an object. Other invalid JSON is found by the decoder itself, without a
// second pass over every message.
func checkMessage(data []byte) (jsonrpc2.Code, string) {
	if depth := nesting(data); depth > maxNesting {
		return jsonrpc2.ParseError, fmt.Sprintf("the message nests deeper than %d levels", maxNesting)
	}
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
		if !json.Valid(data) {
			return jsonrpc2.ParseError, "the message is not valid JSON"
		}
		return jsonrpc2.InvalidRequest, "the message is not a JSON object"
	}
	return 0, ""
}

// nesting returns how deep arrays and objects nest in data, skipping
// strings (by closingQuote: a didOpen is mostly one long string, which a
// byte at a time took 1.8 ms a megabyte); it does not validate.
func nesting(data []byte) int {
	depth, deepest := 0, 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			if i = closingQuote(data, i); i < 0 {
				return deepest // the rest is inside the string
			}
		case '[', '{':
			depth++
			deepest = max(deepest, depth)
		case ']', '}':
			depth--
		}
	}
	return deepest
}

// frameError is input the reader skipped; the stream goes on after it.
type frameError string

func (e frameError) Error() string { return string(e) }

// readFrame returns the next message's body, or a frameError for input it
// skipped, or the input's error (io.EOF: the client went away).
func (s *stream) readFrame() ([]byte, error) {
	in := s.in
	// Find a header line, skipping anything before it.
	var loc []int
	for {
		if loc = findContentLength(in.buf); loc != nil {
			break
		}
		// Keep a tail that may be the start of a header block.
		if len(in.buf) > maxHeader {
			in.skipped += len(in.buf) - maxHeader
			in.consume(len(in.buf) - maxHeader)
		}
		if err := in.fill(0); err != nil {
			return nil, in.endOfInput(err)
		}
	}
	// Header lines before Content-Length (Content-Type) belong to the block.
	block := headerBlockStart(in.buf[:loc[0]])
	if garbage := bytes.TrimSpace(in.buf[:block]); len(garbage) > 0 || in.skipped > 0 {
		n := in.skipped + block
		in.skipped = 0
		in.consume(block)
		return nil, frameError(fmt.Sprintf("%d bytes that are not a message, up to the next Content-Length header", n))
	}
	value := string(bytes.TrimSpace(in.buf[loc[2]:loc[3]]))
	in.consume(loc[1])
	// The rest of the header block, up to an empty line.
	for {
		end := headerEnd(in.buf)
		if end >= 0 {
			in.consume(end)
			break
		}
		if len(in.buf) > maxHeader {
			return nil, frameError("a header block longer than 8 KiB")
		}
		if err := in.fill(0); err != nil {
			return nil, in.endOfInput(err)
		}
	}
	length, err := strconv.ParseInt(value, 10, 64)
	if err != nil || length < 0 || length > maxMessage {
		return nil, frameError(fmt.Sprintf("invalid Content-Length %q (want 0 to %d); skipping to the next message", value, maxMessage))
	}
	return s.readBody(int(length))
}

// findContentLength returns the location of the first Content-Length line in
// buf and of its value, as regexp's FindSubmatchIndex does. When a line holds
// the name more than once (a skipped body that quotes it, then the real
// header), the last one is the header.
func findContentLength(buf []byte) []int {
	loc := contentLength.FindSubmatchIndex(buf)
	if loc == nil {
		return nil
	}
	for {
		// The name is 14 bytes; look for another after this one.
		next := contentLength.FindSubmatchIndex(buf[loc[0]+14 : loc[1]])
		if next == nil {
			return loc
		}
		for i := range next {
			next[i] += loc[0] + 14
		}
		loc = next
	}
}

// headerBlockStart returns where the header lines that end pre begin: pre
// is what comes before a Content-Length line, and other headers (such as
// Content-Type) may come first.
func headerBlockStart(pre []byte) int {
	start := len(pre)
	for start > 0 && pre[start-1] == '\n' {
		lineStart := bytes.LastIndexByte(pre[:start-1], '\n') + 1
		if !headerLine.Match(pre[lineStart:start]) {
			break
		}
		start = lineStart
	}
	return start
}

// headerLine is a header other than Content-Length, with its line break.
var headerLine = regexp.MustCompile(`^[A-Za-z0-9-]+[ \t]*:[^\r\n]*\r?\n$`)

// headerEnd returns the offset just past the empty line that ends a header
// block starting at the beginning of buf (after the Content-Length line), or
// -1 when more input is needed.
func headerEnd(buf []byte) int {
	line := 0
	for {
		nl := bytes.IndexByte(buf[line:], '\n')
		if nl < 0 {
			return -1
		}
		if len(bytes.TrimSpace(buf[line:line+nl])) == 0 {
			return line + nl + 1
		}
		line += nl + 1
	}
}

// readBody reads a body of the given length, unless a header inside it or a
// stall after a complete JSON value shows that the length was too large.
func (s *stream) readBody(length int) ([]byte, error) {
	in := s.in
	scanned := 0
	// Room for the whole body at once, rather than doubling the buffer
	// (and copying it) as a large one arrives. Content-Length is at most
	// maxMessage.
	in.buf = slices.Grow(in.buf, max(0, length-len(in.buf)))
	for {
		// Look for a header in what arrived since the last look: one cut
		// in two is found when its line break arrives.
		to := min(len(in.buf), length)
		if at := headerInside(in.buf, scanned, to); at >= 0 {
			body := bytes.Clone(in.buf[:at])
			in.consume(at)
			return s.tooLarge(length, body)
		}
		if len(in.buf) >= length {
			break
		}
		scanned = to
		timeout := time.Duration(0)
		if len(bytes.TrimSpace(in.buf)) > 0 {
			timeout = stallTimeout
		}
		switch err := in.fill(timeout); {
		case errors.Is(err, errStalled):
			if json.Valid(in.buf) {
				body := bytes.Clone(in.buf)
				in.consume(len(in.buf))
				return s.tooLarge(length, body)
			}
		case err != nil:
			return nil, in.endOfInput(err)
		}
	}
	if length < 64<<10 {
		// A keystroke's change: copied out, and the buffer reused.
		body := bytes.Clone(in.buf[:length])
		in.consume(length)
		return body, nil
	}
	// A large body is handed over as it lies in the buffer, and a new
	// buffer keeps what follows it: copying it cost as much as reading.
	body := in.buf[:length:length]
	in.buf = append(make([]byte, 0, max(len(in.buf)-length, 4096)), in.buf[length:]...)
	return body, nil
}

// headerInside returns where a numeric Content-Length line ending in
// buf[from:to] starts, or -1. A header line ends with a raw line break, which
// a JSON body has only between tokens, so the regexp runs only on the bytes
// before each one (a regexp over a whole 10 MB body took 350 ms).
func headerInside(buf []byte, from, to int) int {
	for i := from; i < to; {
		nl := bytes.IndexByte(buf[i:to], '\n')
		if nl < 0 {
			return -1
		}
		end := i + nl + 1
		start := max(0, end-96)
		if loc := numericContentLength.FindIndex(buf[start:end]); loc != nil && start+loc[1] == end {
			return start + loc[0]
		}
		i = end
	}
	return -1
}

// tooLarge takes body, which ended before its Content-Length, as the
// message when it is one.
func (s *stream) tooLarge(length int, body []byte) ([]byte, error) {
	s.log.Printf("Content-Length %d is larger than the message (%d bytes)", length, len(body))
	if !json.Valid(body) {
		return nil, frameError(fmt.Sprintf("a message of %d bytes, shorter than its Content-Length %d, that is not valid JSON", len(body), length))
	}
	return body, nil
}

func (s *stream) replyError(code jsonrpc2.Code, detail string) {
	prefix := "invalid request: "
	if code == jsonrpc2.ParseError {
		prefix = "parse error: "
	}
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": code, "message": prefix + detail},
	})
	s.writeRaw(body)
}

func (s *stream) Write(ctx context.Context, msg jsonrpc2.Message) (int64, error) {
	data, err := json.Marshal(msg)
	if err != nil {
		return 0, fmt.Errorf("marshaling message: %w", err)
	}
	return s.writeRaw(data)
}

func (s *stream) writeRaw(data []byte) (int64, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	// The header, then the body as it is: formatting the body through fmt
	// copied every message (a large file's diagnostics are 100 KB).
	header := strconv.AppendInt([]byte("Content-Length: "), int64(len(data)), 10)
	n, err := s.out.Write(append(header, "\r\n\r\n"...))
	if err != nil {
		return int64(n), err
	}
	m, err := s.out.Write(data)
	return int64(n + m), err
}

func (s *stream) Close() error {
	s.closeOnce.Do(func() { close(s.in.done) })
	return s.c.Close()
}

// errStalled is what input.fill returns when no bytes came within its
// timeout.
var errStalled = errors.New("no input within the timeout")

// input buffers the server's stdin. A goroutine reads it in chunks so that
// the framer can wait with a timeout; the channel of one chunk keeps at most
// two chunks in memory besides the buffer.
type input struct {
	chunks  chan []byte
	done    chan struct{} // closed when the stream closes
	err     error         // the reader's error, once chunks is closed
	buf     []byte
	skipped int // bytes dropped while looking for a header
}

func newInput(r io.Reader) *input {
	in := &input{chunks: make(chan []byte, 1), done: make(chan struct{})}
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				// A copy of what came: a keystroke's message is small.
				select {
				case in.chunks <- bytes.Clone(buf[:n]):
				case <-in.done:
					return
				}
			}
			if err != nil {
				in.err = err
				close(in.chunks)
				return
			}
		}
	}()
	return in
}

// fill appends the next chunk to buf. A zero timeout waits for as long as
// it takes.
func (in *input) fill(timeout time.Duration) error {
	var stalled <-chan time.Time
	if timeout > 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		stalled = timer.C
	}
	select {
	case chunk, ok := <-in.chunks:
		if !ok {
			return in.err
		}
		in.buf = append(in.buf, chunk...)
		return nil
	case <-stalled:
		return errStalled
	}
}

// consume drops the first n bytes of buf, reusing its space unless a large
// message made it large.
func (in *input) consume(n int) {
	rest := copy(in.buf, in.buf[n:])
	in.buf = in.buf[:rest]
	if cap(in.buf) > 1<<20 && rest < 64<<10 {
		in.buf = bytes.Clone(in.buf)
	}
}

// endOfInput reports the input's end, saying what it cut short.
func (in *input) endOfInput(err error) error {
	if len(bytes.TrimSpace(in.buf)) > 0 || in.skipped > 0 {
		return fmt.Errorf("input ended inside a message (%d bytes unread): %w", len(in.buf)+in.skipped, err)
	}
	return err
}
