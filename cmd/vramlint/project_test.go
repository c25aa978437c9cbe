package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/vramlint/vramlint/codeactions"
)

// The projects in testdata/projects split the work across files as real
// projects do. For each, the golden file testdata/projects/NAME.golden
// holds what `check` reports, the diff `check --unsafe-fixes` makes to each
// file, and what `check` reports after it. Regenerate with
// `go test ./cmd/vramlint -run TestProjects -update`.
func TestProjects(t *testing.T) {
	projects, err := filepath.Glob("../../testdata/projects/*")
	if err != nil || len(projects) == 0 {
		t.Fatalf("no projects: %v", err)
	}
	for _, project := range projects {
		if st, err := os.Stat(project); err != nil || !st.IsDir() {
			continue
		}
		name := filepath.Base(project)
		t.Run(name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), name)
			if err := os.CopyFS(root, os.DirFS(project)); err != nil {
				t.Fatal(err)
			}
			before := readTree(t, root)
			clean := func(s string) string { return strings.ReplaceAll(s, root+string(filepath.Separator), "") }
			var got strings.Builder
			out, errOut, code := vramlint(t, "check", root)
			got.WriteString(clean(out) + clean(errOut))
			got.WriteString("\n=== check --unsafe-fixes: the diff ===\n")
			_, errOut, _ = vramlint(t, "check", "--unsafe-fixes", root)
			got.WriteString(clean(errOut))
			after := readTree(t, root)
			var paths []string
			for p := range after {
				paths = append(paths, p)
			}
			sort.Strings(paths)
			for _, p := range paths {
				if after[p] != before[p] {
					got.WriteString(codeactions.UnifiedDiff(p, []byte(before[p]), []byte(after[p])))
				}
			}
			got.WriteString("\n=== check after the fixes ===\n")
			out, _, _ = vramlint(t, "check", root)
			got.WriteString(clean(out))
			if code != exitFindings {
				t.Errorf("check exited %d on %s, want %d: every fixture project has findings", code, name, exitFindings)
			}
			golden := filepath.Join("../../testdata/projects", name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got.String() != string(want) {
				t.Errorf("%s differs from the golden file:\n%s", name, codeactions.UnifiedDiff(golden, want, []byte(got.String())))
			}
		})
	}
}

// readTree reads every file under root, by slash-separated relative path.
func readTree(t *testing.T, root string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(root, path)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// A cross-file fix is written whole or not at all: with train.py
// read-only, data.py is left as it was (it is written first, then put
// back), and check says why and exits 2.
func TestCrossFileFixIsAllOrNothing(t *testing.T) {
	root := filepath.Join(t.TempDir(), "flat")
	if err := os.CopyFS(root, os.DirFS(filepath.Join("..", "..", "testdata", "projects", "flat"))); err != nil {
		t.Fatal(err)
	}
	before := readTree(t, root)
	train := filepath.Join(root, "train.py")
	if err := os.Chmod(train, 0o444); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := vramlint(t, "check", "--unsafe-fixes", "--select", "GPU001", root)
	if code != exitError || !strings.Contains(errOut, "train.py: is read-only; not written") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
	after := readTree(t, root)
	for _, name := range []string{"data.py", "train.py"} {
		if after[name] != before[name] {
			t.Errorf("%s changed although the fix could not be written whole:\n%s", name, codeactions.UnifiedDiff(name, []byte(before[name]), []byte(after[name])))
		}
	}
}

// --diff shows a cross-file fix as a diff of each file it edits, named as
// the command line named the project, and writes nothing.
func TestCrossFileFixDiff(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "flat"), os.DirFS(filepath.Join("..", "..", "testdata", "projects", "flat"))); err != nil {
		t.Fatal(err)
	}
	before := readTree(t, dir)
	t.Chdir(dir)
	out, errOut, code := vramlint(t, "check", "--diff", "--unsafe-fixes", "flat")
	for _, want := range []string{"--- flat/data.py\n", "--- flat/train.py\n", "+        x = x.to(device, non_blocking=True)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the diff lacks %q:\n%s", want, out)
		}
	}
	if code != exitFindings || !strings.Contains(errOut, "Would fix 2 problems in 2 files.") {
		t.Errorf("exit %d, stderr: %s", code, errOut)
	}
	if after := readTree(t, dir); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Error("--diff wrote files")
	}
}
