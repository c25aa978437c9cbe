package workspace_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vramlint/vramlint/analysis/pyast"
	"github.com/vramlint/vramlint/analysis/semantic"
	"github.com/vramlint/vramlint/analysis/workspace"
)

// writeTree writes files (slash-separated paths relative to root).
func writeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestIndexResolvesImports(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"pyproject.toml":           "",
		"src/pkg/__init__.py":      "from .data import Pairs\nfrom .loop import Loop\n",
		"src/pkg/base.py":          "from torch.utils.data import Dataset\n\nclass Base(Dataset):\n    pass\n",
		"src/pkg/data.py":          "from .base import Base\nfrom . import base as b\n\nclass Pairs(Base):\n    pass\n\nclass Other(b.Base):\n    pass\n",
		"src/pkg/sub/deep.py":      "from ..data import Pairs\nfrom ...outside import X\n",
		"src/pkg/loop.py":          "from .loop2 import Loop\n",
		"src/pkg/loop2.py":         "from .loop import Loop\n",
		"scripts/train.py":         "from helpers import make\nfrom pkg import Pairs\n",
		"scripts/helpers.py":       "def make():\n    pass\n",
		"vendored/lib/__init__.py": "",
		"vendored/lib/mod.py":      "from lib.other import Thing\n",
		"vendored/lib/other.py":    "class Thing:\n    pass\n",
	})
	ix := workspace.NewIndex(root)
	abs := func(rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }
	for _, c := range []struct{ path, module string }{
		{"src/pkg/data.py", "pkg.data"}, {"src/pkg/__init__.py", "pkg"}, {"src/pkg/sub/deep.py", "pkg.sub.deep"},
		{"scripts/train.py", "scripts.train"},
	} {
		if got, _ := ix.Module(abs(c.path)); got != c.module {
			t.Errorf("Module(%s) = %q, want %q", c.path, got, c.module)
		}
	}
	for _, c := range []struct {
		from, name, path, def string
	}{
		{"scripts/train.py", "pkg.Pairs", "src/pkg/data.py", "Pairs"},      // a re-export in __init__.py, src/ layout
		{"scripts/train.py", "helpers.make", "scripts/helpers.py", "make"}, // next to a script
		{"src/pkg/data.py", "pkg.base.Base", "src/pkg/base.py", "Base"},
		{"vendored/lib/mod.py", "lib.other.Thing", "vendored/lib/other.py", "Thing"}, // above the top package
		{"scripts/train.py", "pkg.Loop", "", ""},                                     // re-exports in a circle
		{"scripts/train.py", "torch.utils.data.Dataset", "", ""},                     // not the project's
		{"scripts/train.py", "pkg.base", "", ""},                                     // a module, not a class
	} {
		path, name, ok := ix.Resolve(abs(c.from), c.name)
		want := c.path != ""
		if ok != want || (ok && (path != abs(c.path) || name != c.def)) {
			t.Errorf("Resolve(%s, %s) = %s %s %v; want %s %s %v", c.from, c.name, path, name, ok, c.path, c.def, want)
		}
	}
	if bases, ok := ix.ClassBases(abs("src/pkg/data.py"), "Other"); !ok || len(bases) != 1 || bases[0] != "pkg.base.Base" {
		t.Errorf("bases of Other: %v %v (a base through a module alias imported relatively)", bases, ok)
	}
}

// Generation changes for a file when another file's summary changes, not
// when its own does, nor when a file changes in a way others cannot see.
func TestIndexGenerations(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"data.py":  "from torch.utils.data import Dataset\n\nclass D(Dataset):\n    pass\n",
		"train.py": "from torch.utils.data import DataLoader\nfrom data import D\n\nloader = DataLoader(D(), num_workers=2)\n",
	})
	ix := workspace.NewIndex(root)
	data, train := filepath.Join(root, "data.py"), filepath.Join(root, "train.py")
	if _, err := ix.Build(context.Background(), ix.Files(), nil); err != nil {
		t.Fatal(err)
	}
	loaders := ix.LoadersUsing(data)["D"]
	if len(loaders) != 1 || loaders[0].Path != train || loaders[0].Workers != 2 || !loaders[0].WorkersKnown {
		t.Fatalf("LoadersUsing: %+v", loaders)
	}
	g := ix.Generation(data)
	// A change others cannot see: a comment.
	writeTree(t, root, map[string]string{"train.py": "# a comment\nfrom torch.utils.data import DataLoader\nfrom data import D\n\nloader = DataLoader(D(), num_workers=2)\n"})
	ix.Refresh(train)
	// The DataLoader moved, but runs the same: nothing to re-analyse; the
	// offsets other files get are the new ones.
	if ix.Generation(data) != g {
		t.Error("moving train.py's DataLoader changed data.py's generation")
	}
	if l := ix.LoadersUsing(data)["D"]; len(l) != 1 || l[0].Line != 4 {
		t.Errorf("after the move: %+v", l)
	}
	g, own := ix.Generation(data), ix.Generation(train)
	writeTree(t, root, map[string]string{"train.py": "from torch.utils.data import DataLoader\nfrom data import D\n\nloader = DataLoader(D(), num_workers=0)\n"})
	ix.Refresh(train)
	if ix.Generation(data) == g || ix.Generation(train) != own {
		t.Errorf("generations after train.py changed: data %d -> %d, train %d -> %d", g, ix.Generation(data), own, ix.Generation(train))
	}
	if l := ix.LoadersUsing(data)["D"]; len(l) != 1 || l[0].Workers != 0 {
		t.Errorf("after the change: %+v", l)
	}
	os.Remove(train)
	ix.Refresh(train)
	if l := ix.LoadersUsing(data)["D"]; len(l) != 0 {
		t.Errorf("after train.py was deleted: %+v", l)
	}
}

