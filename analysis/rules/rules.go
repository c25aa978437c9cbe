// Package rules holds vramlint's rules, one file each: detection, message,
// documentation and fix builder together.
package rules

import "github.com/vramlint/vramlint/analysis"

// All returns every rule, sorted by code.
func All() []*analysis.Rule {
	return []*analysis.Rule{
		DeviceMoveInDataset,
		GraphTensorInContainer,
		GraphTensorAccumulated,
		EvalWithoutNoGrad,
		EmptyCacheInLoop,
	}
}

// ByCode returns the rule with the given code, or nil.
func ByCode(code string) *analysis.Rule { return analysis.FindRule(All(), code) }

func init() {
	for _, r := range All() {
		analysis.KnownCodes = append(analysis.KnownCodes, r.Code)
	}
}
