package analysis

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// Settings decide which rules run on which file, how loud they are and
// which fixes apply. They come from `[tool.vramlint]` in pyproject.toml,
// then the command line or the editor on top.
type Settings struct {
	// Source is the pyproject.toml the settings came from ("" for defaults)
	// and Root its folder: relative patterns are relative to Root.
	Source string
	Root   string

	Select         []string // codes or prefixes; nil selects every rule
	ExtendSelect   []string
	Ignore         []string
	PerFileIgnores map[string][]string // glob -> codes or prefixes
	Exclude        []string            // globs of files not to check
	Severity       map[string]Severity // code or prefix -> severity
	UnsafeFixes    bool
}

// KnownCodes, when set, lists the rule codes settings may name; selectors
// that match none of them are configuration errors. The rules package sets
// it at init.
var KnownCodes []string

// Enabled reports whether the rule code runs on the file at path. The most
// specific selector wins (ruff's rule): with select = ["GPU0"] and ignore =
// ["GPU005"], GPU005 is off; with select = ["GPU005"] and ignore = ["GPU0"]
// it is on. At equal specificity ignore wins.
func (s *Settings) Enabled(code, path string) bool {
	selectors := s.Select
	if selectors == nil {
		selectors = []string{"ALL"}
	}
	best, on := -1, false
	consider := func(list []string, enable bool) {
		for _, sel := range list {
			if n := selectorMatch(sel, code); n > best || n == best && n >= 0 && !enable {
				best, on = n, enable
			}
		}
	}
	consider(selectors, true)
	consider(s.ExtendSelect, true)
	consider(s.Ignore, false)
	if on {
		rel := s.relative(path)
		for glob, codes := range s.PerFileIgnores {
			if MatchGlob(glob, rel) {
				for _, sel := range codes {
					if selectorMatch(sel, code) >= 0 {
						return false
					}
				}
			}
		}
	}
	return on
}

// Excluded reports whether path matches an exclude pattern.
func (s *Settings) Excluded(path string) bool {
	rel := s.relative(path)
	for _, glob := range s.Exclude {
		if MatchGlob(glob, rel) {
			return true
		}
	}
	return false
}

func (s *Settings) relative(path string) string {
	if s.Root != "" {
		if abs, err := filepath.Abs(path); err == nil {
			if rel, err := filepath.Rel(s.Root, abs); err == nil && !strings.HasPrefix(rel, "..") {
				return filepath.ToSlash(rel)
			}
		}
	}
	return filepath.ToSlash(path)
}

// severity decides a diagnostic's severity: configuration first (the most
// specific selector), then what the rule reported, then its default.
func (s *Settings) severity(rule *Rule, reported Severity) Severity {
	best, sev := -1, SeverityDefault
	for sel, level := range s.Severity {
		if n := selectorMatch(sel, rule.Code); n > best {
			best, sev = n, level
		}
	}
	switch {
	case sev != SeverityDefault:
		return sev
	case reported != SeverityDefault:
		return reported
	}
	return rule.DefaultSeverity
}

// selectorMatch returns how specific sel is when it selects code (its
// length; ALL is 0), or -1 when it does not.
func selectorMatch(sel, code string) int {
	sel = strings.ToUpper(strings.TrimSpace(sel))
	switch {
	case sel == "ALL":
		return 0
	case sel != "" && strings.HasPrefix(code, sel):
		return len(sel)
	}
	return -1
}

// ConfigError is a configuration file that could not be used. Linting goes
// on with the default settings.
type ConfigError struct {
	File string
	Key  string // the offending key, "" for a file that does not parse
	Err  error
}

func (e *ConfigError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("%s: [tool.vramlint] %s: %v", e.File, e.Key, e.Err)
}

// FindSettings loads the settings for files in dir: the nearest
// pyproject.toml upward that has a [tool.vramlint] table. It returns
// defaults (rooted at dir) when there is none; on a ConfigError it returns
// the defaults too, so linting continues.
func FindSettings(dir string) (*Settings, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return &Settings{Root: dir}, err
	}
	for d := abs; ; d = filepath.Dir(d) {
		candidate := filepath.Join(d, "pyproject.toml")
		if data, err := os.ReadFile(candidate); err == nil {
			s, found, err := ParseSettings(candidate, data)
			if err != nil {
				return &Settings{Root: abs}, err
			}
			if found {
				return s, nil
			}
		}
		if filepath.Dir(d) == d {
			return &Settings{Root: abs}, nil
		}
	}
}