// A file being opened is not read by a build of the index running at the
// same moment (its summary comes with the buffer's model), but an import
// that reaches it still reads it, and closing it puts the file on disk
// back in.
func TestBuildLeavesAFileBeingOpened(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"data.py":  "from torch.utils.data import Dataset\n\nclass D(Dataset):\n    pass\n",
		"train.py": "from torch.utils.data import DataLoader\nfrom data import D\n\nloader = DataLoader(D(), num_workers=2)\n",
	})
	data, train := filepath.Join(root, "data.py"), filepath.Join(root, "train.py")
	ix := workspace.NewIndex(root)
	ix.Opening(train)
	if _, err := ix.Build(context.Background(), ix.Files(), nil); err != nil {
		t.Fatal(err)
	}
	if l := ix.LoadersUsing(data)["D"]; len(l) != 0 {
		t.Errorf("the build read the file being opened: %+v", l)
	}
	reread := ix.Close(train)
	if reread == nil {
		t.Fatal("closing a file the index never had as a buffer left nothing to read")
	}
	reread()
	if l := ix.LoadersUsing(data)["D"]; len(l) != 1 || l[0].Path != train {
		t.Errorf("after closing it, the file on disk should count: %+v", l)
	}
	// Without Opening, the build reads it (the test above is not vacuous).
	ix = workspace.NewIndex(root)
	if _, err := ix.Build(context.Background(), ix.Files(), nil); err != nil {
		t.Fatal(err)
	}
	if l := ix.LoadersUsing(data)["D"]; len(l) != 1 {
		t.Errorf("a build without Opening: %+v", l)
	}
}

// Closing a buffer whose text is the file's keeps the summary its model
// gave: the file is not parsed again (closing fifty 10,000-line files took
// seconds). A buffer closed with changes it did not save gives way to the
// file on disk.
func TestClosingAnUnchangedBufferKeepsItsSummary(t *testing.T) {
	root := t.TempDir()
	onDisk := "from torch.utils.data import DataLoader\nfrom data import D\n\nloader = DataLoader(D(), num_workers=2)\n"
	writeTree(t, root, map[string]string{
		"data.py":  "from torch.utils.data import Dataset\n\nclass D(Dataset):\n    pass\n",
		"train.py": onDisk,
	})
	data, train := filepath.Join(root, "data.py"), filepath.Join(root, "train.py")
	ix := workspace.NewIndex(root)
	if _, err := ix.Build(context.Background(), ix.Files(), nil); err != nil {
		t.Fatal(err)
	}
	open := func(text string) {
		tree, err := pyast.Parse(context.Background(), []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		ix.SetOpen(semantic.NewModelFrom(nil, semantic.ModuleInfo{Path: train, Project: ix}, []byte(text), tree))
	}

	open(onDisk)
	parses := ix.Parses()
	if left := ix.Close(train); left != nil || ix.Parses() != parses {
		t.Error("closing a buffer that holds the file's text reads the file again")
	}
	if l := ix.LoadersUsing(data)["D"]; len(l) != 1 || l[0].Workers != 2 {
		t.Errorf("after closing the unchanged buffer: %+v", l)
	}

	open(strings.Replace(onDisk, "num_workers=2", "num_workers=0", 1))
	if l := ix.LoadersUsing(data)["D"]; len(l) != 1 || l[0].Workers != 0 {
		t.Errorf("the open buffer's DataLoader: %+v", l)
	}
	// The summary of the file on disk comes back (from the model the
	// build made of it, kept while the text is the same) once the file is
	// read again, which the caller runs off its locks.
	reread := ix.Close(train)
	if reread == nil {
		t.Fatal("closing a changed buffer left nothing to read")
	}
	if l := ix.LoadersUsing(data)["D"]; len(l) != 1 || l[0].Workers != 0 {
		t.Errorf("before the file is read again, the buffer's last summary stands: %+v", l)
	}
	reread()
	if l := ix.LoadersUsing(data)["D"]; len(l) != 1 || l[0].Workers != 2 {
		t.Errorf("after closing the changed buffer, the file on disk should count: %+v", l)
	}

	// Opened and analysed again while the file was being read: the new
	// buffer's summary stands.
	open(strings.Replace(onDisk, "num_workers=2", "num_workers=0", 1))
	ix.StoreFromDisk(train, []byte(onDisk))
	if l := ix.LoadersUsing(data)["D"]; len(l) != 1 || l[0].Workers != 0 {
		t.Errorf("a read of the file from disk replaced the summary of a buffer opened meanwhile: %+v", l)
	}
	// Being opened, not analysed yet: the file on disk still counts (the
	// buffer's first analysis reads its own file's summary).
	ix.Close(train)
	ix.Opening(train)
	ix.StoreFromDisk(train, []byte(onDisk))
	if l := ix.LoadersUsing(data)["D"]; len(l) != 1 || l[0].Workers != 2 {
		t.Errorf("a file being opened did not take its summary from disk: %+v", l)
	}
}

// An answer worked out while another file's summary changed is not kept
// as the new generation's: LoadersUsing and Resolve, asked again and
// again while the index is built, agree with a fresh index afterwards.
// (The server's workspace diagnostics once kept a file's finding without
// its DataLoader's workers for good: a pull analysed it while the build
// stored train.py.)
func TestAnswersFromBeforeAChangeAreNotKept(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"data.py":  "from torch.utils.data import Dataset\n\nclass D(Dataset):\n    pass\n",
		"train.py": "from torch.utils.data import DataLoader\nfrom data import D\n\nloader = DataLoader(D(), num_workers=2)\n",
		"other.py": "from torch.utils.data import DataLoader\nfrom data import D\n\nloader = DataLoader(D(), num_workers=3)\n",
	})
	data, train := filepath.Join(root, "data.py"), filepath.Join(root, "train.py")
	for range 300 {
		ix := workspace.NewIndex(root)
		stop := make(chan struct{})
		asked := make(chan struct{})
		go func() {
			defer close(asked)
			for {
				select {
				case <-stop:
					return
				default:
				}
				ix.LoadersUsing(data)
				ix.Resolve(train, "data.D")
			}
		}()
		if _, err := ix.Build(context.Background(), ix.Files(), nil); err != nil {
			t.Fatal(err)
		}
		close(stop)
		<-asked
		if l := ix.LoadersUsing(data)["D"]; len(l) != 2 {
			t.Fatalf("after the build, data.py's D runs in %d DataLoaders, want 2: %+v", len(l), l)
		}
	}
}

