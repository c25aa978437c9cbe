package analysis

import "github.com/vramlint/vramlint/analysis/source"

// The one position mapper, at the edge of the analysis: offsets inside are
// bytes; the server and the reports convert them with these (see package
// source).
type (
	Mapper   = source.Mapper
	Position = source.Position
	Encoding = source.Encoding
)

// Position encodings.
const (
	UTF8       = source.UTF8
	UTF16      = source.UTF16
	CodePoints = source.CodePoints
)

// NewMapper indexes the lines of src.
func NewMapper(src []byte) *Mapper { return source.NewMapper(src) }
