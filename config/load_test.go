package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func asErrors(t *testing.T, err error) *Errors {
	t.Helper()
	var errs *Errors
	if !errors.As(err, &errs) {
		t.Fatalf("error %v (%T) is not a *config.Errors", err, err)
	}
	return errs
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// isolated returns options that read no file from the machine running the
// tests: the search directories are empty temporary ones.
func isolated(t *testing.T) LoadOptions {
	t.Helper()
	d := t.TempDir()
	return LoadOptions{Env: []string{"XDG_CONFIG_HOME=" + filepath.Join(d, "xdg")},
		WorkDir: filepath.Join(d, "work"), SystemDir: filepath.Join(d, "etc")}
}

func flagSet(t *testing.T, keys []string, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	if err := AddFlags(fs, keys...); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs
}

// TestPrecedence checks flag > env > file > default for keys of several
// kinds, over every combination of the layers that set them.
func TestPrecedence(t *testing.T) {
	type layerValues struct {
		file, env, flag string // as written in YAML, the environment, a flag
		want            [3]any // the value each layer gives
	}
	keys := map[string]layerValues{
		"heartbeat.interval":          {"2s", "3s", "4s", [3]any{2 * time.Second, 3 * time.Second, 4 * time.Second}},
		"broker.max_request_failures": {"5", "6", "7", [3]any{5, 6, 7}},
		"store.sync":                  {"always", "none", "batch", [3]any{"always", "none", "batch"}},
		"console.read_only":           {"true", "false", "true", [3]any{true, false, true}},
		"backoff.jitter":              {"0.1", "0.3", "0.5", [3]any{0.1, 0.3, 0.5}},
		"console.palette": {`{a: "#111"}`, "a=#222", "a=#333", [3]any{
			map[string]string{"a": "#111"}, map[string]string{"a": "#222"}, map[string]string{"a": "#333"}}},
		"metrics.listen": {"127.0.0.1:9001", "", "127.0.0.1:9003", [3]any{"127.0.0.1:9001", "", "127.0.0.1:9003"}},
	}
	for name, lv := range keys {
		k, _ := Lookup(name)
		sec, leaf, _ := strings.Cut(name, ".")
		for mask := 0; mask < 8; mask++ {
			file, env, flag := mask&1 != 0, mask&2 != 0, mask&4 != 0
			t.Run(name+"/"+map[bool]string{true: "file", false: "-"}[file]+
				map[bool]string{true: "env", false: "-"}[env]+
				map[bool]string{true: "flag", false: "-"}[flag], func(t *testing.T) {
				opts := isolated(t)
				if file {
					opts.File = writeFile(t, t.TempDir(), "c.yaml", sec+":\n  "+leaf+": "+lv.file+"\n")
				}
				if env {
					opts.Env = append(opts.Env, k.Env()+"="+lv.env)
				}
				var args []string
				if flag {
					args = []string{"--" + k.Flag() + "=" + lv.flag}
				}
				opts.Flags = flagSet(t, []string{name}, args...)

				cfg, err := Load(opts)
				if err != nil {
					t.Fatal(err)
				}
				got, _ := cfg.Get(name)
				want, wantSrc := k.Default, FromDefault
				switch {
				case flag:
					want, wantSrc = lv.want[2], FromFlag
				case env:
					want, wantSrc = lv.want[1], FromEnv
				case file:
					want, wantSrc = lv.want[0], FromFile
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %#v, want %#v", name, got, want)
				}
				if src := cfg.Source(name); src.Kind != wantSrc {
					t.Errorf("%s source = %v, want kind %d", name, src, wantSrc)
				}
			})
		}
	}
}

func TestPrecedenceMixedLayers(t *testing.T) {
	opts := isolated(t)
	opts.File = writeFile(t, t.TempDir(), "drover.yaml", `
heartbeat:
  interval: 2s
  liveness: 5
store:
  sync: none
log:
  level: debug
`)
	opts.Env = append(opts.Env, "DROVER_HEARTBEAT_INTERVAL=3s", "DROVER_HEARTBEAT_LIVENESS=7", "DROVER_CRAWL_PER_HOST=9")
	opts.Flags = flagSet(t, []string{"heartbeat.interval", "crawl.per_host", "log.level"}, "--heartbeat-interval", "4s")
	cfg, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Heartbeat.Interval != 4*time.Second || cfg.Heartbeat.Liveness != 7 || cfg.Store.Sync != "none" ||
		cfg.Log.Level != "debug" || cfg.Crawl.PerHost != 9 || cfg.Crawl.Timeout != 30*time.Second {
		t.Fatalf("wrong values: %+v %+v %+v %+v", cfg.Heartbeat, cfg.Store, cfg.Log, cfg.Crawl)
	}
	srcs := map[string]string{
		"heartbeat.interval": "flag --heartbeat-interval",
		"heartbeat.liveness": "env DROVER_HEARTBEAT_LIVENESS",
		"store.sync":         "file " + opts.File + ":6",
		"log.level":          "file " + opts.File + ":8",
		"crawl.per_host":     "env DROVER_CRAWL_PER_HOST",
		"crawl.timeout":      "default",
	}
	for key, want := range srcs {
		if got := cfg.Source(key).String(); got != want {
			t.Errorf("source of %s = %q, want %q", key, got, want)
		}
	}
	if cfg.File != opts.File {
		t.Errorf("File = %q, want %q", cfg.File, opts.File)
	}
}

func TestFileSearch(t *testing.T) {
	tests := []struct {
		name    string
		present []string // of work, xdg, home, etc
		useXDG  bool
		envFile bool // DROVER_CONFIG names a file
		flag    bool // --config names a file
		want    string
	}{
		{"none", nil, true, false, false, ""},
		{"etc only", []string{"etc"}, true, false, false, "etc"},
		{"xdg before etc", []string{"xdg", "etc"}, true, false, false, "xdg"},
		{"work before xdg", []string{"work", "xdg", "etc"}, true, false, false, "work"},
		{"home .config without XDG", []string{"home", "etc"}, false, false, false, "home"},
		{"DROVER_CONFIG before search", []string{"work"}, true, true, false, "envfile"},
		{"--config before DROVER_CONFIG", []string{"work"}, true, true, true, "flagfile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := t.TempDir()
			dirs := map[string]string{
				"work": filepath.Join(d, "work"),
				"xdg":  filepath.Join(d, "xdg", "drover"),
				"home": filepath.Join(d, "home", ".config", "drover"),
				"etc":  filepath.Join(d, "etc"),
			}
			paths := map[string]string{}
			for _, where := range tt.present {
				paths[where] = writeFile(t, dirs[where], "drover.yaml", "crawl:\n  user_agent: from-"+where+"\n")
			}
			opts := LoadOptions{WorkDir: dirs["work"], SystemDir: dirs["etc"], Env: []string{"HOME=" + filepath.Join(d, "home")}}
			if tt.useXDG {
				opts.Env = append(opts.Env, "XDG_CONFIG_HOME="+filepath.Join(d, "xdg"))
			}
			if tt.envFile {
				paths["envfile"] = writeFile(t, d, "env.yaml", "crawl:\n  user_agent: from-envfile\n")
				opts.Env = append(opts.Env, "DROVER_CONFIG="+paths["envfile"])
			}
			if tt.flag {
				paths["flagfile"] = writeFile(t, d, "flag.yaml", "crawl:\n  user_agent: from-flagfile\n")
				opts.File = paths["flagfile"]
			}
			cfg, err := Load(opts)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.File != paths[tt.want] {
				t.Errorf("read %q, want %q", cfg.File, paths[tt.want])
			}
			wantUA := "drover/1.0"
			if tt.want != "" {
				wantUA = "from-" + tt.want
			}
			if cfg.Crawl.UserAgent != wantUA {
				t.Errorf("user agent %q, want %q", cfg.Crawl.UserAgent, wantUA)
			}
		})
	}
}