// The callers of a function are found in files no import from it reaches
// and that build no DataLoader (the build leaves them out), and their
// answer follows their changes.
func TestCallersUnderNoGrad(t *testing.T) {
	root := t.TempDir()
	helper := "import torch\n\ndef score(model, loader):\n    return [model(x) for x in loader]\n\ndef unused(model):\n    return model\n"
	writeTree(t, root, map[string]string{
		"pkg/__init__.py": "",
		"pkg/metrics.py":  helper,
		"pkg/api.py": "import torch\nfrom pkg.metrics import score\n\n@torch.inference_mode()\ndef predict(model, loader):\n" +
			"    return score(model, loader)\n",
		"pkg/cli.py": "import torch\nfrom pkg import metrics as m\n\ndef main(model, loader):\n    with torch.no_grad():\n" +
			"        return m.score(model, loader)\n",
		"pkg/other.py": "def score(x):\n    return x\n\nscore(1)\n", // its own score
	})
	ix := workspace.NewIndex(root)
	metrics, cli := filepath.Join(root, "pkg", "metrics.py"), filepath.Join(root, "pkg", "cli.py")
	if _, err := ix.Build(context.Background(), ix.Files(), nil); err != nil {
		t.Fatal(err)
	}
	if calls, under := ix.CallersUnderNoGrad(metrics, "score"); calls != 2 || !under {
		t.Fatalf("score: %d calls, under no-grad %v; want 2, true", calls, under)
	}
	if calls, _ := ix.CallersUnderNoGrad(metrics, "unused"); calls != 0 {
		t.Errorf("unused: %d calls", calls)
	}
	g := ix.Generation(metrics)
	writeTree(t, root, map[string]string{"pkg/cli.py": "import torch\nfrom pkg import metrics as m\n\ndef main(model, loader):\n" +
		"    return m.score(model, loader)\n"})
	ix.Refresh(cli)
	if ix.Generation(metrics) == g {
		t.Error("a caller leaving no_grad did not change metrics.py's generation")
	}
	if calls, under := ix.CallersUnderNoGrad(metrics, "score"); calls != 2 || under {
		t.Errorf("after cli.py changed: %d calls, under no-grad %v; want 2, false", calls, under)
	}
}

// The callers of a method are the calls of any method of its name in the
// project's other files, tests left out; a summary made before the name
// was first asked (as `check` records the files it analysed) is made
// again, and the answer follows the callers' changes.
func TestMethodCallersUnderNoGrad(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"pkg/__init__.py": "",
		"pkg/model.py": "import torch\n\nclass Net(torch.nn.Module):\n    def inference(self, loader):\n" +
			"        return [self.body(x) for x in loader]\n",
		"pkg/app.py": "import torch\n\nclass App:\n    def run(self, loader):\n        with torch.no_grad():\n" +
			"            return self.model.inference(loader)\n",
		"pkg/cli.py":          "import torch\n\n@torch.no_grad()\ndef main(net, loader):\n    return net.inference(loader)\n",
		"tests/test_model.py": "def test_inference(net):\n    assert net.inference([]) == []\n",
	})
	ix := workspace.NewIndex(root)
	model, cli := filepath.Join(root, "pkg", "model.py"), filepath.Join(root, "pkg", "cli.py")
	// cli.py summarised before anyone asks about inference: its summary
	// lists no calls of it yet.
	ix.Record(modelInIndex(t, ix, cli))
	if calls, under := ix.MethodCallersUnderNoGrad(model, "inference"); calls != 2 || !under {
		t.Fatalf("inference: %d calls, under no-grad %v; want 2 (the test's left out), true", calls, under)
	}
	if calls, _ := ix.MethodCallersUnderNoGrad(model, "train_step"); calls != 0 {
		t.Errorf("train_step: %d calls", calls)
	}
	// One stored after the scan, made before the question: made again.
	ix.StoreStale(cli)
	if calls, under := ix.MethodCallersUnderNoGrad(model, "inference"); calls != 2 || !under {
		t.Errorf("after a stale summary of cli.py: %d calls, under no-grad %v; want 2, true", calls, under)
	}
	g := ix.Generation(model)
	writeTree(t, root, map[string]string{"pkg/cli.py": "import torch\n\ndef main(net, loader):\n    return net.inference(loader)\n"})
	ix.Refresh(cli)
	if ix.Generation(model) == g {
		t.Error("a caller leaving no_grad did not change model.py's generation")
	}
	if calls, under := ix.MethodCallersUnderNoGrad(model, "inference"); calls != 2 || under {
		t.Errorf("after cli.py changed: %d calls, under no-grad %v; want 2, false", calls, under)
	}
}

