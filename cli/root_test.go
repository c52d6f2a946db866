package cli

import (
	"bytes"
	"drover/config"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"version"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	if !strings.HasPrefix(out.String(), "drover dev (commit none") || !strings.Contains(out.String(), "libzmq 4.") || !strings.Contains(out.String(), "CURVE security available: ") {
		t.Fatalf("unexpected version output %q", out.String())
	}
}

func TestUnknownCommandFails(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"no-such-command"}, strings.NewReader(""), &out, &errb); code != 2 {
		t.Fatalf("unknown command exited %d, want 2", code)
	}
	if !strings.Contains(errb.String(), "no-such-command") {
		t.Fatalf("error does not name the command: %q", errb.String())
	}
}

func TestStorePathDefaultsToXDGState(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/var/tmp/xdg")
	for _, tc := range []struct{ path, want string }{
		{"", "/var/tmp/xdg/drover/store"},
		{"memory", ""},
		{"/srv/drover", "/srv/drover"},
	} {
		cfg := config.Default()
		cfg.Store.Path = tc.path
		got, err := storePath(cfg)
		if err != nil || got != tc.want {
			t.Errorf("store.path %q: %q, %v; want %q", tc.path, got, err, tc.want)
		}
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "/home/op")
	cfg := config.Default()
	if got, _ := storePath(cfg); got != "/home/op/.local/state/drover/store" {
		t.Errorf("without XDG_STATE_HOME: %q, want ~/.local/state/drover/store", got)
	}
}
