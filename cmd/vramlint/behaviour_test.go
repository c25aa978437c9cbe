package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// These tests run real PyTorch programs (CPU-only PyTorch, Debian's
// python3-torch) before and after `vramlint check --fix --unsafe-fixes`.
// testdata/behaviour/sitecustomize.py turns CUDA calls into recorded no-ops
// and logs which process made them.

// torchPython returns a Python that can import torch, or skips the test;
// with VRAMLINT_REQUIRE_TORCH set (as .ci/test does) it fails instead.
func torchPython(t *testing.T) string {
	t.Helper()
	python := os.Getenv("VRAMLINT_PYTHON")
	if python == "" {
		python = "/usr/bin/python3"
	}
	if err := exec.Command(python, "-c", "import torch").Run(); err != nil {
		if os.Getenv("VRAMLINT_REQUIRE_TORCH") != "" {
			t.Fatalf("%s cannot import torch (%v); install python3-torch", python, err)
		}
		t.Skipf("no PyTorch for %s (%v): install python3-torch, or set VRAMLINT_PYTHON", python, err)
	}
	return python
}

type shimRecord struct {
	Kind        string `json:"kind"`
	Worker      bool   `json:"worker"`
	NonBlocking bool   `json:"non_blocking"`
}

// shimCounts summarises one run's log.
type shimCounts struct {
	workerMoves, mainMoves, mainNonBlocking, emptyCache int
	// cpuInputs counts calls of a model moved to the device with a tensor
	// that was not: CPU batches fed to a GPU model.
	cpuInputs int
}

// runProgram runs a Python program in its own folder under the shim and
// returns its standard output and what the shim recorded.
func runProgram(t *testing.T, python, program string) (string, shimCounts) {
	t.Helper()
	dir := filepath.Dir(program)
	logPath := filepath.Join(dir, "shim.log")
	os.Remove(logPath)
	shim, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "behaviour"))
	cmd := exec.Command(python, filepath.Base(program))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONPATH="+shim, "VRAMLINT_SHIM_LOG="+logPath, "PYTHONDONTWRITEBYTECODE=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v\n%s", program, err, stderr.String())
		}
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("%s did not finish in 3 minutes", program)
	}
	var c shimCounts
	log, err := os.Open(logPath)
	if os.IsNotExist(err) {
		return stdout.String(), c // no CUDA call at all
	}
	if err != nil {
		t.Fatalf("%s: the shim log: %v", program, err)
	}
	defer log.Close()
	sc := bufio.NewScanner(log)
	for sc.Scan() {
		var r shimRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("shim log: %v", err)
		}
		switch {
		case r.Kind == "empty_cache":
			c.emptyCache++
		case r.Kind == "cpu_input":
			c.cpuInputs++
		case r.Worker:
			c.workerMoves++
		default:
			c.mainMoves++
			if r.NonBlocking {
				c.mainNonBlocking++
			}
		}
	}
	return stdout.String(), c
}

// fixedCopy copies program twice, applies every fix vramlint offers (safe
// and unsafe) to the second copy, and returns both paths with the exit
// status and standard error of that run.
func fixedCopy(t *testing.T, program string) (before, after string, code int, errOut string) {
	t.Helper()
	before = filepath.Join(t.TempDir(), filepath.Base(program))
	after = filepath.Join(t.TempDir(), filepath.Base(program))
	copyFile(t, program, before, 0o644)
	copyFile(t, program, after, 0o644)
	_, errOut, code = vramlint(t, "check", "--fix", "--unsafe-fixes", after)
	return before, after, code, errOut
}

func TestFixedProgramsBehave(t *testing.T) {
	python := torchPython(t)
	programs, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "behaviour", "programs", "*.py"))
	programs = append(programs, filepath.Join("..", "..", "examples", "train.py"))
	if len(programs) < 6 {
		t.Fatalf("only %d programs", len(programs))
	}
	for _, program := range programs {
		t.Run(filepath.Base(program), func(t *testing.T) {
			t.Parallel()
			before, after, code, errOut := fixedCopy(t, program)
			if code != exitClean {
				t.Fatalf("fix: exit %d, %s", code, errOut)
			}
			outBefore, b := runProgram(t, python, before)
			outAfter, a := runProgram(t, python, after)
			checkFixedBehaviour(t, outBefore, outAfter, b, a)
		})
	}
}