// check walks a project's folder for the callers of a function, also the
// files it was not given; a folder no marker makes a project (a script in
// a home folder) is not walked.
func TestCallersOfFilesCheckWasNotGiven(t *testing.T) {
	files := map[string]string{
		"metrics.py": "import torch\n\ndef score(model, loader):\n    return [model(x) for x in loader]\n",
		"api.py":     "import torch\nfrom metrics import score\n\n@torch.no_grad()\ndef predict(model, loader):\n    return score(model, loader)\n",
	}
	for _, marked := range []bool{false, true} {
		root := t.TempDir()
		writeTree(t, root, files)
		if marked {
			writeTree(t, root, map[string]string{"pyproject.toml": "[project]\nname = \"p\"\n"})
		}
		metrics := filepath.Join(root, "metrics.py")
		calls, _ := workspace.ProjectsOf([]string{metrics}).CallersUnderNoGrad(metrics, "score")
		if want := map[bool]int{false: 0, true: 1}[marked]; calls != want {
			t.Errorf("with a project marker %v: %d calls found, want %d", marked, calls, want)
		}
	}
}

// In the background (the server's way), a question about callers whose
// scan has not run is answered at once as not known yet (calls -1), and
// the scan runs off the asking path. Once it has, the files whose answer
// has the rules report what they withheld are told, and their generation
// has moved on; those whose answer keeps it withheld are not (none is
// open, so none is told for the summaries the scans added). Later
// questions are answered from the scan, and so is one whose scan would
// read no file.
func TestCallersAnsweredInTheBackground(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"pyproject.toml": "[project]\nname = \"p\"\n",
		"metrics.py":     "import torch\n\ndef score(model, loader):\n    return [model(x) for x in loader]\n",
		"api.py":         "import torch\nfrom metrics import score\n\n@torch.no_grad()\ndef predict(model, loader):\n    return score(model, loader)\n",
		"model.py": "import torch\n\nclass Net(torch.nn.Module):\n    def inference(self, loader):\n" +
			"        return [self.body(x) for x in loader]\n",
		"app.py": "class App:\n    def run(self, loader):\n        return self.model.inference(loader)\n",
	})
	metrics, model := filepath.Join(root, "metrics.py"), filepath.Join(root, "model.py")
	projects := workspace.ProjectsOf([]string{metrics})
	told := make(chan []string, 8)
	projects.InBackground(func(paths []string) { told <- paths })
	modelBefore := projects.Generation(model)

	// score's one caller runs it under no-grad: withheld, and rightly.
	if calls, _ := projects.CallersUnderNoGrad(metrics, "score"); calls != -1 {
		t.Fatalf("score before its scan: %d calls, want -1 (not known yet)", calls)
	}
	// inference's caller runs it with autograd on: the finding is due.
	if calls, _ := projects.MethodCallersUnderNoGrad(model, "inference"); calls != -1 {
		t.Fatalf("inference before its scan: %d calls, want -1 (not known yet)", calls)
	}
	// One goroutine settles the questions in the order they came: by the
	// time model.py is told, score's answer is settled too.
	var toldPaths []string
	for !slices.Contains(toldPaths, model) {
		select {
		case paths := <-told:
			toldPaths = append(toldPaths, paths...)
		case <-time.After(time.Minute):
			t.Fatalf("not told of model.py; told %v", toldPaths)
		}
	}
	if slices.Contains(toldPaths, metrics) {
		t.Errorf("told of metrics.py, whose answer keeps its finding withheld: %v", toldPaths)
	}
	if projects.Generation(model) == modelBefore {
		t.Error("model.py's generation did not move on when its answer became known")
	}
	if calls, under := projects.CallersUnderNoGrad(metrics, "score"); calls != 1 || !under {
		t.Errorf("score after its scan: %d calls, under no-grad %v; want 1, true", calls, under)
	}
	if calls, under := projects.MethodCallersUnderNoGrad(model, "inference"); calls != 1 || under {
		t.Errorf("inference after its scan: %d calls, under no-grad %v; want 1, false", calls, under)
	}
	// Every file of the folder has a summary now: a new function's scan
	// would read nothing, so it is answered at once.
	if calls, _ := projects.CallersUnderNoGrad(metrics, "unused"); calls != 0 {
		t.Errorf("a function no file calls, every file summarised: %d calls, want 0 at once", calls)
	}
	// A method no file calls: the summaries list the calls of the methods
	// asked before it, so its scan reads the files again. It adds no
	// summary, so only the settled answer moves model.py's generation on.
	modelBefore = projects.Generation(model)
	if calls, _ := projects.MethodCallersUnderNoGrad(model, "uncalled"); calls != -1 {
		t.Fatalf("uncalled before its scan: %d calls, want -1", calls)
	}
	select {
	case paths := <-told:
		if !slices.Equal(paths, []string{model}) {
			t.Errorf("told %v, want model.py", paths)
		}
	case <-time.After(time.Minute):
		t.Fatal("not told of model.py after the scan for uncalled")
	}
	if projects.Generation(model) == modelBefore {
		t.Error("model.py's generation did not move on when uncalled's answer became known")
	}
	if calls, _ := projects.MethodCallersUnderNoGrad(model, "uncalled"); calls != 0 {
		t.Errorf("uncalled after its scan: %d calls, want 0", calls)
	}
}

