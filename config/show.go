package config

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"drover/crawl"
	"drover/internal/redact"
)

// Show renders the effective configuration as YAML, every key in schema
// order; a value that is not the default carries a comment naming its
// source. Loading the output gives the same Config back.
func Show(cfg *Config) ([]byte, error) {
	if cfg == nil {
		return nil, fmt.Errorf("config.Show: nil *Config, expected a loaded configuration")
	}
	head := "Effective drover configuration."
	if cfg.File != "" {
		head += "\nRead from " + cfg.File + "."
	}
	return render(head, func(k Key) (any, string, string, error) {
		v, err := cfg.Get(k.Name)
		if err != nil {
			return nil, "", "", err
		}
		line := ""
		if src := cfg.Source(k.Name); src.Kind != FromDefault {
			line = "from " + src.String()
		}
		if r, hidden := Redacted(k, v); hidden {
			v = r
			line = strings.TrimSpace(line + " (a secret: not shown)")
		}
		return v, "", line, nil
	})
}

// Example returns the commented example configuration generated from the
// schema: every key at its default, with its description, rule and
// environment variable (a key's flags are the commands' own: --help). drover.example.yaml is this text.
func Example() []byte {
	head := `drover configuration: every key, at its default.

Sources, highest precedence first: command-line flags, environment
variables (DROVER_ + the key in upper case with "." as "_", e.g.
DROVER_HEARTBEAT_INTERVAL), this file, the defaults. The file is the one
named by --config, else $DROVER_CONFIG, else the first drover.yaml found
in the current directory, $XDG_CONFIG_HOME/drover and /etc/drover (.yml,
.toml and .json are read too).

Durations take a unit (250ms, 1s, 5m, 24h); sizes take an optional unit
(512, 64KiB, 10MiB, 1GB). "drover config check FILE" validates a file.

Some keys are flags of some commands too: "drover COMMAND --help" lists
a command's flags, each with the variable of its key.`
	b, err := render(head, func(k Key) (any, string, string, error) {
		doc := k.Help
		if k.Rule != "" {
			doc += "\n" + capitalise(k.Rule) + "."
		}
		doc += "\nenv " + k.Env()
		return k.Default, doc, "", nil
	})
	if err != nil {
		// The defaults are typed by the schema and checked by the tests.
		return []byte("# error generating the example: " + err.Error() + "\n")
	}
	b = append(b, fmt.Sprintf(crawlsExample, crawl.DefaultMaxDepth)...)
	return append(b, hostsExample...)
}

// Redacted is how a Secret key's value is shown: a file path as it is,
// anything else (an inline key or token) replaced. hidden says whether it
// was replaced. The password of a store.path that is a URL (serve --store
// redis://USER:PASSWORD@...) is hidden too.
func Redacted(k Key, v any) (shown any, hidden bool) {
	s, ok := v.(string)
	if k.Name == "store.path" && ok && IsURL(s) {
		return redact.URLPassword(s, "REDACTED")
	}
	if !k.Secret || !ok || s == "" {
		return v, false
	}
	if strings.Contains(s, "://") {
		// A URL: only the password in it is a secret.
		if r, hidden := redact.URLPassword(s, "REDACTED"); hidden {
			return r, true
		}
		return v, false
	}
	if looksLikePath(s) {
		return v, false
	}
	return "REDACTED", true
}

