package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
)

// LoadOptions are the inputs of Load. The zero value loads from the
// process environment and the default file search, with no flags.
type LoadOptions struct {
	// Flags is the parsed flag set of the command. Every flag added with
	// AddFlags or AddFlag that the user set overrides the other sources,
	// as does any flag named FlagName(key).
	Flags *pflag.FlagSet
	// Env is the environment as os.Environ returns it ("NAME=value"); nil
	// reads the process environment. A variable set to the empty string
	// counts as set (DROVER_METRICS_LISTEN= disables metrics).
	Env []string
	// AllowEnv names DROVER_ variables that are not keys but are known to
	// the caller; any other DROVER_ variable that is not a key gets a
	// warning naming the nearest known one (an unrelated variable in the
	// user's shell must not stop a command). DROVER_CONFIG is always
	// allowed.
	AllowEnv []string
	// Warn receives each warning (one line, no newline); nil writes them
	// to standard error.
	Warn func(string)
	// File is the --config path. When empty, $DROVER_CONFIG is used, then
	// the first of drover.yaml, .yml, .toml or .json found in WorkDir,
	// $XDG_CONFIG_HOME/drover (default ~/.config/drover) and SystemDir.
	// A file named by --config or $DROVER_CONFIG must exist.
	File string
	// WorkDir is the directory searched first; empty: the current one.
	WorkDir string
	// SystemDir is the directory searched last; empty: /etc/drover.
	SystemDir string
	// NoFile skips the file search (File and $DROVER_CONFIG still apply).
	NoFile bool
}

// Extensions are the config file formats Load reads, by extension.
var Extensions = []string{".yaml", ".yml", ".toml", ".json"}

// Load builds the effective configuration from, highest precedence
// first, flags, environment, config file and defaults, and validates it.
// Every problem found is returned together in a *Errors; on error the
// Config is nil.
func Load(opts LoadOptions) (*Config, error) {
	env := envMap(opts.Env)
	var errs Errors
	cfg := Default()
	cfg.Sources = map[string]Source{}

	path, err := findFile(opts, env)
	if err != nil {
		errs.add(err)
	}
	var file map[string]fileValue
	if path != "" {
		cfg.File = path
		file, cfg.Crawls, cfg.CrawlHosts = readFile(path, &errs)
	}
	warn := opts.Warn
	if warn == nil {
		warn = func(s string) { fmt.Fprintln(os.Stderr, s) }
	}
	checkEnvNames(env, opts.AllowEnv, warn)

	failed := map[string]bool{}
	for _, k := range schema {
		v, src, written, ok := resolve(k, opts.Flags, env, file)
		if !ok {
			failed[k.Name] = true
			errs.add(&Error{Kind: ErrType, Key: k.Name, Value: written, Source: src, Expected: expected(k)})
			continue
		}
		if x := checkValue(k, v, src, written); x != nil {
			failed[k.Name] = true
			errs.add(x)
			continue
		}
		if err := cfg.set(k.Name, v); err != nil {
			failed[k.Name] = true
			errs.add(&Error{Kind: ErrType, Key: k.Name, Value: written, Source: src, Expected: err.Error()})
			continue
		}
		if src.Kind != FromDefault {
			cfg.Sources[k.Name] = src
		}
	}
	checkConflicts(cfg, &errs, failed)
	if err := errs.err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// fileValue is one key's value as decoded from the file.
type fileValue struct {
	raw any
	src Source
}

// resolve finds the value of one key in the highest layer that has it.
// written is the value as given, for messages; ok is false when it is not
// of the key's type.
func resolve(k Key, flags *pflag.FlagSet, env map[string]string, file map[string]fileValue) (v any, src Source, written string, ok bool) {
	if name, text, set := flagFor(flags, k); set {
		v, ok = parseText(k, text)
		return v, Source{Kind: FromFlag, Name: "--" + name}, text, ok
	}
	if text, set := env[k.Env()]; set {
		v, ok = parseText(k, text)
		return v, Source{Kind: FromEnv, Name: k.Env()}, text, ok
	}
	if fv, set := file[k.Name]; set {
		v, ok = coerce(k, fv.raw)
		return v, fv.src, writtenAs(fv.raw), ok
	}
	return cloneValue(k.Default), Source{Kind: FromDefault}, formatText(k, k.Default), true
}

// writtenAs renders a decoded file value for a message.
func writtenAs(raw any) string {
	switch x := raw.(type) {
	case nil:
		return ""
	case string:
		return x
	case map[string]any, []any:
		b, err := yaml.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return strings.TrimSpace(strings.ReplaceAll(string(b), "\n", " "))
	}
	return fmt.Sprint(raw)
}

func envMap(environ []string) map[string]string {
	if environ == nil {
		environ = os.Environ()
	}
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if name, val, ok := strings.Cut(kv, "="); ok {
			m[name] = val
		}
	}
	return m
}