// Projects.For answers with the index of the nearest folder upward that
// has one, for absolute and relative paths, and forgets a removed one.
func TestProjectsForTheInnermostFolder(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"outer/inner/a.py": "", "outer/b.py": "", "outer/innerlike/c.py": ""})
	var projects workspace.Projects
	outer := projects.Add(workspace.NewIndex(filepath.Join(root, "outer")))
	inner := projects.Add(workspace.NewIndex(filepath.Join(root, "outer", "inner")))
	t.Chdir(root)
	for _, c := range []struct {
		path string
		want *workspace.Index
	}{
		{filepath.Join(root, "outer", "inner", "a.py"), inner},
		{filepath.Join("outer", "inner", "a.py"), inner},
		{"./outer/inner/../b.py", outer},
		{filepath.Join(root, "outer", "inner"), inner},
		{filepath.Join("outer", "innerlike", "c.py"), outer}, // a sibling whose name starts alike
		{filepath.Join(root, "elsewhere.py"), nil},
	} {
		if got := projects.For(c.path); got != c.want {
			t.Errorf("For(%q) = %v, want %v", c.path, got, c.want)
		}
	}
	if !inner.Contains("outer/inner/a.py") || inner.Contains("outer/innerlike/c.py") || inner.Contains("outer/b.py") {
		t.Errorf("inner.Contains is wrong about a.py, c.py or b.py")
	}
	// The file system's root holds every file (its name ends in the
	// separator already).
	var everywhere workspace.Projects
	top := everywhere.Add(workspace.NewIndex(string(filepath.Separator)))
	if !top.Contains(filepath.Join(root, "elsewhere.py")) || everywhere.For("outer/b.py") != top {
		t.Errorf("an index of the file system's root does not hold every file")
	}
	projects.Remove(filepath.Join(root, "outer", "inner"))
	if got := projects.For("outer/inner/a.py"); got != outer {
		t.Errorf("after removing the inner folder's index, For(a.py) = %v, want the outer one", got)
	}
}

// The modules a file may import, as ImportOrder reads them from its
// import statements: every package on the way, the names a `from` import
// takes (each may be a module), relative imports from a module and from a
// package's __init__.py, a parenthesised list over lines, and nothing
// above the roots.
func TestImportedModules(t *testing.T) {
	root := t.TempDir()
	src := "import os, torch.nn as nn\nfrom a.b import c, d as e  # note\nfrom . import f\nfrom ..g import (\n    h,\n    i,\n)\n" +
		"if x:\n    import j.k\nfrom .... import nope\nfrom m import *\n"
	path := filepath.Join(root, "x.py")
	writeTree(t, root, map[string]string{"x.py": src})
	for _, c := range []struct {
		module string
		pkg    bool
		want   string
	}{
		{"p.q.x", false, "os torch.nn torch a.b a a.b.c a.b.d p.q p p.q.f p.g p p.g.h p.g.i j.k j m"},
		{"p.q", true, "os torch.nn torch a.b a a.b.c a.b.d p.q p p.q.f p.g p p.g.h p.g.i j.k j m"},
		{"x", false, "os torch.nn torch a.b a a.b.c a.b.d j.k j m"},
	} {
		if got := strings.Join(workspace.ImportedModules(path, c.module, c.pkg), " "); got != c.want {
			t.Errorf("from module %s (package %v):\ngot  %s\nwant %s", c.module, c.pkg, got, c.want)
		}
	}
}

// The facts of functions of five modules, asked in the order of the
// asking file's code (each module's f, then each module's g), parse each
// module once: the models kept for them are not evicted by the next
// module's.
func TestFactsOfManyModulesParseEachOnce(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{}
	main := "import torch\n"
	for i := range 5 {
		files[fmt.Sprintf("m%d.py", i)] = "def f(x):\n    return x.sum()\n\n\ndef g(x):\n    return x.mean()\n"
		main += fmt.Sprintf("import m%d\n", i)
	}
	files["main.py"] = main
	writeTree(t, root, files)
	ix := workspace.NewIndex(root)
	mainPath := filepath.Join(root, "main.py")
	parses := ix.Parses()
	for _, name := range []string{"f", "g"} {
		for i := range 5 {
			if _, ok := ix.FunctionFacts(mainPath, fmt.Sprintf("m%d.%s", i, name)); !ok {
				t.Fatalf("no facts of m%d.%s", i, name)
			}
		}
	}
	if n := ix.Parses() - parses; n != 5 {
		t.Errorf("asking parsed %d files, want each of the five modules once", n)
	}
}

// padded is a module's text followed by functions up to 200 KB: three
// such modules are more than the index keeps models of (see cachedSource).
func padded(text string) string {
	for k := 0; len(text) < 200<<10; k++ {
		text += fmt.Sprintf("\n\ndef pad_%d(x):\n    return x + %d\n", k, k)
	}
	return text
}

