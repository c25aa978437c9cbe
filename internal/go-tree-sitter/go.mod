module github.com/smacker/go-tree-sitter

go 1.20
