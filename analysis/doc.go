// Package analysis is vramlint's engine: the per-file model of a Python
// buffer, the semantic facts rules ask about, and the rule framework.
//
// Layers, each using only the ones above it:
//
//   - Syntax: package pyast mirrors tree-sitter's tree into Go nodes, laid
//     out per run of top-level statements so an edit re-mirrors only what
//     it touched.
//   - Model (model.go, segments.go): File indexes calls, loops,
//     assignments, classes, imports and name bindings per segment, and
//     carries remembered answers across versions while what they depend on
//     is unchanged.
//   - Semantic facts: what a value is and where it lives. autograd.go: which
//     expressions carry autograd history (Taint), which are known to be one
//     tensor (IsTensor), what is a forward pass and what builds an object
//     (IsModelCall, CallsClass), what reaches backward. summaries.go: what
//     each function or method of the file returns, whether it trains or
//     runs the model. steps.go: which loops run training or evaluation
//     steps (the lifetime that matters for memory growth). model.go:
//     no-grad scopes, including functions only ever called under no-grad.
//   - Rule framework (rule.go, runner.go, diagnostic.go, edits.go,
//     verify.go, settings.go, suppress.go): Rule, Pass, Diagnostic, Fix,
//     the runner shared by `vramlint check` and the server, fix
//     verification, configuration and noqa.
//   - Rules live in package rules, one file each; they ask the facts above
//     and do not re-derive them.
//
// Offsets: everything a Result hands out (diagnostics, related locations,
// fix edits) is a byte offset into the UTF-8 source. Inside, node offsets
// index Tree.Src, which for a buffer laid out for editing is the source
// with spaces at the ends of some lines (see pyast.Tree); File.ToSource
// and File.FromSource convert.
package analysis