// The models kept are bounded by their sources' size too: of three
// modules of 200 KB, the first is parsed again when asked after the other
// two (three fit the count, not the size).
func TestModelsKeptAreBoundedBySize(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{"main.py": "import a\nimport b\nimport c\n"}
	for _, m := range []string{"a", "b", "c"} {
		files[m+".py"] = padded("def f(x):\n    return x.sum()\n")
	}
	writeTree(t, root, files)
	ix := workspace.NewIndex(root)
	mainPath := filepath.Join(root, "main.py")
	parses := ix.Parses()
	for _, q := range []string{"a.f", "b.f", "c.f"} {
		if _, ok := ix.FunctionFacts(mainPath, q); !ok {
			t.Fatalf("no facts of %s", q)
		}
	}
	if _, ok := ix.FunctionFacts(mainPath, "a.pad_1"); !ok {
		t.Fatal("no facts of a.pad_1")
	}
	if n := ix.Parses() - parses; n != 4 {
		t.Errorf("asking parsed %d files, want 4: a.py again, its model gone for the size", n)
	}
}

// AskProjectFacts asks for the functions of one module one after
// another, whatever the order of the calls: of three modules of 200 KB,
// which the models kept cannot hold together (see
// TestModelsKeptAreBoundedBySize), each is parsed once although the file
// calls into them in turn (a, b, c, a, b, c): six parses in the calls'
// order.
func TestAskProjectFactsReadsEachModuleOnce(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{}
	main := "import torch\nimport a\nimport b\nimport c\n\n\ndef run(x):\n"
	for _, name := range []string{"f", "g"} {
		for _, m := range []string{"a", "b", "c"} {
			main += fmt.Sprintf("    x = %s.%s(x)\n", m, name)
		}
	}
	files["main.py"] = main + "    return x\n"
	for _, m := range []string{"a", "b", "c"} {
		files[m+".py"] = padded("def f(x):\n    return x.sum()\n\n\ndef g(x):\n    return x.mean()\n")
	}
	writeTree(t, root, files)
	mainPath := filepath.Join(root, "main.py")
	ix := workspace.NewIndex(root)
	f := modelInIndex(t, ix, mainPath)
	parses := ix.Parses()
	f.AskProjectFacts()
	if n := ix.Parses() - parses; n != 3 {
		t.Errorf("asking parsed %d files, want each of the three modules once", n)
	}
	for _, q := range []string{"a.f", "a.g", "b.f", "b.g", "c.f", "c.g"} {
		if _, ok := ix.FunctionFacts(mainPath, q); !ok {
			t.Errorf("no facts of %s", q)
		}
	}
}

// A function of the project with no facts (a method of a class that is
// no model) is known to have none: asked again, its file is not parsed
// again once its model is gone, as it is not for one with facts; until
// the file changes.
func TestFunctionsWithoutFactsAreNotAskedTwice(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"callbacks.py": "class Handler:\n    def on_step(self, state):\n        return state\n\n\ndef helper(x):\n    return x.sum()\n",
		"main.py":      "from callbacks import Handler, helper\n",
	})
	ix := workspace.NewIndex(root)
	main := filepath.Join(root, "main.py")
	if _, ok := ix.FunctionFacts(main, "callbacks.Handler.on_step"); ok {
		t.Fatal("facts of a method of a class that is no model")
	}
	if _, ok := ix.FunctionFacts(main, "callbacks.helper"); !ok {
		t.Fatal("no facts of callbacks.helper")
	}
	ix.ForgetModels()
	parses := ix.Parses()
	for _, q := range []string{"callbacks.Handler.on_step", "callbacks.helper"} {
		facts, ok := ix.FunctionFacts(main, q)
		if want := q == "callbacks.helper"; ok != want {
			t.Errorf("%s asked again: ok %v, want %v (%+v)", q, ok, want, facts)
		}
	}
	if n := ix.Parses() - parses; n != 0 {
		t.Errorf("asking again parsed %d files, want none", n)
	}
	// The file changed: the class is a model now, and its method has facts.
	callbacks := filepath.Join(root, "callbacks.py")
	text := "import torch\n\n\nclass Handler(torch.nn.Module):\n    def on_step(self, state):\n        return self(state)\n"
	if err := os.WriteFile(callbacks, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ix.Refresh(callbacks)
	if _, ok := ix.FunctionFacts(main, "callbacks.Handler.on_step"); !ok {
		t.Error("no facts of on_step after its class became a model")
	}
}

// modelInIndex reads and parses the file at path into a model placed in
// ix's project, as an open buffer's is.
func modelInIndex(t *testing.T, ix *workspace.Index, path string) *semantic.File {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := pyast.ParseForEditing(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	return semantic.NewModelFrom(nil, semantic.ModuleInfo{Path: path, Project: ix}, src, tree)
}

// The models of other files, kept for the open buffers' questions, go
// when the project's last buffer closes, not before.
func TestClosingTheLastBufferDropsTheModelsKept(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"utils.py": "def helper(x):\n    return x.sum()\n",
		"main.py":  "from utils import helper\n\n\ndef run(x):\n    return helper(x)\n",
		"other.py": "from utils import helper\n",
	})
	ix := workspace.NewIndex(root)
	open := func(name string) string {
		path := filepath.Join(root, name)
		ix.SetOpen(modelInIndex(t, ix, path))
		return path
	}
	main, other := open("main.py"), open("other.py")
	if _, ok := ix.FunctionFacts(main, "utils.helper"); !ok {
		t.Fatal("no facts of utils.helper")
	}
	if ix.ModelsKept() == 0 {
		t.Fatal("utils.py's model was not kept")
	}
	ix.Close(main)
	if ix.ModelsKept() == 0 {
		t.Error("the models went while other.py is open")
	}
	ix.Close(other)
	if n := ix.ModelsKept(); n != 0 {
		t.Errorf("%d models kept after the last buffer closed", n)
	}
}