// ParseSettings reads [tool.vramlint] from the pyproject.toml text data
// found at file. found is false when the file has no such table.
func ParseSettings(file string, data []byte) (s *Settings, found bool, err error) {
	s = &Settings{Source: file, Root: filepath.Dir(file)}
	var doc struct {
		Tool map[string]toml.Primitive `toml:"tool"`
	}
	md, err := toml.Decode(string(data), &doc)
	if err != nil {
		return nil, false, &ConfigError{File: file, Err: fmt.Errorf("not valid TOML: %w", err)}
	}
	prim, ok := doc.Tool["vramlint"]
	if !ok {
		return s, false, nil
	}
	var table map[string]any
	if err := md.PrimitiveDecode(prim, &table); err != nil {
		return nil, true, &ConfigError{File: file, Err: fmt.Errorf("[tool.vramlint] is not a table: %w", err)}
	}
	if err := s.apply(table); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			ce.File = file
		}
		return nil, true, err
	}
	return s, true, nil
}

// Overrides are settings given on the command line or by the editor; a nil
// field leaves the file's setting alone.
type Overrides map[string]any

// WithOverrides returns a copy of s with o applied over it, in the same
// keys and shapes as [tool.vramlint].
func (s *Settings) WithOverrides(o Overrides) (*Settings, error) {
	c := *s
	if err := c.apply(o); err != nil {
		return s, err
	}
	return &c, nil
}

// apply sets the keys of a [tool.vramlint]-shaped table, checking each.
func (s *Settings) apply(table map[string]any) error {
	keys := make([]string, 0, len(table))
	for k := range table {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		v := table[key]
		fail := func(format string, args ...any) error {
			return &ConfigError{Key: key, Err: fmt.Errorf(format, args...)}
		}
		switch key {
		case "select", "ignore", "extend-select", "exclude":
			list, err := stringList(v)
			if err != nil {
				return fail("%v", err)
			}
			if key != "exclude" {
				if err := checkSelectors(list); err != nil {
					return fail("%v", err)
				}
			}
			switch key {
			case "select":
				s.Select = list
			case "ignore":
				s.Ignore = list
			case "extend-select":
				s.ExtendSelect = list
			default:
				s.Exclude = list
			}
		case "per-file-ignores":
			m, ok := v.(map[string]any)
			if !ok {
				return fail("must be a table of glob = [codes], got %T", v)
			}
			s.PerFileIgnores = map[string][]string{}
			for glob, codes := range m {
				list, err := stringList(codes)
				if err == nil {
					err = checkSelectors(list)
				}
				if err != nil {
					return fail("%q: %v", glob, err)
				}
				s.PerFileIgnores[glob] = list
			}
		case "severity":
			m, ok := v.(map[string]any)
			if !ok {
				return fail("must be a table of code = \"error\"|\"warning\"|\"info\"|\"hint\", got %T", v)
			}
			s.Severity = map[string]Severity{}
			for code, level := range m {
				str, ok := level.(string)
				if !ok {
					return fail("%s: must be a string", code)
				}
				sev, err := ParseSeverity(str)
				if err == nil {
					err = checkSelectors([]string{code})
				}
				if err != nil {
					return fail("%s: %v", code, err)
				}
				s.Severity[strings.ToUpper(code)] = sev
			}
		case "unsafe-fixes":
			b, ok := v.(bool)
			if !ok {
				return fail("must be true or false, got %v", v)
			}
			s.UnsafeFixes = b
		default:
			return fail("unknown key (known: select, extend-select, ignore, per-file-ignores, exclude, severity, unsafe-fixes)")
		}
	}
	return nil
}

func stringList(v any) ([]string, error) {
	switch v := v.(type) {
	case []string:
		return v, nil
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			str, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("must be a list of strings, found %v", e)
			}
			out = append(out, str)
		}
		return out, nil
	}
	return nil, fmt.Errorf("must be a list of strings, got %v", v)
}

// checkSelectors rejects selectors that select no known rule (a typo would
// otherwise silently turn linting off).
func checkSelectors(list []string) error {
	if KnownCodes == nil {
		return nil
	}
	for _, sel := range list {
		matched := false
		for _, code := range KnownCodes {
			if selectorMatch(sel, code) >= 0 {
				matched = true
				break
			}
		}
		if !matched {
			return fmt.Errorf("%q matches no rule (run `vramlint rules` for the list)", sel)
		}
	}
	return nil
}
