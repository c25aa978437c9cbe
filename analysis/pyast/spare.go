package pyast

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"
)

// Every version of a buffer has its own laid-out text (see fill): at
// 50,000 lines, 5 MB allocated and copied for each keystroke, and most of
// what drives the collector. A version's text could be written over once
// nothing reads it any more, but only the collector knows when that is
// (a model, an analysis still running, a string viewing the text). So a
// finalizer on each text hands it, once unreachable, to its buffer's
// spares, with a list of what it holds; the next version takes a spare and
// rewrites only the segments that differ from it (those of the few
// versions since), rather than copying the whole text of the last one.
// When none is left (between two collections, after a pause), a copy of
// the latest text is made in the background for the next version
// (prepare). Each version's source (Editor.Replace) is recycled the same
// way, and made ready in the background when none is left
// (prepareSource).

// spareTexts are the unreachable laid-out texts of one layout (one Root:
// all the same size), and sources, for its next versions.
type spareTexts struct {
	mu    sync.Mutex
	texts []spareText
	// sources are unreachable sources of the layout's versions, as
	// Editor.Replace wrote them: each change copies the whole source into
	// a new buffer (1.8 MB at 50,000 lines, a third of what typing
	// allocated), which one of these saves.
	sources [][]byte
	// nodeArrays and seenArrays are unreachable mirror arrays of the large
	// statements that keep their trees (see mirror): a keystroke inside a
	// class of thousands of lines allocated and cleared a new array of its
	// nodes and of their keys, 6.6 MB in distributed_test.py's test class.
	nodeArrays [][]Node
	seenArrays []seenNodes
	// dropped: the spares were let go (dropSpares), and texts that become
	// unreachable are not kept until a new version is written.
	dropped bool
	// preparing: a copy of the latest text is being made for the next
	// version (see prepare); preparingSource: a source (prepareSource).
	// textReady and sourceReady are closed when it is done.
	preparing, preparingSource bool
	textReady, sourceReady     chan struct{}
}

// spareText is a laid-out text and what it holds.
type spareText struct {
	buf    []byte
	placed []placedSegment
}

// placedSegment is a segment at its offset in a laid-out text, with its
// spaces up to end. The segment is named by its serial, so that a spare
// does not keep the segments (their nodes and trees) alive.
type placedSegment struct {
	serial    uint64
	base, end int
}

// A layout keeps at most maxSpares spare texts (about what its versions
// leave between two collections while typing), and all layouts together
// maxSpareBytes. They are part of the live heap, which the collector lets
// grow to twice its size, but take no time to mark (they hold no
// pointers): they make collections rarer as well as saving the copy of a
// text. The budget is set for the largest files: at 50,000 lines (5.2 MB
// a text) it was 16 MB a layout, three spares, and eight took typing from
// 11-13 to 8.5-10 ms of CPU a key, at the price of 70 MiB more at the
// peak (300 to 375 MiB). More than eight saved nothing at 10,000 lines.
// They go at the next pause (ReleaseMemory).
const maxSpares = 8

// maxSpareBytes is atomic for tests, which change it while spares of other
// tests are still being kept or prepared.
var maxSpareBytes = func() *atomic.Int64 {
	v := new(atomic.Int64)
	v.Store(64 << 20)
	return v
}()

// segmentSerials numbers segments.
var segmentSerials atomic.Uint64

// newSpares makes the spares of a new layout, known to ReleaseMemory.
func newSpares() *spareTexts {
	s := &spareTexts{}
	allSpares.Lock()
	defer allSpares.Unlock()
	live := allSpares.list[:0]
	for _, w := range allSpares.list {
		if w.Value() != nil {
			live = append(live, w)
		}
	}
	allSpares.list = append(live, weak.Make(s))
	return s
}

// allSpares lists every layout's spares, weakly: a buffer closed takes its
// spares with it.
var allSpares struct {
	sync.Mutex
	list []weak.Pointer[spareTexts]
}

// dropSpares lets the collector have every spare text.
func dropSpares() {
	allSpares.Lock()
	defer allSpares.Unlock()
	for _, w := range allSpares.list {
		if s := w.Value(); s != nil {
			s.mu.Lock()
			s.texts, s.sources, s.nodeArrays, s.seenArrays, s.dropped = nil, nil, nil, nil, true
			s.mu.Unlock()
		}
	}
}

// spareBytesHeld is the size of every layout's spare texts together.
func spareBytesHeld() int {
	allSpares.Lock()
	defer allSpares.Unlock()
	n := 0
	for _, w := range allSpares.list {
		if s := w.Value(); s != nil {
			s.mu.Lock()
			for _, t := range s.texts {
				n += len(t.buf)
			}
			for _, b := range s.sources {
				n += cap(b)
			}
			n += arrayBytes(s.nodeArrays) + arrayBytes(s.seenArrays)
			s.mu.Unlock()
		}
	}
	return n
}

