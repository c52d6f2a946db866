package config

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func TestSchemaMatchesConfigStruct(t *testing.T) {
	name := regexp.MustCompile(`^[a-z]+(\.[a-z_]+)+$`) // section.leaf or section.sub.leaf
	c := &Config{}
	envs, flags := map[string]string{}, map[string]string{}
	for _, k := range Schema() {
		if !name.MatchString(k.Name) {
			t.Errorf("key %q: expected section.leaf (or section.sub.leaf) in lower case", k.Name)
		}
		if k.Help == "" {
			t.Errorf("key %s has no help", k.Name)
		}
		f, err := c.field(k.Name)
		if err != nil {
			t.Errorf("key %s: %v", k.Name, err)
			continue
		}
		if f.Type() != goType[k.Kind] {
			t.Errorf("key %s: field is %s, kind %s wants %s", k.Name, f.Type(), k.Kind, goType[k.Kind])
		}
		if reflect.TypeOf(k.Default) != goType[k.Kind] {
			t.Errorf("key %s: default is a %T, kind %s wants %s", k.Name, k.Default, k.Kind, goType[k.Kind])
		}
		if k.Kind == KindEnum && len(k.Choices) == 0 {
			t.Errorf("enum key %s has no choices", k.Name)
		}
		if other, dup := envs[k.Env()]; dup {
			t.Errorf("keys %s and %s share the variable %s", k.Name, other, k.Env())
		}
		envs[k.Env()] = k.Name
		if other, dup := flags[k.Flag()]; dup {
			t.Errorf("keys %s and %s share the flag --%s", k.Name, other, k.Flag())
		}
		flags[k.Flag()] = k.Name
		sec, _, _ := strings.Cut(k.Name, ".")
		found := false
		for _, s := range sections {
			found = found || s.name == sec
		}
		if !found {
			t.Errorf("key %s: section %s is not listed in sections", k.Name, sec)
		}
	}

	// Every leaf field of Config is a key.
	keys := map[string]bool{}
	for _, k := range Schema() {
		keys[k.Name] = true
	}
	ct := reflect.TypeOf(Config{})
	for i := 0; i < ct.NumField(); i++ {
		sf := ct.Field(i)
		sec := sf.Tag.Get("yaml")
		if sec == "-" {
			continue
		}
		leafFields(t, keys, "Config."+sf.Name, sec, sf.Type)
	}
}

// leafFields checks that every leaf field of section type st (a nested
// section struct's fields too) is a key.
func leafFields(t *testing.T, keys map[string]bool, goName, name string, st reflect.Type) {
	t.Helper()
	for j := 0; j < st.NumField(); j++ {
		f := st.Field(j)
		leaf := name + "." + f.Tag.Get("yaml")
		if f.Type.Kind() == reflect.Struct && !keys[leaf] {
			leafFields(t, keys, goName+"."+f.Name, leaf, f.Type)
			continue
		}
		if !keys[leaf] {
			t.Errorf("field %s.%s (%s) has no schema key", goName, f.Name, leaf)
		}
	}
}

func TestNames(t *testing.T) {
	tests := []struct{ key, env, flag string }{
		{"heartbeat.interval", "DROVER_HEARTBEAT_INTERVAL", "heartbeat-interval"},
		{"broker.max_request_failures", "DROVER_BROKER_MAX_REQUEST_FAILURES", "broker-max-request-failures"},
		{"console.read_only", "DROVER_CONSOLE_READ_ONLY", "console-read-only"},
	}
	for _, tt := range tests {
		if got := EnvName(tt.key); got != tt.env {
			t.Errorf("EnvName(%s) = %s, want %s", tt.key, got, tt.env)
		}
		if got := FlagName(tt.key); got != tt.flag {
			t.Errorf("FlagName(%s) = %s, want %s", tt.key, got, tt.flag)
		}
	}
	if _, ok := Lookup("Heartbeat.Interval"); !ok {
		t.Error("Lookup is not case-insensitive")
	}
	if _, ok := Lookup("heartbeat"); ok {
		t.Error("Lookup found a section as a key")
	}
}
