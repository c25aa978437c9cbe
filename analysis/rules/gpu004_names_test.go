package rules

import "testing"

// A name counts as another runtime's only where a whole word between
// underscores names it, in any case.
func TestNamedForOtherRuntime(t *testing.T) {
	for name, want := range map[string]bool{
		"predict_onnx":          true,
		"TRT_infer":             true,
		"run_ort":               true,
		"OpenVINO":              true,
		"tflite_predict":        true,
		"infer_TensorRT_engine": true,
		"sort_batch":            false,
		"report":                false,
		"predictOnnx":           false,
		"onnxruntime_run":       false,
		"port_forward":          false,
		"":                      false,
		"_":                     false,
	} {
		if got := namedForOtherRuntime(name); got != want {
			t.Errorf("namedForOtherRuntime(%q) = %v, want %v", name, got, want)
		}
	}
}
