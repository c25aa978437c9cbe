// Package semantic is vramlint's model of a Python file: what each value
// is, where it lives and what each function returns, as the rules need it.
//
// It builds on the syntax (package pyast) and knows nothing of rules,
// diagnostics or fixes. File indexes a parsed buffer per run of top-level
// statements (segments.go) and answers:
//
//   - names and classes (model.go): imports and qualified names, classes
//     and what they derive from (Dataset, IterableDataset, nn.Module),
//     DataLoader constructions, device expressions, no-grad scopes
//     (with blocks, decorators, wrappers named so, Lightning hooks, and
//     functions every call of which runs under no-grad; for a top-level
//     function, also its calls in the project's other files, which the
//     rules ask last: CalledUnderNoGradAcrossFiles; while the project
//     cannot answer yet, what depends on it is withheld);
//   - values (autograd.go): which expressions carry autograd history
//     (Taint), which are known to be one tensor (IsTensor, the precondition
//     of fixes that call .detach() or .item()), what is a forward pass and
//     what builds an object (IsModelCall, CallsClass), what reaches a
//     backward pass (ReachesBackward);
//   - functions (summaries.go): for each function or method of the file,
//     whether it returns history (and, for a tuple returned on every path,
//     which elements do), returns one tensor, trains or runs the model
//     (and whether in a loop of its own), takes derivatives, freezes
//     parameters; a method named like a model (self.eval_model(x)) is the
//     method, not a model;
//   - lifetimes (steps.go): which loops run training or evaluation steps,
//     the loops a container or a total must outlive to grow memory, and
//     which loops go over whole runs (a sweep whose every iteration calls a
//     function that trains in its own loop);
//   - the file's text style (text.go): line ending, indentation.
//
// Names follow Python's scopes where values are concerned: a plain name
// assigned in a function (and not declared global or nonlocal there) is
// that function's own, seen by its uses in the function and in functions
// nested in it that do not assign it (BindingsOf, NameKey). An attribute
// chain on self or cls in a class's methods (self.device) is the class's,
// shared with the classes of the file it derives from or that derive
// from it (classFamily). Every other name and chain is the module's,
// bound to what is assigned to it at module level, in class bodies, and
// in functions declaring it global. A parameter is its function's own
// name, whose value is unknown (the callers' values are not followed).
// Names assigned in module-level code that does not parse are that
// code's own.
//
// Answers are computed on first use and remembered per version. Those that
// depend on one segment and on named facts elsewhere (the taint of a
// function, the kind of a loop) are carried to the next version of the
// buffer while the names they read keep their bindings, the functions they
// used keep their bodies, and the imports and class headers stay the same
// (File.carryOver): a keystroke recomputes what it could have changed, and
// one inside a method of a large class judges that method, not the
// methods it left alone (units.go).
// The indexes of functions and bindings by name and the line index are
// patched with the segments that came and went rather than built again,
// as are the module's sets of names (NamesIn) and its taint, whose
// segments are recomputed only when what they looked up or asked changed
// (moduletaint.go);
// and File.Reanalysed tells the runner which segments' findings of local
// rules may differ from the previous version's (incremental.go).
package semantic
