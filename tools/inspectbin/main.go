// Command inspectbin checks release binaries before they ship: each file
// has the format and architecture its target names, a Linux binary is
// static (no interpreter, no shared libraries), a macOS binary loads only
// system libraries and, on arm64, carries a code signature (macOS kills
// unsigned arm64 programs), a Windows binary imports only system DLLs, and
// none is larger than -max-mb. A macOS binary must run on -macos-min (the
// version its wheel's platform tag promises). It prints one line per binary
// and exits 1 if any check fails.
//
// usage: inspectbin [-max-mb 15] [-macos-min 12.0] GOOS/GOARCH=FILE ...
package main

import (
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
)

func main() {
	maxMB := flag.Float64("max-mb", 15, "largest size allowed, in MiB")
	flag.StringVar(&macOSMin, "macos-min", "12.0", "oldest macOS the binaries must run on")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: inspectbin [-max-mb 15] [-macos-min 12.0] GOOS/GOARCH=FILE ...")
		os.Exit(2)
	}
	failed := false
	for _, arg := range flag.Args() {
		target, file, ok := strings.Cut(arg, "=")
		goos, goarch, ok2 := strings.Cut(target, "/")
		if !ok || !ok2 {
			fmt.Fprintf(os.Stderr, "inspectbin: %q is not GOOS/GOARCH=FILE\n", arg)
			os.Exit(2)
		}
		summary, problems := inspect(goos, goarch, file, *maxMB)
		status := "ok"
		if len(problems) > 0 {
			status, failed = "FAIL: "+strings.Join(problems, "; "), true
		}
		fmt.Printf("%s %s: %s: %s\n", target, file, summary, status)
	}
	if failed {
		os.Exit(1)
	}
}

// inspect describes one binary and lists what is wrong with it.
func inspect(goos, goarch, file string, maxMB float64) (summary string, problems []string) {
	st, err := os.Stat(file)
	if err != nil {
		return "missing", []string{err.Error()}
	}
	size := float64(st.Size()) / (1 << 20)
	if size > maxMB {
		problems = append(problems, fmt.Sprintf("%.1f MiB, over %.0f MiB", size, maxMB))
	}
	var libs []string
	var arch, minOS string
	switch goos {
	case "linux":
		f, err := elf.Open(file)
		if err != nil {
			return "not ELF", []string{err.Error()}
		}
		defer f.Close()
		arch = map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine]
		libs, _ = f.ImportedLibraries()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				problems = append(problems, "dynamically linked (has an interpreter)")
			}
		}
		if len(libs) > 0 {
			problems = append(problems, "needs shared libraries "+strings.Join(libs, ", "))
		}
	case "darwin":
		f, err := macho.Open(file)
		if err != nil {
			return "not Mach-O", []string{err.Error()}
		}
		defer f.Close()
		arch = map[macho.Cpu]string{macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64"}[f.Cpu]
		libs, _ = f.ImportedLibraries()
		for _, lib := range libs {
			if !strings.HasPrefix(lib, "/usr/lib/") && !strings.HasPrefix(lib, "/System/Library/Frameworks/") {
				problems = append(problems, "loads a non-system library "+lib)
			}
		}
		const lcCodeSignature = 0x1d
		signed := slices.ContainsFunc(f.Loads, func(l macho.Load) bool {
			raw := l.Raw()
			return len(raw) >= 4 && f.ByteOrder.Uint32(raw) == lcCodeSignature
		})
		if goarch == "arm64" && !signed {
			problems = append(problems, "no code signature (macOS refuses to run unsigned arm64 programs)")
		}
		minOS = macOSMinimum(f)
		if minOS == "" {
			problems = append(problems, "no LC_BUILD_VERSION: the oldest macOS it runs on is unknown")
		} else if versionLess(macOSMin, minOS) {
			problems = append(problems, "needs macOS "+minOS+", newer than "+macOSMin)
		}
	case "windows":
		f, err := pe.Open(file)
		if err != nil {
			return "not PE", []string{err.Error()}
		}
		defer f.Close()
		arch = map[uint16]string{pe.IMAGE_FILE_MACHINE_AMD64: "amd64", pe.IMAGE_FILE_MACHINE_ARM64: "arm64"}[f.Machine]
		// debug/pe's ImportedLibraries returns nothing; the DLLs are the
		// second half of each imported symbol ("Sleep:kernel32.dll").
		syms, err := f.ImportedSymbols()
		if err != nil {
			problems = append(problems, "import table: "+err.Error())
		}
		for _, sym := range syms {
			if _, dll, ok := strings.Cut(sym, ":"); ok && !slices.Contains(libs, strings.ToLower(dll)) {
				libs = append(libs, strings.ToLower(dll))
			}
		}
		if len(libs) == 0 {
			problems = append(problems, "imports no DLL at all: the import table was not read")
		}
		for _, lib := range libs {
			if !windowsSystemDLL(lib) {
				problems = append(problems, "imports a non-system DLL "+lib)
			}
		}
	default:
		return "unknown target", []string{"no checks for GOOS " + goos}
	}
	if arch != goarch {
		problems = append(problems, fmt.Sprintf("architecture %q, want %s", arch, goarch))
	}
	summary = fmt.Sprintf("%s/%s, %.1f MiB", goos, arch, size)
	if minOS != "" {
		summary += ", macOS " + minOS + "+"
	}
	if len(libs) > 0 {
		summary += ", loads " + strings.Join(libs, " ")
	} else if goos == "linux" {
		summary += ", static"
	}
	return summary, problems
}

// macOSMin is the -macos-min flag.
var macOSMin string

// macOSMinimum reads the oldest macOS version from LC_BUILD_VERSION
// (debug/macho does not decode it): platform, then minos as xxxx.yy.zz.
func macOSMinimum(f *macho.File) string {
	const lcBuildVersion = 0x32
	for _, l := range f.Loads {
		raw := l.Raw()
		if len(raw) >= 16 && f.ByteOrder.Uint32(raw) == lcBuildVersion {
			minos := f.ByteOrder.Uint32(raw[12:])
			return fmt.Sprintf("%d.%d", minos>>16, (minos>>8)&0xff)
		}
	}
	return ""
}

// versionLess compares two "major.minor" versions.
func versionLess(a, b string) bool {
	var a1, a2, b1, b2 int
	fmt.Sscanf(a, "%d.%d", &a1, &a2)
	fmt.Sscanf(b, "%d.%d", &b1, &b2)
	return a1 < b1 || (a1 == b1 && a2 < b2)
}

// windowsSystemDLL reports whether a DLL ships with every Windows.
func windowsSystemDLL(name string) bool {
	name = strings.ToLower(name)
	if strings.HasPrefix(name, "api-ms-win-") {
		return true
	}
	return slices.Contains([]string{
		"kernel32.dll", "ntdll.dll", "msvcrt.dll", "ucrtbase.dll", "advapi32.dll", "ws2_32.dll",
		"user32.dll", "shell32.dll", "winmm.dll", "bcrypt.dll", "crypt32.dll", "secur32.dll",
		"userenv.dll", "iphlpapi.dll", "dnsapi.dll", "mswsock.dll", "powrprof.dll", "ole32.dll",
	}, name)
}
