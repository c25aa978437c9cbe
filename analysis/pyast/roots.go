package pyast

import (
	"sync"
	"sync/atomic"
)

// A top-level statement's parent is its tree's Root, which lies outside
// the statement's mirror array, so a number (Node.parentAt) cannot say
// where it is the way it does for every other parent. Each Root gets a
// number where it is made (newRoot), and this table finds it. The table
// holds every Root for as long as the process runs: a node may outlive
// the trees that hold it (in facts carried from version to version), and
// a number used again would give it another tree's Root. That is one Node
// and a pointer for each file laid out or region parsed (about 40 bytes);
// a session of a day types some thousands of keystrokes and opens some
// hundreds of files, a few megabytes at most.

// rootBlockSize is how many Roots one block of the table holds.
const rootBlockSize = 1024

// roots is the table: blocks of Roots, root number n at blocks[(n-1) /
// rootBlockSize]. Lookups take no lock (a statement's Parent is asked for
// by the million); a block, once made, never moves, and the list of blocks
// is replaced, never changed, when it grows.
var roots struct {
	mu     sync.Mutex // held to number a Root
	count  int32
	blocks atomic.Pointer[[]*[rootBlockSize]*Node]
}

// newRoot makes a tree's Root, a module (or an ERROR when nothing parses)
// ending at end, and returns it with its number, which its statements'
// mirrors take (see mirror).
func newRoot(kind uint16, end int) (*Node, int32) {
	root := &Node{kind: kind, Named: true, end: int32(end)}
	roots.mu.Lock()
	defer roots.mu.Unlock()
	if roots.count == 1<<31-1 {
		panic("pyast: too many syntax trees for one process")
	}
	i := roots.count
	roots.count++
	var blocks []*[rootBlockSize]*Node
	if b := roots.blocks.Load(); b != nil {
		blocks = *b
	}
	if int(i/rootBlockSize) == len(blocks) {
		grown := append(blocks[:len(blocks):len(blocks)], new([rootBlockSize]*Node))
		blocks = grown
		roots.blocks.Store(&grown)
	}
	blocks[i/rootBlockSize][i%rootBlockSize] = root
	return root, roots.count
}

// rootNumbered returns the Root numbered n (n >= 1).
func rootNumbered(n int32) *Node {
	i := n - 1
	return (*roots.blocks.Load())[i/rootBlockSize][i%rootBlockSize]
}