func TestSearchDirs(t *testing.T) {
	got := SearchDirs(LoadOptions{Env: []string{"XDG_CONFIG_HOME=/x"}})
	want := []string{".", "/x/drover", "/etc/drover"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("SearchDirs = %v, want %v", got, want)
	}
}

func TestFileFormats(t *testing.T) {
	files := map[string]string{
		"c.yaml": "heartbeat:\n  interval: 2s\n  liveness: 5\nconsole:\n  palette:\n    accent: \"#ff0000\"\n    muted: 244\n",
		"c.toml": "[heartbeat]\ninterval = \"2s\"\nliveness = 5\n[console.palette]\naccent = \"#ff0000\"\nmuted = 244\n",
		"c.json": `{"heartbeat": {"interval": "2s", "liveness": 5}, "console": {"palette": {"accent": "#ff0000", "muted": 244}}}`,
	}
	for name, content := range files {
		t.Run(name, func(t *testing.T) {
			opts := isolated(t)
			opts.File = writeFile(t, t.TempDir(), name, content)
			cfg, err := Load(opts)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"accent": "#ff0000", "muted": "244"}
			if cfg.Heartbeat.Interval != 2*time.Second || cfg.Heartbeat.Liveness != 5 ||
				!reflect.DeepEqual(cfg.Console.Palette, want) {
				t.Fatalf("got %+v palette %v", cfg.Heartbeat, cfg.Console.Palette)
			}
		})
	}
}

