package config

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var update = flag.Bool("update", false, "rewrite ../drover.example.yaml from the schema")

const examplePath = "../drover.example.yaml"

// ignoreMeta compares the values of two Configs, not where they came from.
var ignoreMeta = cmpopts.IgnoreFields(Config{}, "File", "Sources")

func TestExampleFileInSync(t *testing.T) {
	want := Example()
	if *update {
		if err := os.WriteFile(examplePath, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatalf("%v (run go test ./config -run TestExampleFileInSync -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("drover.example.yaml differs from config.Example() (run go test ./config -run TestExampleFileInSync -update):\n%s",
			cmp.Diff(string(want), string(got)))
	}
}

func TestExampleLoadsToDefaults(t *testing.T) {
	opts := isolated(t)
	opts.File = writeFile(t, t.TempDir(), "drover.yaml", string(Example()))
	cfg, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(Default(), cfg, ignoreMeta); d != "" {
		t.Fatalf("the example does not load to the defaults (-want +got):\n%s", d)
	}
	ex := string(Example())
	for _, k := range Schema() {
		if !strings.Contains(ex, k.Help) || !strings.Contains(ex, k.Env()) {
			t.Errorf("the example does not document %s (help, env)", k.Name)
		}
		// Which commands take a key as a flag, and under which name, is the
		// commands' own (cli): the example names none, so names none that
		// does not exist (it named --peers-listen, which is --bind).
		if strings.Contains(ex, "--"+k.Flag()) {
			t.Errorf("the example names the flag --%s of %s", k.Flag(), k.Name)
		}
	}
}

func TestShowRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		yaml  string
		env   []string
		flags []string
	}{
		{"defaults", "", nil, nil},
		{"every layer", `
heartbeat:
  interval: 1500ms
  liveness: 9
console:
  palette:
    accent: "#ff8700"
    muted: "244"
  theme: high-contrast
crawl:
  max_body: 1500
  user_agent: "yes"
notifier:
  url: https://hooks.example.com/drover?token=a:b
`, []string{"DROVER_BACKOFF_JITTER=0.35", "DROVER_METRICS_LISTEN=", "DROVER_LOG_FILE=/var/log/drover: main.log",
			"DROVER_STORE_PATH=", "DROVER_BACKOFF_CAP=90m"}, []string{"--console-read-only", "--ledger-done-ttl=720h"}},
		{"awkward strings", `
crawl:
  user_agent: "123"
log:
  file: "# not a comment"
store:
  path: "true"
`, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := isolated(t)
			opts.Env = append(opts.Env, tt.env...)
			opts.Flags = flagSet(t, []string{"console.read_only", "ledger.done_ttl"}, tt.flags...)
			if tt.yaml != "" {
				opts.File = writeFile(t, t.TempDir(), "in.yaml", tt.yaml)
			}
			first, err := Load(opts)
			if err != nil {
				t.Fatal(err)
			}
			out, err := Show(first)
			if err != nil {
				t.Fatal(err)
			}
			again := isolated(t)
			again.File = writeFile(t, t.TempDir(), "shown.yaml", string(out))
			second, err := Load(again)
			if err != nil {
				t.Fatalf("Show's output does not load: %v\n%s", err, out)
			}
			if d := cmp.Diff(first, second, ignoreMeta); d != "" {
				t.Fatalf("Show did not round-trip (-first +second):\n%s\n%s", d, out)
			}
		})
	}
}