// checkEnvNames warns of DROVER_ variables that name no key.
func checkEnvNames(env map[string]string, allow []string, warn func(string)) {
	known := map[string]bool{EnvConfig: true}
	for _, a := range allow {
		known[a] = true
	}
	var names []string
	for _, k := range schema {
		known[k.Env()] = true
		names = append(names, k.Env())
	}
	var unknown []string
	for name := range env {
		if strings.HasPrefix(name, EnvPrefix) && !known[name] {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	for _, name := range unknown {
		msg := "warning: environment variable " + name + " names no configuration key and is ignored"
		if s := suggest(name, names); s != "" {
			msg += "; did you mean " + s + "?"
		} else {
			msg += " (drover config show lists the keys; DROVER_ + the key with . as _)"
		}
		warn(msg)
	}
}

// findFile picks the config file; "" when none is named or found.
func findFile(opts LoadOptions, env map[string]string) (string, *Error) {
	named := func(path string, src Source) (string, *Error) {
		if _, err := os.Stat(path); err != nil {
			return "", &Error{Kind: ErrFile, Source: src,
				Expected: fmt.Sprintf("config file %s: %v", path, unwrapPathError(err))}
		}
		return path, nil
	}
	if opts.File != "" {
		return named(opts.File, Source{Kind: FromFlag, Name: "--config"})
	}
	if p := env[EnvConfig]; p != "" {
		return named(p, Source{Kind: FromEnv, Name: EnvConfig})
	}
	if opts.NoFile {
		return "", nil
	}
	for _, dir := range searchDirs(opts, env) {
		for _, ext := range Extensions {
			p := filepath.Join(dir, "drover"+ext)
			_, err := os.Stat(p)
			if err == nil {
				return p, nil
			}
			if !errors.Is(err, fs.ErrNotExist) {
				return "", &Error{Kind: ErrFile, Source: Source{Kind: FromFile, Name: p},
					Expected: fmt.Sprintf("cannot read the config file: %v", unwrapPathError(err))}
			}
		}
	}
	return "", nil
}

// SearchDirs returns the directories searched for drover.yaml (or .yml,
// .toml, .json), in order, for the given options and environment.
func SearchDirs(opts LoadOptions) []string {
	return searchDirs(opts, envMap(opts.Env))
}

func searchDirs(opts LoadOptions, env map[string]string) []string {
	work := opts.WorkDir
	if work == "" {
		work = "."
	}
	dirs := []string{work}
	if x := env["XDG_CONFIG_HOME"]; x != "" {
		dirs = append(dirs, filepath.Join(x, "drover"))
	} else if h := env["HOME"]; h != "" {
		dirs = append(dirs, filepath.Join(h, ".config", "drover"))
	}
	sys := opts.SystemDir
	if sys == "" {
		sys = "/etc/drover"
	}
	return append(dirs, sys)
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// readFile reads the config file with viper and returns its values by key
// name, reporting unknown keys and unreadable files.
func readFile(path string, errs *Errors) (map[string]fileValue, map[string]CrawlDef, []HostRule) {
	src := Source{Kind: FromFile, Name: path}
	ext := strings.ToLower(filepath.Ext(path))
	known := false
	for _, e := range Extensions {
		known = known || e == ext
	}
	if !known {
		errs.add(&Error{Kind: ErrFile, Source: src,
			Expected: fmt.Sprintf("unsupported extension %q; expected %s", ext, strings.Join(Extensions, ", "))})
		return nil, nil, nil
	}
	v := viper.New()
	v.SetConfigFile(path)
	if err := v.ReadInConfig(); err != nil {
		errs.add(&Error{Kind: ErrFile, Source: src, Expected: "cannot read the config file: " + err.Error()})
		return nil, nil, nil
	}
	lines := map[string]int{}
	if ext == ".yaml" || ext == ".yml" {
		lines = yamlLines(path)
	}
	at := func(key string) Source {
		if n, ok := lines[key]; ok {
			return Source{Kind: FromFile, Name: fmt.Sprintf("%s:%d", path, n)}
		}
		return src
	}

	out := map[string]fileValue{}
	fileKeys := v.AllKeys()
	sort.Strings(fileKeys)
	crawls := readCrawls(fileKeys, v.Get, at, errs)
	var hosts []HostRule
	reported := map[string]bool{}
	for _, fk := range fileKeys {
		if fk == "crawls" || strings.HasPrefix(fk, "crawls.") {
			continue // readCrawls
		}
		if fk == "crawl.hosts" || strings.HasPrefix(fk, "crawl.hosts.") {
			if !reported["crawl.hosts"] {
				reported["crawl.hosts"] = true
				hosts = readHostRules(v.Get("crawl.hosts"), at("crawl.hosts"), errs)
			}
			continue
		}
		if _, ok := Lookup(fk); ok {
			out[fk] = fileValue{raw: v.Get(fk), src: at(fk)}
			continue
		}
		if owner, ok := ownerKey(fk); ok { // inside a key's value
			if owner.Kind == KindStringMap {
				out[owner.Name] = fileValue{raw: v.Get(owner.Name), src: at(owner.Name)}
			} else if !reported[owner.Name] {
				reported[owner.Name] = true
				errs.add(&Error{Kind: ErrType, Key: owner.Name, Value: writtenAs(v.Get(owner.Name)),
					Source: at(owner.Name), Expected: expected(owner)})
			}
			continue
		}
		if sub := sectionKeys(fk); len(sub) > 0 { // a value where a section belongs
			errs.add(&Error{Kind: ErrType, Key: fk, Value: writtenAs(v.Get(fk)), Source: at(fk),
				Expected: "a section with the keys " + strings.Join(sub, ", ")})
			continue
		}
		x := &Error{Kind: ErrUnknown, Key: fk, Source: at(fk)}
		if s := suggest(fk, keyNames()); s != "" {
			x.Hint = "did you mean " + s + "?"
		}
		if sec, _, found := strings.Cut(fk, "."); found && len(sectionKeys(sec)) > 0 {
			x.Expected = "the keys of " + sec + " are " + strings.Join(sectionKeys(sec), ", ")
		} else if x.Hint == "" {
			x.Expected = "the sections are " + strings.Join(sectionNames(), ", ")
		}
		errs.add(x)
	}
	return out, crawls, hosts
}

// ownerKey returns the key whose value contains the dotted path, when the
// path goes below a key.
func ownerKey(path string) (Key, bool) {
	for _, k := range schema {
		if strings.HasPrefix(path, k.Name+".") {
			return k, true
		}
	}
	return Key{}, false
}

// sectionKeys returns the full names of the keys below a section path.
func sectionKeys(section string) []string {
	var out []string
	for _, k := range schema {
		if strings.HasPrefix(k.Name, section+".") {
			out = append(out, k.Name)
		}
	}
	return out
}

func sectionNames() []string {
	out := make([]string, len(sections))
	for i, s := range sections {
		out[i] = s.name
	}
	return out
}

// yamlLines maps the dotted, lower-cased path of every mapping key in a
// YAML file to its line; a file that does not parse yields none (viper
// has reported why).
func yamlLines(path string) map[string]int {
	out := map[string]int{}
	b, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 {
		return out
	}
	var walk func(n *yaml.Node, prefix string)
	walk = func(n *yaml.Node, prefix string) {
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			name := strings.ToLower(n.Content[i].Value)
			if prefix != "" {
				name = prefix + "." + name
			}
			out[name] = n.Content[i].Line
			walk(n.Content[i+1], name)
		}
	}
	walk(doc.Content[0], "")
	return out
}