func TestValidLoads(t *testing.T) {
	tests := []struct {
		name  string
		yaml  string
		env   []string
		check func(*Config) bool
	}{
		{"ipc and inproc endpoints", "peers:\n  listen: ipc:///tmp/drover.sock\nadmin:\n  listen: inproc://admin\n", nil,
			func(c *Config) bool {
				return c.Peers.Listen == "ipc:///tmp/drover.sock" && c.Admin.Listen == "inproc://admin"
			}},
		{"two ephemeral ports never collide", "", []string{"DROVER_PEERS_LISTEN=tcp://127.0.0.1:*", "DROVER_ADMIN_LISTEN=tcp://127.0.0.1:*", "DROVER_METRICS_LISTEN=127.0.0.1:0"},
			func(c *Config) bool {
				return c.Peers.Listen == "tcp://127.0.0.1:*" && c.Metrics.Listen == "127.0.0.1:0"
			}},
		{"metrics disabled by empty env", "", []string{"DROVER_METRICS_LISTEN="},
			func(c *Config) bool { return c.Metrics.Listen == "" }},
		{"null string is empty", "log:\n  file:\n", nil,
			func(c *Config) bool { return c.Log.File == "" }},
		{"size units", "crawl:\n  max_body: 64KiB\n", []string{},
			func(c *Config) bool { return c.Crawl.MaxBody == 64<<10 }},
		{"bare size", "crawl:\n  max_body: 2048\n", nil,
			func(c *Config) bool { return c.Crawl.MaxBody == 2048 }},
		{"zero duration without unit", "broker:\n  unroutable_timeout: 0\n", nil,
			func(c *Config) bool { return c.Broker.UnroutableTimeout == 0 }},
		{"sync none with interval 0", "store:\n  sync: none\n  sync_interval: 0s\n", nil,
			func(c *Config) bool { return c.Store.Sync == SyncNone }},
		{"keys are case-insensitive", "Heartbeat:\n  Interval: 3s\n", nil,
			func(c *Config) bool { return c.Heartbeat.Interval == 3*time.Second }},
		{"allowed extra env", "", []string{"DROVER_EXTRA=1"}, func(*Config) bool { return true }},
		{"non-DROVER env ignored", "", []string{"HOME=/nowhere", "DROVERX=1"}, func(*Config) bool { return true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := isolated(t)
			opts.AllowEnv = []string{"DROVER_EXTRA"}
			opts.Env = append(opts.Env, tt.env...)
			if tt.yaml != "" {
				opts.File = writeFile(t, t.TempDir(), "c.yaml", tt.yaml)
			}
			cfg, err := Load(opts)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(cfg) {
				t.Fatalf("unexpected config %+v", cfg)
			}
		})
	}
}

