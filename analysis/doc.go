// Package analysis is vramlint's rule framework: Rule, Pass, Diagnostic,
// Fix and Edit, the Runner that `vramlint check` and the server share, fix
// verification, settings and noqa suppressions.
//
// The layers, each importing only the ones before it (a test in
// cmd/vramlint enforces it):
//
//   - Syntax: package source maps offsets to lines and columns; package
//     pyast mirrors tree-sitter's tree into Go nodes, laid out per run of
//     top-level statements so an edit re-mirrors only what it touched, and
//     is the one place that calls tree-sitter (pyast.Editor applies a
//     client's changes and reparses the statements they touched;
//     pyast.Region checks a fix by an incremental reparse).
//   - Model: package semantic, the facts about values, calls, classes,
//     lifetimes and function summaries.
//   - This package, the framework.
//   - Rules: package rules, one file each; they ask the model and do not
//     re-derive its facts.
//   - While a buffer is edited, the Runner keeps the findings of local
//     rules (Rule.Local) in the statements an edit did not touch and runs
//     them only over those it did (AnalyzeTree, Result.local).
//   - codeactions and server work through Result (diagnostics, fixes,
//     NoqaEdit, NoqaCodeAt); they do not look inside the model.
//
// Offsets: everything a Result hands out (diagnostics, related locations,
// fix edits) is a byte offset into the UTF-8 source. Inside, node offsets
// index Tree.Src, which for a buffer laid out for editing is the source
// with spaces at the ends of some lines (see pyast.Tree); File.ToSource
// and File.FromSource convert.
package analysis
