package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestFlagHelpers(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	if err := AddFlags(fs, "heartbeat.interval", "console.palette"); err != nil {
		t.Fatal(err)
	}
	if err := AddFlag(fs, "console.read_only", "read-only", "r"); err != nil {
		t.Fatal(err)
	}
	if err := AddFlag(fs, "peers.listen", "bind", ""); err != nil {
		t.Fatal(err)
	}
	errTests := []struct {
		name, key, flag, short, words string
	}{
		{"unknown key", "heartbeat.intervall", "x", "", "did you mean heartbeat.interval?"},
		{"duplicate name", "heartbeat.liveness", "heartbeat-interval", "", "already defined"},
		{"duplicate shorthand", "heartbeat.liveness", "live", "r", "shorthand already defined"},
	}
	for _, tt := range errTests {
		err := AddFlag(fs, tt.key, tt.flag, tt.short)
		if err == nil || !strings.Contains(err.Error(), tt.words) {
			t.Errorf("%s: err %v, want one containing %q", tt.name, err, tt.words)
		}
	}

	usage := fs.FlagUsages()
	for _, w := range []string{"--heartbeat-interval duration", "(default 1s)", "DROVER_HEARTBEAT_INTERVAL", "-r, --read-only", "--bind endpoint"} {
		if !strings.Contains(usage, w) {
			t.Errorf("usage lacks %q:\n%s", w, usage)
		}
	}

	if err := fs.Parse([]string{"-r", "--bind", "tcp://127.0.0.1:6000", "--console-palette", "a=#111", "--console-palette=b=#222"}); err != nil {
		t.Fatal(err)
	}
	opts := isolated(t)
	opts.Flags = fs
	cfg, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Console.ReadOnly || cfg.Peers.Listen != "tcp://127.0.0.1:6000" ||
		!reflect.DeepEqual(cfg.Console.Palette, map[string]string{"a": "#111", "b": "#222"}) {
		t.Fatalf("flags not applied: %+v %+v", cfg.Console, cfg.Peers)
	}
	if got := cfg.Source("peers.listen").String(); got != "flag --bind" {
		t.Errorf("source %q, want flag --bind", got)
	}
}

func TestForeignFlagByCanonicalName(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.Duration("heartbeat-interval", time.Second, "")
	fs.Int("unrelated", 0, "")
	if err := fs.Parse([]string{"--heartbeat-interval=7s", "--unrelated=3"}); err != nil {
		t.Fatal(err)
	}
	opts := isolated(t)
	opts.Flags = fs
	cfg, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Heartbeat.Interval != 7*time.Second {
		t.Fatalf("interval %v, want 7s from a plain pflag Duration", cfg.Heartbeat.Interval)
	}
}

func TestUnsetFlagsDoNotOverride(t *testing.T) {
	opts := isolated(t)
	opts.Env = append(opts.Env, "DROVER_HEARTBEAT_INTERVAL=3s")
	opts.Flags = flagSet(t, []string{"heartbeat.interval"})
	cfg, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Heartbeat.Interval != 3*time.Second {
		t.Fatalf("an unset flag overrode the environment: %v", cfg.Heartbeat.Interval)
	}
}