// TestValidationErrors covers every class of error; each case names the
// error it expects and the words its message must contain.
func TestValidationErrors(t *testing.T) {
	type want struct {
		kind  ErrorKind
		key   string
		words []string // in the message: value, source, expectation
	}
	tests := []struct {
		name  string
		file  string // YAML unless fileName says otherwise
		fname string
		env   []string
		args  []string
		want  want
	}{
		// Unknown keys.
		{name: "unknown key with did-you-mean", file: "heartbeat:\n  intervall: 1s\n",
			want: want{ErrUnknown, "heartbeat.intervall", []string{"c.yaml:2", "did you mean heartbeat.interval?"}}},
		{name: "unknown section with did-you-mean", file: "hearbeat:\n  interval: 1s\n",
			want: want{ErrUnknown, "hearbeat.interval", []string{"did you mean heartbeat.interval?"}}},
		{name: "unknown leaf lists the section's keys", file: "heartbeat:\n  zzzzzzzzzz: 1\n",
			want: want{ErrUnknown, "heartbeat.zzzzzzzzzz", []string{"heartbeat.interval, heartbeat.liveness"}}},
		{name: "unknown section lists sections", file: "zzzzzz:\n  q: 1\n",
			want: want{ErrUnknown, "zzzzzz.q", []string{"the sections are peers, admin"}}},

		// Wrong types.
		{name: "int from file", file: "heartbeat:\n  liveness: three\n",
			want: want{ErrType, "heartbeat.liveness", []string{`"three"`, "c.yaml:2", "expected an integer"}}},
		{name: "fractional int from file", file: "heartbeat:\n  liveness: 2.5\n",
			want: want{ErrType, "heartbeat.liveness", []string{`"2.5"`, "expected an integer"}}},
		{name: "duration without unit", file: "heartbeat:\n  interval: 5\n",
			want: want{ErrType, "heartbeat.interval", []string{`"5"`, "a duration with a unit"}}},
		{name: "bool from env", env: []string{"DROVER_CONSOLE_READ_ONLY=maybe"},
			want: want{ErrType, "console.read_only", []string{`"maybe"`, "env DROVER_CONSOLE_READ_ONLY", "true or false"}}},
		{name: "duration from flag", args: []string{"--heartbeat-interval=abc"},
			want: want{ErrType, "heartbeat.interval", []string{`"abc"`, "flag --heartbeat-interval", "a duration"}}},
		{name: "bool in a string key", file: "crawl:\n  user_agent: true\n",
			want: want{ErrType, "crawl.user_agent", []string{`"true"`, "a string"}}},
		{name: "null int", file: "heartbeat:\n  liveness:\n",
			want: want{ErrType, "heartbeat.liveness", []string{"an integer"}}},
		{name: "value where a section belongs", file: "heartbeat: 5s\n",
			want: want{ErrType, "heartbeat", []string{`"5s"`, "a section with the keys heartbeat.interval, heartbeat.liveness"}}},
		{name: "mapping where a value belongs", file: "heartbeat:\n  interval:\n    x: 1\n",
			want: want{ErrType, "heartbeat.interval", []string{"x: 1", "a duration"}}},
		{name: "endpoint without scheme", env: []string{"DROVER_PEERS_LISTEN=127.0.0.1:5570"},
			want: want{ErrType, "peers.listen", []string{"tcp://HOST:PORT", "no scheme"}}},
		{name: "endpoint bad port", file: "peers:\n  listen: tcp://127.0.0.1:99999\n",
			want: want{ErrType, "peers.listen", []string{`port "99999"`}}},
		{name: "metrics address without port", file: "metrics:\n  listen: localhost\n",
			want: want{ErrType, "metrics.listen", []string{"HOST:PORT"}}},
		{name: "notifier url not http", file: "notifier:\n  url: ftp://example.com/x\n",
			want: want{ErrType, "notifier.url", []string{"http:// or https://"}}},
		{name: "palette from env not pairs", env: []string{"DROVER_CONSOLE_PALETTE=accent"},
			want: want{ErrType, "console.palette", []string{"name=value"}}},

		// Out of range.
		{name: "liveness below 1", file: "heartbeat:\n  liveness: 0\n",
			want: want{ErrRange, "heartbeat.liveness", []string{`"0"`, "an integer from 1 to 100"}}},
		{name: "jitter above 1 from env", env: []string{"DROVER_BACKOFF_JITTER=1.5"},
			want: want{ErrRange, "backoff.jitter", []string{`"1.5"`, "a number from 0 up to (not including) 1"}}},
		{name: "retry jitter of 1 from env", env: []string{"DROVER_BROKER_RETRY_JITTER=1"},
			want: want{ErrRange, "broker.retry_jitter", []string{`"1"`, "a number from 0 up to (not including) 1"}}},
		{name: "negative retry start from flag", args: []string{"--broker-retry-start=-1s"},
			want: want{ErrRange, "broker.retry_start", []string{`"-1s"`, "a duration >= 0"}}},
		{name: "interval too short from flag", args: []string{"--heartbeat-interval", "1ms"},
			want: want{ErrRange, "heartbeat.interval", []string{"a duration from 10ms to 1h"}}},
		{name: "enum with did-you-mean", file: "store:\n  sync: alway\n",
			want: want{ErrRange, "store.sync", []string{"one of always, batch, none", "did you mean always?"}}},
		{name: "theme", env: []string{"DROVER_CONSOLE_THEME=neon"},
			want: want{ErrRange, "console.theme", []string{"one of auto, dark"}}},
		{name: "palette colour", file: "console:\n  palette:\n    accent: red\n",
			want: want{ErrRange, "console.palette", []string{`accent: "red"`}}},
		{name: "size too small", file: "crawl:\n  max_body: 10\n",
			want: want{ErrRange, "crawl.max_body", []string{"a size from 1KiB to 1TiB"}}},
		{name: "empty user agent", env: []string{"DROVER_CRAWL_USER_AGENT= "},
			want: want{ErrRange, "crawl.user_agent", []string{"a non-empty string"}}},

		// Conflicts.
		{name: "two listeners on one address", env: []string{"DROVER_ADMIN_LISTEN=tcp://127.0.0.1:5570"},
			want: want{ErrConflict, "peers.listen and admin.listen", []string{"bind the same address", "admin.listen from env DROVER_ADMIN_LISTEN", "peers.listen from default"}}},
		{name: "wildcard and loopback on one port", file: "peers:\n  listen: tcp://*:9570\n",
			want: want{ErrConflict, "peers.listen and metrics.listen", []string{"tcp://*:9570"}}},
		{name: "localhost is loopback", env: []string{"DROVER_EVENTS_LISTEN=tcp://localhost:5571"},
			want: want{ErrConflict, "admin.listen and events.listen", []string{"same address"}}},
		{name: "batch sync with interval 0", file: "store:\n  sync_interval: 0s\n",
			want: want{ErrConflict, "store.sync and store.sync_interval", []string{"an interval > 0 for batch"}}},
		{name: "back-off cap below start", env: []string{"DROVER_BACKOFF_CAP=30s"},
			want: want{ErrConflict, "backoff.start and backoff.cap", []string{"start 1m is longer than cap 30s"}}},
		{name: "retry cap below start", file: "broker:\n  retry_start: 10m\n",
			want: want{ErrConflict, "broker.retry_start and broker.retry_cap", []string{"start 10m is longer than cap 5m"}}},
		{name: "connect timeout above fetch timeout", args: []string{"--crawl-connect-timeout=1m"},
			want: want{ErrConflict, "crawl.connect_timeout and crawl.timeout", []string{"flag --crawl-connect-timeout"}}},

		// Files.
		{name: "malformed YAML", file: "heartbeat: [\n",
			want: want{ErrFile, "", []string{"c.yaml", "cannot read the config file"}}},
		{name: "unsupported extension", file: "x=1\n", fname: "c.ini",
			want: want{ErrFile, "", []string{"unsupported extension \".ini\""}}},
		{name: "DROVER_CONFIG names a missing file", env: []string{"DROVER_CONFIG=/nonexistent/drover.yaml"},
			want: want{ErrFile, "", []string{"env DROVER_CONFIG", "/nonexistent/drover.yaml", "no such file"}}},
	}
	flagKeys := []string{"heartbeat.interval", "crawl.connect_timeout", "broker.retry_start"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := isolated(t)
			opts.Env = append(opts.Env, tt.env...)
			opts.Flags = flagSet(t, flagKeys, tt.args...)
			if tt.file != "" {
				name := tt.fname
				if name == "" {
					name = "c.yaml"
				}
				opts.File = writeFile(t, t.TempDir(), name, tt.file)
			}
			cfg, err := Load(opts)
			if err == nil {
				t.Fatalf("loaded %+v, want a %s error", cfg, tt.want.kind)
			}
			if cfg != nil {
				t.Error("Load returned a Config with an error")
			}
			errs := asErrors(t, err)
			var found *Error
			for _, x := range errs.List {
				if x.Kind == tt.want.kind && x.Key == tt.want.key {
					found = x
				}
			}
			if found == nil {
				t.Fatalf("no %s error on %q in:\n%v", tt.want.kind, tt.want.key, err)
			}
			msg := found.Error()
			for _, w := range tt.want.words {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q does not contain %q", msg, w)
				}
			}
			if len(errs.List) != 1 {
				t.Errorf("expected exactly one error, got:\n%v", err)
			}
		})
	}
}

