package pyast

import "sync/atomic"

// A keystroke inside a class of thousands of lines that leaves a syntax
// error asks whether the class now leaves a triple-quoted string open
// (see spliceRegion): a scan of the whole class, 0.6-0.8 ms of each such
// key in a 400 KB class, most keys while a line is being typed. A large
// statement that keeps its tree keeps, with it, where the scan stood
// every few kilobytes of its text; the next version's scan starts at the
// last of those marks before the edit and stops at the first one after
// it where it stands as it did then: from there on the text, and so the
// scan, is the same.

// The marks follow strings and comments, not brackets: a bracket typed
// and not closed yet would leave every later state a bracket deeper, and
// the scan would never meet the last one's again. What a string or a
// comment does never depends on brackets, and spliceRegion asks only
// whether a string is left open. A mark's depth is 0, as is the end's.

// lexMarkEvery is how far apart, in bytes, a scan leaves its marks.
const lexMarkEvery = 2048

// lexMark is where a scan landed (see lexState.scanTo), and its state
// there.
type lexMark struct {
	at    int
	state lexState
}

// lexMarks are the marks of a scan of one text, in order, and the state
// it ends in.
type lexMarks struct {
	marks []lexMark
	end   lexState
}

// scanMarked scans text from its start.
func scanMarked(text []byte) *lexMarks {
	return scanMarksFrom(text, nil, lexMark{}, nil, 0, 0)
}

// rescan scans text, a later version of old, whose scan m is: from the
// last mark the edit left alone, to the first of m's marks past the edit
// where the scan stands as it stood there.
func (m *lexMarks) rescan(old, text []byte) *lexMarks {
	prefix, suffix := CommonEnds(old, text)
	// A mark's state depends on the bytes before it and on two after it.
	kept := 0
	for kept < len(m.marks) && m.marks[kept].at+2 <= prefix {
		kept++
	}
	from := lexMark{}
	if kept > 0 {
		from = m.marks[kept-1]
	}
	// Marks of m past the edit are where the two scans may meet.
	meet := kept
	for meet < len(m.marks) && m.marks[meet].at < len(old)-suffix {
		meet++
	}
	return scanMarksFrom(text, m.marks[:kept], from, m, meet, len(text)-len(old))
}

// scanMarksFrom scans text from the mark from (whose marks before are
// kept), leaving a mark every lexMarkEvery bytes. Where it lands on one
// of prior's marks from index meet on (shifted by delta) in the same
// state, it takes prior's marks and end from there.
func scanMarksFrom(text []byte, kept []lexMark, from lexMark, prior *lexMarks, meet, delta int) *lexMarks {
	out := &lexMarks{marks: make([]lexMark, len(kept), len(kept)+len(text)/lexMarkEvery+1)}
	copy(out.marks, kept)
	l, i := from.state, from.at
	for i < len(text) {
		until := min(len(text), i+lexMarkEvery)
		if prior != nil {
			for meet < len(prior.marks) && prior.marks[meet].at+delta < i {
				meet++
			}
			if meet < len(prior.marks) {
				until = min(until, prior.marks[meet].at+delta)
			}
		}
		was := i
		l, i = l.scanTo(text, i, until)
		lexScanned.Add(int64(i - was))
		l.depth = 0 // brackets are not followed
		if prior != nil && meet < len(prior.marks) && prior.marks[meet].at+delta == i {
			if prior.marks[meet].state == l {
				for _, pm := range prior.marks[meet:] {
					out.marks = append(out.marks, lexMark{at: pm.at + delta, state: pm.state})
				}
				out.end = prior.end
				return out
			}
			meet++ // met it in another state: on to the next
		}
		if i < len(text) {
			out.marks = append(out.marks, lexMark{at: i, state: l})
		}
	}
	out.end = l
	return out
}

// lexScanned counts the bytes scanMarksFrom scanned (for tests).
var lexScanned atomic.Int64