// take returns a spare text, or nil. When none is left but one is being
// made (see prepare), it waits for it: the copy under way ends sooner than
// a second one would (a version that came right after the last one's
// diagnostics, before its spares were ready, copied a whole text again:
// at 50,000 lines, parses of 6-11 ms instead of 1).
func (s *spareTexts) take() *spareText {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.awaitSpare(func() bool { return len(s.texts) == 0 && s.preparing }, s.textReady)
	if len(s.texts) == 0 {
		return nil
	}
	t := s.texts[len(s.texts)-1]
	s.texts = s.texts[:len(s.texts)-1]
	tookSpare.Add(1)
	return &t
}

// watch arranges for buf, holding placed, to become a spare once nothing
// reaches it.
func (s *spareTexts) watch(buf []byte, placed []placedSegment) {
	if s == nil || len(buf) < 4<<10 {
		return // not worth it, and a tiny allocation shares its block
	}
	whenUnreachable(s, buf, len(buf), func(spare []byte, held int) {
		if s.mayKeep(len(s.texts), maxSpares, len(spare), held) {
			s.texts = append(s.texts, spareText{buf: spare, placed: placed})
		}
	})
}

// whenUnreachable calls keep with the first size elements of buf once
// nothing reaches buf, with s.mu held and what every layout's spares
// hold. A version was written: spares are kept again (see dropped).
func whenUnreachable[T any](s *spareTexts, buf []T, size int, keep func(spare []T, held int)) {
	s.keepAgain()
	runtime.SetFinalizer(unsafe.SliceData(buf), func(first *T) {
		// Finalizers run one at a time: no other spare is kept between
		// the count and the append.
		held := spareBytesHeld()
		s.mu.Lock()
		defer s.mu.Unlock()
		keep(unsafe.Slice(first, size), held)
	})
}

// arrayBytes is the size of the arrays of list.
func arrayBytes[T any](list [][]T) int {
	n := 0
	for _, a := range list {
		n += cap(a) * int(unsafe.Sizeof(*new(T)))
	}
	return n
}

// spareArrayFrom is the size, in bytes, from which a mirror array is worth
// keeping once unreachable: a class of a few thousand lines.
const spareArrayFrom = 256 << 10

// maxSpareArrays is how many spare arrays of each kind a layout keeps:
// typing into distributed_test.py's test class, eight (maxSpares) took
// the session's peak RSS from 142-146 MiB (no spare arrays) to 191-202,
// four to 175, and the keys cost the same with four as with eight.
const maxSpareArrays = 4

// takeArray returns a spare array of list cut to n elements, with room
// for no more than a quarter more (a larger one would hold memory the
// statement does not need), or nil. Spares too small for n go: typed
// into, a statement grows, and its earlier versions' arrays stay too
// small for it.
func takeArray[T any](s *spareTexts, list *[][]T, n int) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	*list = slices.DeleteFunc(*list, func(a []T) bool { return cap(a) < n })
	for i, a := range *list {
		if cap(a) <= n+n/4 {
			*list = slices.Delete(*list, i, i+1)
			tookSpareArray.Add(1)
			return a[:n]
		}
	}
	return nil
}

// newArray makes an array of n elements with room for an eighth more, so
// that it can hold the next versions of a statement being typed into.
func newArray[S ~[]E, E any](n int) S { return make(S, n, n+n/8) }

// watchArray arranges for a, a mirror array of list's kind, to become a
// spare once nothing reaches it.
func watchArray[T any](s *spareTexts, list *[][]T, a []T) {
	if cap(a)*int(unsafe.Sizeof(*new(T))) < spareArrayFrom {
		return
	}
	a = a[:cap(a)]
	whenUnreachable(s, a, len(a), func(spare []T, held int) {
		if s.mayKeep(len(*list), maxSpareArrays, len(spare)*int(unsafe.Sizeof(*new(T))), held) {
			*list = append(*list, spare)
		}
	})
}

// mirrorArrays returns arrays of n nodes and of their n keys, for the
// mirror of a large statement that keeps its tree: spares of s where it
// has them, new ones otherwise, each to become a spare once nothing
// reaches it. A spare holds an earlier mirror's nodes and keys: the mirror
// writes every field of every one.
func (s *spareTexts) mirrorArrays(n int) ([]Node, seenNodes) {
	if s == nil {
		return make([]Node, n), make(seenNodes, n)
	}
	nodes := takeArray(s, &s.nodeArrays, n)
	if nodes == nil {
		nodes = newArray[[]Node](n)
	}
	keys := takeArray(s, &s.seenArrays, n)
	if keys == nil {
		keys = newArray[seenNodes](n)
	}
	watchArray(s, &s.nodeArrays, nodes)
	watchArray(s, &s.seenArrays, keys)
	return nodes, keys
}

// tookSpareArray counts the mirror arrays taken from spares (for tests).
var tookSpareArray atomic.Int64

