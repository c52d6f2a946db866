package config

import (
	"fmt"

	"github.com/spf13/pflag"
)

// flagValue is the pflag.Value of a flag bound to a key. It keeps the text
// as given; Load parses and validates it, so a bad flag is reported with
// every other configuration problem (exit status 2) rather than by the
// flag parser.
type flagValue struct {
	key  Key
	text string
	set  bool
}

func (f *flagValue) String() string {
	if !f.set {
		return formatText(f.key, f.key.Default)
	}
	return f.text
}

// Set records the text. A map flag may be repeated: the pairs accumulate.
func (f *flagValue) Set(s string) error {
	if f.key.Kind == KindStringMap && f.set && f.text != "" && s != "" {
		f.text += "," + s
	} else {
		f.text = s
	}
	f.set = true
	return nil
}

func (f *flagValue) Type() string {
	if f.key.Kind == KindEnum {
		return "string"
	}
	return f.key.Kind.String()
}

// AddFlags registers on fs one flag per named key, with the canonical name
// (FlagName: heartbeat.interval -> --heartbeat-interval), the key's help
// and default. Load reads every such flag the user set.
func AddFlags(fs *pflag.FlagSet, keys ...string) error {
	for _, name := range keys {
		if err := AddFlag(fs, name, FlagName(name), ""); err != nil {
			return err
		}
	}
	return nil
}

// AddFlag registers on fs a flag with a chosen name and shorthand (""
// for none) bound to the key, e.g. --read-only for console.read_only or
// --bind for peers.listen.
func AddFlag(fs *pflag.FlagSet, key, name, shorthand string) error {
	k, ok := Lookup(key)
	if !ok {
		hint := ""
		if s := suggest(key, keyNames()); s != "" {
			hint = " (did you mean " + s + "?)"
		}
		return fmt.Errorf("config: flag --%s: no key %q%s", name, key, hint)
	}
	if fs.Lookup(name) != nil {
		return fmt.Errorf("config: flag --%s for %s: already defined on this flag set", name, key)
	}
	if shorthand != "" && fs.ShorthandLookup(shorthand) != nil {
		return fmt.Errorf("config: flag -%s for %s: shorthand already defined on this flag set", shorthand, key)
	}
	help := k.Help
	if k.Rule != "" {
		help += " (" + k.Rule + ")"
	}
	help += " [" + k.Env() + "]"
	f := fs.VarPF(&flagValue{key: k}, name, shorthand, help)
	if k.Kind == KindBool {
		f.NoOptDefVal = "true"
	}
	return nil
}

// flagFor returns the flag the user set for the key, if any: one added by
// AddFlag under any name, or a flag of another type named FlagName(key).
func flagFor(fs *pflag.FlagSet, k Key) (name, text string, ok bool) {
	if fs == nil {
		return "", "", false
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if ok || !f.Changed {
			return
		}
		if fv, mine := f.Value.(*flagValue); mine {
			if fv.key.Name == k.Name {
				name, text, ok = f.Name, fv.text, true
			}
			return
		}
		if f.Name == k.Flag() {
			name, text, ok = f.Name, f.Value.String(), true
		}
	})
	return name, text, ok
}
