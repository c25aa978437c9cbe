package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"strconv"
	"strings"
	"sync"

	"go.lsp.dev/jsonrpc2"
)

// stream frames LSP messages (Content-Length headers) like jsonrpc2's own
// stream, but survives bad input: jsonrpc2 v0.10.0 closes the connection
// on the first message it cannot decode. Here a message that is not valid
// JSON-RPC is answered with a ParseError (id null), logged, and skipped.
type stream struct {
	in  *bufio.Reader
	out io.Writer
	c   io.Closer
	log *log.Logger

	writeMu sync.Mutex
}

func newStream(in io.Reader, out io.Writer, c io.Closer, logger *log.Logger) *stream {
	return &stream{in: bufio.NewReaderSize(in, 64<<10), out: out, c: c, log: logger}
}

// maxMessage bounds one message (a 10 MB file is sent as JSON, escaped).
const maxMessage = 64 << 20

func (s *stream) Read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	for {
		data, err := s.readFrame()
		if err != nil {
			if framingErr, ok := err.(frameError); ok {
				s.log.Printf("skipping malformed message: %v", framingErr)
				s.replyParseError(framingErr.Error())
				continue
			}
			return nil, 0, err
		}
		msg, err := jsonrpc2.DecodeMessage(data)
		if err != nil {
			s.log.Printf("skipping a message that is not JSON-RPC: %v", err)
			s.replyParseError(err.Error())
			continue
		}
		return msg, int64(len(data)), nil
	}
}

// frameError is a message whose header or body is wrong but after which the
// stream can go on.
type frameError string

func (e frameError) Error() string { return string(e) }

func (s *stream) readFrame() ([]byte, error) {
	length := -1
	for {
		line, err := s.in.ReadString('\n')
		if err != nil {
			return nil, err // EOF: the client went away
		}
		line = strings.TrimSpace(line)
		if line == "" {
			if length < 0 {
				return nil, frameError("a message without a Content-Length header")
			}
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if ok && strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || n < 0 || n > maxMessage {
				return nil, frameError(fmt.Sprintf("invalid Content-Length %q", value))
			}
			length = n
		}
	}
	data := make([]byte, length)
	if _, err := io.ReadFull(s.in, data); err != nil {
		return nil, err
	}
	return data, nil
}

func (s *stream) replyParseError(detail string) {
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": jsonrpc2.ParseError, "message": "parse error: " + detail},
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
	n, err := fmt.Fprintf(s.out, "Content-Length: %d\r\n\r\n%s", len(data), data)
	return int64(n), err
}

func (s *stream) Close() error { return s.c.Close() }