func TestShowNamesSources(t *testing.T) {
	opts := isolated(t)
	opts.File = writeFile(t, t.TempDir(), "in.yaml", "heartbeat:\n  liveness: 9\n")
	opts.Env = append(opts.Env, "DROVER_LOG_LEVEL=debug")
	cfg, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Show(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, w := range []string{
		"liveness: 9 # from file " + opts.File + ":2",
		"level: debug # from env DROVER_LOG_LEVEL",
		"interval: 1s\n",
		"Read from " + opts.File,
	} {
		if !strings.Contains(s, w) {
			t.Errorf("Show output lacks %q:\n%s", w, s)
		}
	}
	if _, err := Show(nil); err == nil {
		t.Error("Show(nil) succeeded")
	}
}

func TestShowOfBuiltConfig(t *testing.T) {
	c := Default()
	c.Heartbeat.Interval = 90 * time.Second
	c.Backoff.Jitter = 1
	out, err := Show(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "interval: 1m30s") || !strings.Contains(string(out), "jitter: 1.0") {
		t.Fatalf("unexpected output:\n%s", out)
	}
	c.Console.Palette = nil
	if _, err := Show(c); err != nil {
		t.Fatalf("a nil palette: %v", err)
	}
}

func TestReference(t *testing.T) {
	ref := string(Reference())
	for _, k := range Schema() {
		if !strings.Contains(ref, "| `"+k.Name+"` |") {
			t.Errorf("reference lacks %s", k.Name)
		}
	}
	if !strings.Contains(ref, "`DROVER_HEARTBEAT_INTERVAL`") || !strings.Contains(ref, "| `10MiB` |") {
		t.Errorf("reference lacks env names or formatted defaults:\n%s", ref)
	}
}

func TestExamplePathIsRepoRoot(t *testing.T) {
	if _, err := os.Stat(filepath.Join("..", "go.mod")); err != nil {
		t.Fatalf("the example path assumes config/ sits at the module root: %v", err)
	}
}

// Secrets given inline never show; a key file's path does.
func TestShowRedactsSecrets(t *testing.T) {
	const inline = "X/d:SCs8aq<Ht(HBu$<@)o^I@ZB4K=Eth3-K?Fbo"
	opts := isolated(t)
	opts.Env = append(opts.Env, "DROVER_SECURITY_KEY="+inline, "DROVER_METRICS_TOKEN=hunter2",
		"DROVER_SECURITY_AUTHORIZED_KEYS=/etc/drover/authorized_keys",
		"DROVER_STORE_URL=rediss://ops:pa55word@10.0.0.1:7000,10.0.0.2:7000")
	cfg, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Security.Key != inline || cfg.Metrics.Token != "hunter2" {
		t.Fatalf("loaded %q, %q", cfg.Security.Key, cfg.Metrics.Token)
	}
	out, err := Show(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if strings.Contains(s, inline) || strings.Contains(s, "hunter2") || strings.Contains(s, "pa55word") {
		t.Fatalf("config show prints a secret:\n%s", s)
	}
	if !strings.Contains(s, "/etc/drover/authorized_keys") || !strings.Contains(s, "REDACTED") ||
		!strings.Contains(s, "rediss://ops:REDACTED@10.0.0.1:7000,10.0.0.2:7000") {
		t.Fatalf("config show lost a path or the placeholder:\n%s", s)
	}
	// serve --store redis://... sets store.path: its password is hidden
	// too, in config show and in a configuration error; a directory and
	// memory are shown.
	opts = isolated(t)
	opts.Env = append(opts.Env, "DROVER_STORE_PATH=redis://ops:pa55word@10.0.0.1:7000")
	if cfg, err = Load(opts); err != nil {
		t.Fatal(err)
	}
	if out, _ := Show(cfg); strings.Contains(string(out), "pa55word") || !strings.Contains(string(out), "redis://ops:REDACTED@10.0.0.1:7000") {
		t.Fatalf("config show of a store.path URL:\n%s", out)
	}
	opts = isolated(t)
	opts.Env = append(opts.Env, "DROVER_STORE_PATH=redis://ops:pa55word@10.0.0.1:port")
	if _, err := Load(opts); err == nil || !strings.Contains(err.Error(), "store.path") || strings.Contains(err.Error(), "pa55word") {
		t.Fatalf("a store.path URL that does not parse: %v; want an error naming store.path, without the password", err)
	}
	for _, p := range []string{"/var/lib/drover/store", "memory"} {
		opts = isolated(t)
		opts.Env = append(opts.Env, "DROVER_STORE_PATH="+p)
		if cfg, err = Load(opts); err != nil {
			t.Fatal(err)
		}
		if out, _ := Show(cfg); !strings.Contains(string(out), "path: "+p) {
			t.Fatalf("config show hides store.path %s:\n%s", p, out)
		}
	}
	opts = isolated(t)
	opts.Env = append(opts.Env, "DROVER_SECURITY_KEY=/etc/drover/server.key")
	if cfg, err = Load(opts); err != nil {
		t.Fatal(err)
	}
	if out, _ := Show(cfg); !strings.Contains(string(out), "/etc/drover/server.key") {
		t.Fatalf("a key file's path is hidden:\n%s", out)
	}
}
