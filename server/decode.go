package server

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeDidOpen decodes didOpen's params as json.Unmarshal does, faster
// for the document's text: encoding/json decodes a 400 KB text at about
// 100 MB/s, which was milliseconds of every open. The text's string is
// found by a scan that skips the other values, unescaped by unquoteText,
// and cut out of the params that json.Unmarshal then decodes. Any params
// that the fast path might read differently from json.Unmarshal (an
// escaped key, a key that matches "textDocument" or "text" only without
// regard to case or more than once, invalid UTF-8 in the text) are
// decoded by json.Unmarshal alone. params is valid JSON: the stream's
// decoder has read the whole message.
func decodeDidOpen(params []byte) (didOpenParams, error) {
	var p didOpenParams
	if lo, hi, ok := textString(params); ok {
		if text, ok := unquoteText(params[lo:hi]); ok {
			rest := make([]byte, 0, len(params)-(hi-lo))
			rest = append(append(rest, params[:lo]...), params[hi:]...)
			err := json.Unmarshal(rest, &p)
			p.TextDocument.Text = text
			return p, err
		}
	}
	err := json.Unmarshal(params, &p)
	return p, err
}

// textString returns where the contents of params' textDocument.text
// string lie (between its quotes), when it is the only member of each
// object that json.Unmarshal would take for either field.
func textString(params []byte) (lo, hi int, ok bool) {
	sc := jsonScan{data: params}
	found, texts := false, 0
	if !sc.members(func(key string) bool {
		if !strings.EqualFold(key, "textDocument") {
			return sc.skipValue()
		}
		if key != "textDocument" || found || sc.peek() != '{' {
			return false
		}
		found = true
		return sc.members(func(key string) bool {
			if !strings.EqualFold(key, "text") {
				return sc.skipValue()
			}
			texts++
			if key != "text" || texts > 1 || sc.peek() != '"' {
				return false
			}
			lo = sc.at + 1
			if !sc.skipValue() {
				return false
			}
			hi = sc.at - 1
			return true
		})
	}) || texts != 1 {
		return 0, 0, false
	}
	return lo, hi, true
}

// jsonScan walks valid JSON without decoding it.
type jsonScan struct {
	data []byte
	at   int
}

func (sc *jsonScan) space() {
	for sc.at < len(sc.data) {
		switch sc.data[sc.at] {
		case ' ', '\t', '\r', '\n':
			sc.at++
		default:
			return
		}
	}
}

// peek returns the next byte past white space, or 0 at the end.
func (sc *jsonScan) peek() byte {
	sc.space()
	if sc.at < len(sc.data) {
		return sc.data[sc.at]
	}
	return 0
}

// members calls member for each member of the object at the scan, with
// the scan at the member's value, which member must skip; a key with an
// escape in it, or member returning false, stops the walk with false.
func (sc *jsonScan) members(member func(key string) bool) bool {
	if sc.peek() != '{' {
		return false
	}
	sc.at++
	if sc.peek() == '}' {
		sc.at++
		return true
	}
	for {
		if sc.peek() != '"' {
			return false
		}
		start := sc.at + 1
		end := bytes.IndexByte(sc.data[start:], '"')
		if end < 0 || bytes.IndexByte(sc.data[start:start+end], '\\') >= 0 {
			return false
		}
		key := string(sc.data[start : start+end])
		sc.at = start + end + 1
		if sc.peek() != ':' {
			return false
		}
		sc.at++
		sc.space()
		if !member(key) {
			return false
		}
		switch sc.peek() {
		case ',':
			sc.at++
		case '}':
			sc.at++
			return true
		default:
			return false
		}
	}
}

// skipValue moves the scan past the value at it.
func (sc *jsonScan) skipValue() bool {
	switch c := sc.peek(); c {
	case '"':
		end := closingQuote(sc.data, sc.at)
		if end < 0 {
			return false
		}
		sc.at = end + 1
		return true
	case '{', '[':
		depth := 0
		for sc.at < len(sc.data) {
			switch sc.data[sc.at] {
			case '"':
				if !sc.skipValue() {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					sc.at++
					return true
				}
			}
			sc.at++
		}
		return false
	case 0:
		return false
	default: // a number, true, false or null
		for sc.at < len(sc.data) {
			switch sc.data[sc.at] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return true
			}
			sc.at++
		}
		return true
	}
}

// unquoteText unescapes the contents of a JSON string as json.Unmarshal
// does, or says it cannot: invalid UTF-8, which json.Unmarshal replaces,
// is left to it.
func unquoteText(raw []byte) (string, bool) {
	if !utf8.Valid(raw) {
		return "", false
	}
	i := bytes.IndexByte(raw, '\\')
	if i < 0 {
		return string(raw), true
	}
	var out strings.Builder // its String does not copy
	out.Grow(len(raw))
	for {
		out.Write(raw[:i])
		if i+1 >= len(raw) {
			return "", false
		}
		next := i + 2 // past the escape
		switch raw[i+1] {
		case '"', '\\', '/':
			out.WriteByte(raw[i+1])
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'u':
			// A UTF-16 code unit; a surrogate joins the next escape's
			// when the two make a pair, and is U+FFFD when they do not.
			r := hex4(raw[i+2:])
			if r < 0 {
				return "", false
			}
			next = i + 6
			if utf16.IsSurrogate(r) {
				pair := unicode.ReplacementChar
				if len(raw) >= next+6 && raw[next] == '\\' && raw[next+1] == 'u' {
					pair = utf16.DecodeRune(r, hex4(raw[next+2:]))
				}
				if pair != unicode.ReplacementChar {
					r, next = pair, next+6
				} else {
					r = unicode.ReplacementChar
				}
			}
			out.WriteRune(r)
		default: // not JSON
			return "", false
		}
		raw = raw[next:]
		if i = bytes.IndexByte(raw, '\\'); i < 0 {
			out.Write(raw)
			return out.String(), true
		}
	}
}

// hex4 reads the four hex digits of a \u escape at the start of b (past
// the \u), or returns -1.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// closingQuote returns the index of the quote that closes the JSON string
// opening at data[open], or -1: the first quote after an even number of
// backslashes (escaped backslashes come in pairs). IndexByte finds the
// candidates many bytes at a time.
func closingQuote(data []byte, open int) int {
	for i := open + 1; ; i++ {
		j := bytes.IndexByte(data[i:], '"')
		if j < 0 {
			return -1
		}
		i += j
		backslashes := 0
		for k := i - 1; k > open && data[k] == '\\'; k-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return i
		}
	}
}
