package cli

import (
	"bytes"
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