// keepAgain undoes dropSpares for this layout: it is edited again.
func (s *spareTexts) keepAgain() {
	s.mu.Lock()
	s.dropped = false
	s.mu.Unlock()
}

// mayKeep reports whether the layout may keep one more spare of size
// bytes besides the n of its kind it has (at most limit of that kind),
// every layout's spares holding held bytes. Call with s.mu held.
func (s *spareTexts) mayKeep(n, limit, size, held int) bool {
	return !s.dropped && n < limit && int64(held+size) <= maxSpareBytes.Load()
}

// prepare makes a copy of text (the laid-out text of the version just
// written, holding placed) a spare for the next version, in the
// background, when the layout has no spare left. Between two collections
// the unreachable texts run out, and a version without one allocates and
// copies a whole text on the path to its diagnostics (5.2 MB at 50,000
// lines: 1.5 ms at the median, and the slowest keystrokes of a typing
// session, 10-35 ms); made here, beside the analysis of this version, the
// next one finds it ready and rewrites only what differs.
func (s *spareTexts) prepare(text []byte, placed []placedSegment) {
	if s == nil || len(text) < 4<<10 {
		return
	}
	s.makeSpare(&s.preparing, &s.textReady, func() int { return len(s.texts) }, func() ([]byte, int) {
		buf := append([]byte(nil), text...)
		return buf, len(buf)
	}, func(buf []byte) {
		s.texts = append(s.texts, spareText{buf: buf, placed: placed})
		prepared.Add(1)
	})
}

// awaitSpare waits, with s.mu held, while waiting says a spare is being
// made, for ready to close.
func (s *spareTexts) awaitSpare(waiting func() bool, ready chan struct{}) {
	if waiting() {
		s.mu.Unlock()
		<-ready
		s.mu.Lock()
	}
}

// makeSpare runs build (which returns a buffer and the bytes it counts
// for) in the background, unless one of its kind is being made (busy) or
// is left (kept says how many), and then gives the buffer to add if the
// budget allows, and closes *ready.
func (s *spareTexts) makeSpare(busy *bool, ready *chan struct{}, kept func() int, build func() ([]byte, int), add func([]byte)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if *busy || kept() > 0 {
		return
	}
	*busy = true
	done := make(chan struct{})
	*ready = done
	go func() {
		buf, size := build()
		held := spareBytesHeld()
		s.mu.Lock()
		defer s.mu.Unlock()
		*busy = false
		if s.mayKeep(kept(), maxSpares, size, held) {
			add(buf)
		}
		close(done)
	}()
}

// prepareSource makes an empty source of capacity n, its memory touched,
// a spare for the next version, in the background, when the layout has no
// spare source left. Between two collections the unreachable sources run
// out, and each version's source (Editor.Replace) came from memory the
// system had yet to map: at 50,000 lines, 450 page faults on the path to
// the diagnostics, about 1 ms of each keystroke until the collector ran.
func (s *spareTexts) prepareSource(n int) {
	if s == nil || n < 64<<10 {
		return
	}
	s.makeSpare(&s.preparingSource, &s.sourceReady, func() int { return len(s.sources) }, func() ([]byte, int) {
		return touched(make([]byte, n)), n
	}, func(buf []byte) {
		s.sources = append(s.sources, buf[:0])
		preparedSources.Add(1)
	})
}

// touched writes a zero into each page of buf and returns it: a large
// allocation from memory the system has not mapped yet (or took back) is
// not cleared by the runtime, and each page faults when first written.
func touched(buf []byte) []byte {
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 0
	}
	return buf
}

// prepared counts the spares prepare made (for tests).
var prepared atomic.Int64

// preparedSources counts the spare sources prepareSource made (for tests).
var preparedSources atomic.Int64

// tookSpare counts the versions written into a spare text (for tests).
var tookSpare atomic.Int64

// tookSpareSource counts the sources written into a spare (for tests).
var tookSpareSource atomic.Int64

// takeSource returns an empty spare source that holds at least n bytes,
// or nil; like take, it waits for one being made.
func (s *spareTexts) takeSource(n int) []byte {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.awaitSpare(func() bool { return len(s.sources) == 0 && s.preparingSource }, s.sourceReady)
	for i, b := range s.sources {
		if cap(b) >= n {
			s.sources = append(s.sources[:i], s.sources[i+1:]...)
			tookSpareSource.Add(1)
			return b[:0]
		}
	}
	return nil
}

// watchSource arranges for src, a source Editor.Replace wrote, to become a
// spare once nothing reaches it.
func (s *spareTexts) watchSource(src []byte) {
	if s == nil || cap(src) < 64<<10 {
		return // not worth it
	}
	whenUnreachable(s, src, cap(src), func(spare []byte, held int) {
		if s.mayKeep(len(s.sources), maxSpares, len(spare), held) {
			s.sources = append(s.sources, spare)
		}
	})
}