// looksLikePath says whether a secret's value names a file rather than
// being the secret: it has a path separator and is not a 40-character Z85
// key (whose alphabet includes '/').
func looksLikePath(s string) bool {
	return strings.ContainsRune(s, '/') && len(s) != 40
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// render writes the schema as a YAML document; value returns each key's
// value, the comment above it and the comment beside it.
func render(head string, value func(Key) (any, string, string, error)) ([]byte, error) {
	root := &yaml.Node{Kind: yaml.MappingNode}
	for _, sec := range sections {
		body := &yaml.Node{Kind: yaml.MappingNode}
		for _, k := range schema {
			secName, leaf, _ := strings.Cut(k.Name, ".")
			if secName != sec.name {
				continue
			}
			v, above, beside, err := value(k)
			if err != nil {
				return nil, err
			}
			vn, err := valueNode(k, v)
			if err != nil {
				return nil, err
			}
			vn.LineComment = beside
			m := body
			for { // a dotted leaf (store.redis.wait_replicas) nests
				sub, rest, ok := strings.Cut(leaf, ".")
				if !ok {
					break
				}
				m, leaf = subMapping(m, sub), rest
			}
			m.Content = append(m.Content,
				&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: leaf, HeadComment: above}, vn)
		}
		root.Content = append(root.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: sec.name, HeadComment: sec.help}, body)
	}
	doc := &yaml.Node{Kind: yaml.DocumentNode, HeadComment: head, Content: []*yaml.Node{root}}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("config: encoding YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("config: encoding YAML: %w", err)
	}
	return spaceSections(buf.Bytes()), nil
}

// subMapping returns the mapping under key name in m, added if missing.
func subMapping(m *yaml.Node, name string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == name && m.Content[i+1].Kind == yaml.MappingNode {
			return m.Content[i+1]
		}
	}
	sub := &yaml.Node{Kind: yaml.MappingNode}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name}, sub)
	return sub
}

// spaceSections puts a blank line before each top-level section after the
// first, for readability.
func spaceSections(b []byte) []byte {
	lines := strings.SplitAfter(string(b), "\n")
	var out strings.Builder
	prevIndented := false
	for _, l := range lines {
		top := l != "" && l[0] != ' ' && l[0] != '\n'
		if top && prevIndented {
			out.WriteString("\n")
		}
		out.WriteString(l)
		if l != "" && l != "\n" {
			prevIndented = !top
		}
	}
	return []byte(out.String())
}

// valueNode renders one typed value as a YAML scalar or mapping that
// Load reads back to the same value.
func valueNode(k Key, v any) (*yaml.Node, error) {
	scalar := func(tag, s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: s} }
	switch k.Kind {
	case KindBool:
		b, ok := v.(bool)
		if !ok {
			return nil, typeMismatch(k, v)
		}
		return scalar("!!bool", strconv.FormatBool(b)), nil
	case KindInt:
		n, ok := v.(int)
		if !ok {
			return nil, typeMismatch(k, v)
		}
		return scalar("!!int", strconv.Itoa(n)), nil
	case KindFloat:
		f, ok := v.(float64)
		if !ok {
			return nil, typeMismatch(k, v)
		}
		s := strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEnN") {
			s += ".0"
		}
		return scalar("!!float", s), nil
	case KindStringMap:
		m, ok := v.(map[string]string)
		if !ok {
			return nil, typeMismatch(k, v)
		}
		n := &yaml.Node{Kind: yaml.MappingNode}
		if len(m) == 0 {
			n.Style = yaml.FlowStyle
		}
		names := make([]string, 0, len(m))
		for name := range m {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			n.Content = append(n.Content, scalar("!!str", name), scalar("!!str", m[name]))
		}
		return n, nil
	case KindDuration, KindSize:
		return scalar("!!str", formatText(k, v)), nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, typeMismatch(k, v)
	}
	return scalar("!!str", s), nil
}

func typeMismatch(k Key, v any) error {
	return fmt.Errorf("config: key %s holds a %T, expected a %s value", k.Name, v, k.Kind)
}

// Reference returns a Markdown table of every key: name, type, default,
// environment variable and description with its rule.
func Reference() []byte {
	var b strings.Builder
	b.WriteString("| key | type | default | environment | description |\n|---|---|---|---|---|\n")
	for _, k := range schema {
		def := formatText(k, k.Default)
		if def == "" {
			def = `""`
		}
		desc := k.Help
		if k.Rule != "" {
			desc += " (" + k.Rule + ")"
		}
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | `%s` | %s |\n", k.Name, k.Kind, def, k.Env(),
			strings.ReplaceAll(desc, "|", `\|`))
	}
	return []byte(b.String())
}
