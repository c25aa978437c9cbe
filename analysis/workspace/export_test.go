package workspace

// Parses is how many files the index parsed to summarise them.
func (ix *Index) Parses() int64 { return ix.parses.Load() }