func TestMissingConfigFlagFile(t *testing.T) {
	opts := isolated(t)
	opts.File = filepath.Join(t.TempDir(), "absent.yaml")
	errs := asErrors(t, func() error { _, err := Load(opts); return err }())
	if len(errs.Of(ErrFile)) != 1 || !strings.Contains(errs.Error(), "flag --config") {
		t.Fatalf("want one file error naming --config, got %v", errs)
	}
}

func TestAllErrorsReportedTogether(t *testing.T) {
	opts := isolated(t)
	opts.File = writeFile(t, t.TempDir(), "c.yaml", `
heartbeat:
  interval: soon
  liveness: 0
brokr:
  max_request_failures: 3
backoff:
  cap: 1s
store:
  sync_interval: 0s
`)
	opts.Env = append(opts.Env, "DROVER_BACKOFF_JITTER=lots", "DROVER_BACKOFF_START=later", "DROVER_STORE_SYNC_INTERVAL=0s")
	opts.Flags = flagSet(t, []string{"console.refresh"}, "--console-refresh=1h")
	_, err := Load(opts)
	errs := asErrors(t, err)
	counts := map[ErrorKind]int{}
	for _, x := range errs.List {
		counts[x.Kind]++
	}
	// backoff.cap < backoff.start is not reported: start is wrong already.
	want := map[ErrorKind]int{ErrType: 3, ErrRange: 2, ErrUnknown: 1, ErrConflict: 1}
	if !reflect.DeepEqual(counts, want) {
		t.Fatalf("error counts %v, want %v; errors:\n%v", counts, want, err)
	}
	msg := err.Error()
	for _, w := range []string{"7 problems", "heartbeat.interval", "heartbeat.liveness", "brokr.max_request_failures",
		"backoff.jitter", "backoff.start", "store.sync and store.sync_interval", "console.refresh"} {
		if !strings.Contains(msg, w) {
			t.Errorf("message does not mention %q:\n%s", w, msg)
		}
	}
	var one *Error
	if !errors.As(err, &one) {
		t.Error("errors.As cannot reach a single *Error through *Errors")
	}
}