// AskProjectFacts asks the index for the facts of every call of a file to
// a function or a model's method of another file of the project, which
// reads those files once (utils.py and nets.py, not torch); the index
// keeps what it found, so the questions a later version's judgement asks
// read no file again.
func TestAskProjectFactsReadsTheFilesOnce(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"utils.py": "def helper(x):\n    return x.sum()\n",
		"nets.py":  "import torch\n\nclass Net(torch.nn.Module):\n    def objective(self, x):\n        return self(x).mean()\n",
		"main.py": "import torch\nfrom utils import helper\nfrom nets import Net\n\n\nclass Runner:\n" +
			"    def __init__(self):\n        self.net = Net()\n\n" +
			"    def total(self, xs):\n        return [helper(x) for x in xs]\n\n" +
			"    def score(self, x):\n        return self.net.objective(torch.ones(2))\n",
	})
	main := filepath.Join(root, "main.py")
	ix := workspace.NewIndex(root)
	if _, err := ix.Build(context.Background(), ix.Files(), nil); err != nil {
		t.Fatal(err)
	}
	f := modelInIndex(t, ix, main)
	parses := ix.Parses()
	f.AskProjectFacts()
	if n := ix.Parses() - parses; n != 2 {
		t.Errorf("asking read %d files, want utils.py and nets.py", n)
	}
	parses = ix.Parses()
	for _, q := range []string{"utils.helper", "nets.Net.objective"} {
		if _, ok := ix.FunctionFacts(main, q); !ok {
			t.Errorf("no facts of %s", q)
		}
	}
	f.AskProjectFacts()
	if n := ix.Parses() - parses; n != 0 {
		t.Errorf("asking again read %d files, want none", n)
	}
}

// An index that keeps every fact (the server's) answers every question
// about the functions of a file it indexed without parsing it again, and
// answers what an index asking the file's model would: the facts of
// top-level functions (all false ones too), of a model's methods, its own
// and those it inherits from a class of its file, of a meter's update,
// and none for a plain class's method or a name the file lacks.
func TestEveryFactKeptAnswersWithoutParsing(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"models.py": "import torch\n\n\nclass Base(torch.nn.Module):\n    def shared(self, x):\n        return self.layer(x)\n\n\n" +
			"class Net(Base):\n    def forward(self, x):\n        return x * 2\n\n\n" +
			"class Meter:\n    def update(self, value):\n        self.total += value\n\n    def reset(self):\n        self.total = 0\n\n\n" +
			"def train_epoch(model, loader, opt):\n    for x in loader:\n        loss = model(x).sum()\n        loss.backward()\n        opt.step()\n    return loss\n\n\n" +
			"def name_of(obj):\n    def inner():\n        return 1\n    return type(obj).__name__\n",
		"main.py": "from models import Net, Meter, train_epoch, name_of\n",
	})
	files := []string{filepath.Join(root, "main.py"), filepath.Join(root, "models.py")}
	eager := workspace.NewIndex(root)
	eager.KeepEveryFact()
	if _, err := eager.Build(context.Background(), files, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := eager.IndexRest(context.Background(), files, 1<<20, nil); err != nil {
		t.Fatal(err)
	}
	eager.ForgetModels()
	lazy := workspace.NewIndex(root)
	main := files[0]
	parses := eager.Parses()
	names := []string{
		"models.train_epoch", "models.name_of", "models.Net.forward", "models.Net.shared", "models.Base.shared",
		"models.Meter.update", "models.Meter.reset", "models.inner", "models.Net.missing", "models.missing",
	}
	withFacts := 0
	for _, q := range names {
		got, gotOK := eager.FunctionFacts(main, q)
		want, wantOK := lazy.FunctionFacts(main, q)
		if got != want || gotOK != wantOK {
			t.Errorf("%s: %+v %v, the model says %+v %v", q, got, gotOK, want, wantOK)
		}
		if wantOK {
			withFacts++
		}
	}
	if n := eager.Parses() - parses; n != 0 {
		t.Errorf("the questions parsed %d files, want none", n)
	}
	if lazy.Parses() == 0 || withFacts != 6 {
		t.Errorf("the index asking the models parsed %d files and found %d functions with facts, want some and 6", lazy.Parses(), withFacts)
	}
	if facts, _ := eager.FunctionFacts(main, "models.train_epoch"); !facts.TrainsInLoop {
		t.Errorf("train_epoch: %+v, want TrainsInLoop", facts)
	}
}