// TestFixedProjectsBehave is TestFixedProgramsBehave for projects whose
// Dataset or collate function and training loop are in different files:
// the fix edits both, and the program must still give the same results,
// with every batch moved in the main process.
func TestFixedProjectsBehave(t *testing.T) {
	python := torchPython(t)
	for project, entry := range map[string]string{"flat": "train.py", "package": "run.py"} {
		t.Run(project, func(t *testing.T) {
			t.Parallel()
			src := filepath.Join("..", "..", "testdata", "projects", project)
			before, after := filepath.Join(t.TempDir(), project), filepath.Join(t.TempDir(), project)
			for _, dir := range []string{before, after} {
				if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
					t.Fatal(err)
				}
			}
			if _, errOut, code := vramlint(t, "check", "--fix", "--unsafe-fixes", after); code != exitClean {
				t.Fatalf("fix: exit %d, %s", code, errOut)
			}
			outBefore, b := runProgram(t, python, filepath.Join(before, entry))
			outAfter, a := runProgram(t, python, filepath.Join(after, entry))
			checkFixedBehaviour(t, outBefore, outAfter, b, a)
		})
	}
}

// The .item() and .detach() fixes of findings that come from another
// module (a loss function in metrics.py, a model's method in model.py)
// keep the program's results: testdata/projects/losses prints its
// losses, totals and predictions before and after every fix.
func TestCrossFileFixesKeepResults(t *testing.T) {
	python := torchPython(t)
	src := filepath.Join("..", "..", "testdata", "projects", "losses")
	before, after := filepath.Join(t.TempDir(), "losses"), filepath.Join(t.TempDir(), "losses")
	for _, dir := range []string{before, after} {
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
	}
	if _, errOut, code := vramlint(t, "check", "--fix", "--unsafe-fixes", after); code == exitError {
		t.Fatalf("fix: exit %d, %s", code, errOut)
	}
	changed := 0
	for _, name := range []string{"loops.py", "scoring.py"} {
		a, _ := os.ReadFile(filepath.Join(before, "trainer", name))
		b, _ := os.ReadFile(filepath.Join(after, "trainer", name))
		if string(a) != string(b) {
			changed++
		}
	}
	if changed != 2 {
		t.Fatalf("the fixes changed %d of loops.py and scoring.py, want both: the test would prove little", changed)
	}
	outBefore, _ := runProgram(t, python, filepath.Join(before, "run.py"))
	outAfter, _ := runProgram(t, python, filepath.Join(after, "run.py"))
	if outBefore != outAfter || outBefore == "" {
		t.Errorf("the program's output changed:\nbefore:\n%s\nafter:\n%s", outBefore, outAfter)
	}
}

// checkFixedBehaviour compares a program's runs before and after the fix.
func checkFixedBehaviour(t *testing.T, outBefore, outAfter string, b, a shimCounts) {
	t.Helper()
	if b.workerMoves == 0 {
		t.Errorf("before the fix no DataLoader worker moved a tensor to the device: %+v", b)
	}
	if a.workerMoves != 0 {
		t.Errorf("after the fix workers still move tensors to the device: %+v", a)
	}
	if a.mainNonBlocking == 0 {
		t.Errorf("after the fix the main process makes no non_blocking transfer: %+v", a)
	}
	if a.cpuInputs != 0 {
		t.Errorf("after the fix a model on the device was called with %d CPU tensors: some loop does not move its batch: %+v", a.cpuInputs, a)
	}
	if b.emptyCache > 0 && (a.emptyCache == 0 || 2*a.emptyCache > b.emptyCache) {
		t.Errorf("empty_cache() calls: %d before, %d after: want it moved out of the batch loop", b.emptyCache, a.emptyCache)
	}
	if outBefore != outAfter {
		t.Errorf("the program's output changed:\nbefore:\n%s\nafter:\n%s", outBefore, outAfter)
	}
	if outBefore == "" {
		t.Error("the program printed nothing to compare")
	}
}

// fixesApplyMarker is the line a precondition program carries when the
// fixes are its point (a loss kept, summed or stored, fixed): the test then
// checks that the fixed copy differs. The others check that no fix that
// would break them is offered, and may stay as they are.
const fixesApplyMarker = "# vramlint-behaviour: the fixes apply"