func TestNoFileSkipsSearchOnly(t *testing.T) {
	opts := isolated(t)
	writeFile(t, opts.WorkDir, "drover.yaml", "log:\n  level: debug\n")
	opts.NoFile = true
	cfg, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.File != "" || cfg.Log.Level != "info" {
		t.Fatalf("NoFile read %q (level %s)", cfg.File, cfg.Log.Level)
	}
	named := writeFile(t, t.TempDir(), "named.yaml", "log:\n  level: warn\n")
	opts.Env = append(opts.Env, "DROVER_CONFIG="+named)
	if cfg, err = Load(opts); err != nil {
		t.Fatal(err)
	}
	if cfg.File != named || cfg.Log.Level != "warn" {
		t.Fatalf("NoFile ignored DROVER_CONFIG: read %q (level %s)", cfg.File, cfg.Log.Level)
	}
}

// BenchmarkLoad measures a load with a file, environment and flags.
func BenchmarkLoad(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "drover.yaml")
	if err := os.WriteFile(path, Example(), 0o644); err != nil {
		b.Fatal(err)
	}
	fs := pflag.NewFlagSet("b", pflag.ContinueOnError)
	if err := AddFlags(fs, "heartbeat.interval", "log.level"); err != nil {
		b.Fatal(err)
	}
	if err := fs.Parse([]string{"--heartbeat-interval=2s"}); err != nil {
		b.Fatal(err)
	}
	opts := LoadOptions{File: path, Env: []string{"DROVER_LOG_LEVEL=debug"}, Flags: fs}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Load(opts); err != nil {
			b.Fatal(err)
		}
	}
}

