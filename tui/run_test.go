package tui

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"drover/themes"
)

func TestRunQuitsOnQ(t *testing.T) {
	b := seedBackend()
	t.Cleanup(b.close)
	in := strings.NewReader("q")
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- Run(t.Context(), b, Options{Theme: "dark"}, in, &out) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after q")
	}
	// The alternate screen was entered and left.
	if !bytes.Contains(out.Bytes(), []byte("\x1b[?1049h")) || !bytes.Contains(out.Bytes(), []byte("\x1b[?1049l")) {
		t.Error("Run did not use the alternate screen")
	}
}

func TestRunReturnsWhenContextEnds(t *testing.T) {
	b := seedBackend()
	t.Cleanup(b.close)
	ctx, cancel := context.WithCancel(t.Context())
	inR, inW := io.Pipe()
	t.Cleanup(func() { inW.Close() })
	done := make(chan error, 1)
	go func() { done <- Run(ctx, b, Options{Theme: "dark", Embedded: true}, inR, io.Discard) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancel: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

func TestRunRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		b    Backend
		opts Options
		want string
	}{
		{"no backend", nil, Options{}, "no backend"},
		{"unknown theme", seedBackend(), Options{Theme: "neon"}, `console option Theme: theme "neon": unknown`},
		{"negative refresh", seedBackend(), Options{Refresh: -time.Second}, "console option Refresh = -1s: want a positive duration"},
		{"duplicate custom theme", seedBackend(), Options{Themes: []themes.Theme{{Name: "x"}, {Name: "x"}}}, `theme "x" defined twice`},
	}
	for _, tc := range tests {
		err := Run(t.Context(), tc.b, tc.opts, strings.NewReader(""), io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestRunOptionsHonoursNoColor(t *testing.T) {
	env := map[string]string{"NO_COLOR": "1"}
	opts, err := runOptions(Options{Theme: "light"}, func(k string) string { return env[k] })
	if err != nil || !opts.NoColor {
		t.Errorf("NO_COLOR=1: NoColor %v, err %v; want true", opts.NoColor, err)
	}
	opts, err = runOptions(Options{}, func(string) string { return "" })
	if err != nil || opts.NoColor {
		t.Errorf("no NO_COLOR: NoColor %v, err %v; want false", opts.NoColor, err)
	}
}
