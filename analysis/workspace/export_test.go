package workspace

import "context"

// ForgetModels drops the models of files that are not open.
func (ix *Index) ForgetModels() { ix.closed.forget() }

// ModelsKept is how many models of files that are not open the index keeps.
func (ix *Index) ModelsKept() int {
	ix.closed.mu.Lock()
	defer ix.closed.mu.Unlock()
	return len(ix.closed.entries)
}

// StoreStale keeps a summary of path made as if before any method name
// was asked about: what a file `check` analysed while the first question
// was scanning leaves (see MethodCallersUnderNoGrad).
func (ix *Index) StoreStale(path string) {
	s := ix.summarizeFile(absPath(path))
	s.Methods, s.methodsKnown = nil, 0
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.store(s)
}

// ImportedModules is importedModules, for the file at path.
func ImportedModules(path, module string, pkg bool) []string {
	return importedModules(path, module, pkg)
}

// StoreFromDisk summarises src as the text of the file at path read from
// disk and stores it as the indexing's readers do, without looking first
// whether the file is open: what a reader that looked before a buffer was
// opened stores after it.
func (ix *Index) StoreFromDisk(path string, src []byte) {
	ix.refreshSource(context.Background(), absPath(path), src)
}