// TestUnknownEnvWarns: a DROVER_ variable that names no key is a warning
// naming the nearest key's variable, not an error; the rest loads.
func TestUnknownEnvWarns(t *testing.T) {
	var warnings []string
	opts := LoadOptions{NoFile: true, Warn: func(s string) { warnings = append(warnings, s) },
		Env: []string{"DROVER_HEARTBEAT_INTERVL=1s", "DROVER_HEARTBEAT_LIVENESS=5", "DROVER_ZZZZZZZZZZZZZZZZ=1", "NOT_DROVER=1"}}
	cfg, err := Load(opts)
	if err != nil {
		t.Fatalf("Load: %v, want only warnings", err)
	}
	if cfg.Heartbeat.Liveness != 5 {
		t.Errorf("liveness %d, want 5 from the environment", cfg.Heartbeat.Liveness)
	}
	want := []string{
		"warning: environment variable DROVER_HEARTBEAT_INTERVL names no configuration key and is ignored; did you mean DROVER_HEARTBEAT_INTERVAL?",
		"warning: environment variable DROVER_ZZZZZZZZZZZZZZZZ names no configuration key and is ignored (drover config show lists the keys; DROVER_ + the key with . as _)",
	}
	if !slices.Equal(warnings, want) {
		t.Errorf("warnings:\n%q\nwant:\n%q", warnings, want)
	}
}

// TestCrawlsSection: the file's crawls section defines crawls by name,
// with define-crawl's defaults and checks; a bad value is an error naming
// its key.
func TestCrawlsSection(t *testing.T) {
	opts := isolated(t)
	opts.File = writeFile(t, t.TempDir(), "drover.yaml", "crawls:\n  news: {scope: Domain, max_depth: 5, max_pages: 100000}\n  blog: {max_pages: 7}\n")
	cfg, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]CrawlDef{
		"news": {Scope: "domain", MaxDepth: 5, MaxPages: 100000},
		"blog": {Scope: "host", MaxDepth: 10, MaxPages: 7},
	}
	if !reflect.DeepEqual(want, cfg.Crawls) {
		t.Errorf("crawls %+v, want %+v", cfg.Crawls, want)
	}
	for _, tc := range []struct{ file, want string }{
		{"crawls:\n  news: {scope: planet}\n", "crawls.news.scope = \"planet\""},
		{"crawls:\n  news: {max_depth: -1}\n", "crawls.news.max_depth = \"-1\""},
		{"crawls:\n  news: {max_pages: lots}\n", "crawls.news.max_pages = \"lots\""},
		{"crawls:\n  news: {scop: host}\n", "unknown key crawls.news.scop"},
		{"crawls:\n  news: 5\n", "crawls.news = \"5\""},
		{"crawls: 5\n", "crawls = \"5\""},
	} {
		opts.File = writeFile(t, t.TempDir(), "drover.yaml", tc.file)
		_, err := Load(opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.file, err, tc.want)
		}
	}
}