// IndexRest reads files until it has read its budget of source, and
// stops there without an error: the rest is read when asked for.
func TestIndexRestStopsAtItsBudget(t *testing.T) {
	root := t.TempDir()
	tree := map[string]string{}
	var files []string
	for i := range 6 {
		name := fmt.Sprintf("m%d.py", i)
		tree[name] = fmt.Sprintf("def helper%d(x):\n    return x.sum()\n", i) + strings.Repeat("# padding\n", 10)
		files = append(files, filepath.Join(root, name))
	}
	writeTree(t, root, tree)
	size := int64(len(tree["m0.py"]))
	// Two files and a half: the third one read is over it, and neither it
	// nor any after it is parsed.
	for _, c := range []struct {
		budget int64
		parsed int64
	}{{2*size + size/2, 2}, {6 * size, 6}} {
		ix := workspace.NewIndex(root)
		ix.KeepEveryFact()
		done, err := ix.IndexRest(context.Background(), files, c.budget, nil)
		if err != nil {
			t.Fatalf("budget %d: %v", c.budget, err)
		}
		if parses := ix.Parses(); parses != c.parsed || c.parsed == 6 && done != 6 || c.parsed < 6 && done == 6 {
			t.Errorf("budget %d bytes of files of %d: went through %d files and parsed %d, want %d parsed", c.budget, size, done, parses, c.parsed)
		}
	}
}

// A large file the indexing is parsing is left when a buffer is opened
// (Yield), and read again, whole, once the progress callback returns; at
// most maxYields times, after which it is read through. A small file is
// not interrupted, and a file read again counts once against the budget.
// Yield is called all along here, as if buffers were opened one after
// another.
func TestYieldLeavesALargeFileForLater(t *testing.T) {
	root := t.TempDir()
	var large strings.Builder
	for i := 0; large.Len() < 1<<20; i++ {
		fmt.Fprintf(&large, "def helper%d(x):\n    y = x * 2\n    return y.sum()\n\n\n", i)
	}
	writeTree(t, root, map[string]string{"large.py": large.String(), "small.py": "def f(x):\n    return x.sum()\n"})
	files := []string{filepath.Join(root, "large.py"), filepath.Join(root, "small.py")}
	ix := workspace.NewIndex(root)
	ix.KeepEveryFact()
	stop := make(chan struct{})
	yielding := make(chan struct{})
	go func() {
		defer close(yielding)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Microsecond) {
			select {
			case <-stop:
				return
			default:
				ix.Yield()
			}
		}
	}()
	var mu sync.Mutex // the workers report
	var reports []int
	// A budget of the two files: a read done again counts once.
	budget := int64(large.Len() + 64)
	done, err := ix.IndexRest(context.Background(), files, budget, func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		reports = append(reports, done)
	})
	close(stop)
	<-yielding
	if err != nil || done != 2 {
		t.Fatalf("went through %d files: %v", done, err)
	}
	for _, f := range files {
		if !ix.EveryFactKept(f) {
			t.Errorf("%s was not indexed", filepath.Base(f))
		}
	}
	// Each interrupted read reports the files done so far again, then the
	// file is read once more.
	again := len(reports) - done
	if again < 1 || again > 3 {
		t.Errorf("the large file was read again %d times; want 1 to 3", again)
	}
	if parses := ix.Parses(); parses != int64(again+2) {
		t.Errorf("%d parses for %d interrupted reads of the large file and one of the small one", parses, again)
	}
}

// A buffer closed as it is on disk keeps its summary, which then gets
// every function's facts from the buffer's model: a file opened later
// asks about its functions without parsing it. One closed with changes
// that were not saved is read from disk again, with every fact too.
func TestClosingABufferKeepsEveryFact(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"steps.py": "def train_step(model, opt, x):\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n    return loss\n\n\n" +
			"def shape_of(x):\n    return x.shape\n",
		"main.py": "from steps import train_step, shape_of\n",
	})
	ix := workspace.NewIndex(root)
	ix.KeepEveryFact()
	steps, main := filepath.Join(root, "steps.py"), filepath.Join(root, "main.py")
	awaitEveryFact := func(when string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ix.EveryFactKept(steps); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the summary never got every fact", when)
			}
		}
	}
	ix.SetOpen(modelInIndex(t, ix, steps))
	gather := ix.Close(steps)
	if gather == nil {
		t.Fatal("closing a buffer as it is on disk left its facts ungathered")
	}
	if ix.EveryFactKept(steps) {
		t.Fatal("the facts were gathered on the caller's path")
	}
	parsed := ix.Parses()
	gather()
	if ix.Parses() != parsed {
		t.Error("the facts of a buffer closed as it is on disk were gathered from a parse of the file, not from its model")
	}
	awaitEveryFact("closed as on disk")
	edited := modelInIndex(t, ix, steps)
	ix.SetOpen(edited)
	// What is on disk is not the buffer: a function more.
	if err := os.WriteFile(steps, append(slices.Clone(edited.Source()), "\n\ndef extra(x):\n    return x\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	reread := ix.Close(steps)
	if reread == nil {
		t.Fatal("closing a changed buffer left nothing to read")
	}
	parsed = ix.Parses()
	reread()
	if ix.Parses() == parsed {
		t.Error("a buffer closed with changes was not read from disk again")
	}
	awaitEveryFact("closed with changes")
	ix.ForgetModels()
	parses := ix.Parses()
	facts, ok := ix.FunctionFacts(main, "steps.train_step")
	if !ok || !facts.Trains || !facts.ReturnsGraph {
		t.Errorf("train_step: %+v %v", facts, ok)
	}
	for _, name := range []string{"steps.shape_of", "steps.extra"} {
		if _, ok := ix.FunctionFacts(main, name); !ok {
			t.Errorf("no facts of %s", name)
		}
	}
	if n := ix.Parses() - parses; n != 0 {
		t.Errorf("asking about a closed buffer's functions parsed %d files", n)
	}
}