// Programs where the fixes must not change results or gradients: values
// that are not tensors (tuples, modules, optimizers, processes), lists
// meant for backward(), totals a caller uses as tensors. Each prints its
// losses and gradient norms; after every fix vramlint offers, safe and
// unsafe, the output must be the same.
func TestFixesKeepResultsAndGradients(t *testing.T) {
	python := torchPython(t)
	programs, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "behaviour", "preconditions", "*.py"))
	if len(programs) < 4 {
		t.Fatalf("only %d programs", len(programs))
	}
	for _, program := range programs {
		t.Run(filepath.Base(program), func(t *testing.T) {
			t.Parallel()
			before, after, code, errOut := fixedCopy(t, program)
			if code == exitError {
				t.Fatalf("fix: exit %d, %s", code, errOut)
			}
			// A program that says its fixes apply must be rewritten: an
			// unchanged copy would print the same and prove nothing.
			original, _ := os.ReadFile(before)
			fixed, _ := os.ReadFile(after)
			if bytes.Contains(original, []byte(fixesApplyMarker)) && bytes.Equal(original, fixed) {
				t.Fatal("no fix was applied, though the program says its fixes apply")
			}
			outBefore, _ := runProgram(t, python, before)
			outAfter, _ := runProgram(t, python, after)
			if outBefore != outAfter {
				fixed, _ := os.ReadFile(after)
				t.Errorf("the program's output changed:\nbefore:\n%s\nafter:\n%s\nfixed program:\n%s", outBefore, outAfter, fixed)
			}
			if outBefore == "" {
				t.Error("the program printed nothing to compare")
			}
		})
	}
}

// The GPU measurement scripts (scripts/gpu, docs/GPU-MEASUREMENTS.md) run
// only where there is a GPU, which CI has not: here they run on the CPU,
// scaled down, so that none rots. The article's program as vramlint fixes
// it must run to the end there, and as written it must not; the behaviour
// programs, under the shim, print the same before and after the fix.
func TestGPUMeasurementScriptsRunWithoutGPU(t *testing.T) {
	python := torchPython(t)
	vramlint := filepath.Join(buildVramlint(t), "vramlint")
	out := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(python, args...)
		cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
		output, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, output)
		}
		return string(output)
	}
	run("../../scripts/gpu/article_memory.py", "--vramlint", vramlint, "--out", out,
		"--samples", "64", "--epochs", "2", "--timeout", "120")
	data, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var report struct {
		Results []struct {
			Variant          string
			Outcome          string
			BatchesProcessed int    `json:"batches_processed"`
			FirstBatchOn     string `json:"first_batch_on"`
		}
	}
	if err := json.Unmarshal(data, &report); err != nil {
		t.Fatal(err)
	}
	if len(report.Results) != 4 {
		t.Fatalf("want 4 variants, got %+v", report.Results)
	}
	for _, r := range report.Results[:3] {
		if r.Outcome == "exit 0" {
			t.Errorf("%s: the unfixed program ran to the end on a machine without CUDA: %+v", r.Variant, r)
		}
	}
	// 64 samples in batches of 32, two epochs.
	if after := report.Results[3]; after.Outcome != "exit 0" || after.BatchesProcessed != 4 || after.FirstBatchOn != "cpu" {
		t.Errorf("the fixed program: %+v", after)
	}
	table := run("../../scripts/gpu/rule_claims.py", "--steps", "12")
	if rows := bytes.Count([]byte(table), []byte("\n| GPU00")); rows != 8 {
		t.Errorf("rule_claims.py printed %d rows, want 8:\n%s", rows, table)
	}
	// One program of one file and one project of two, under the shim.
	programs := filepath.Join(out, "programs.json")
	run("../../scripts/gpu/fixed_programs.py", "--vramlint", vramlint, "--out", programs, "--shim",
		"--only", "collate_gpu", "--only", "projects/flat")
	data, err = os.ReadFile(programs)
	if err != nil {
		t.Fatal(err)
	}
	type ran struct{ Outcome, Stdout string }
	var runs []struct {
		Program       string
		Before, After ran
	}
	if err := json.Unmarshal(data, &runs); err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("want 2 programs, got %+v", runs)
	}
	for _, r := range runs {
		if r.Before.Outcome != "exit 0" || r.After != r.Before || r.After.Stdout == "" {
			t.Errorf("%s under the shim: before %+v, after %+v", r.Program, r.Before, r.After)
		}
	}
}
