package config

import (
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"512", 512, true},
		{"512B", 512, true},
		{"64KiB", 64 << 10, true},
		{"64kib", 64 << 10, true},
		{"10 MiB", 10 << 20, true},
		{"1GB", 1e9, true},
		{"2TiB", 2 << 40, true},
		{"1.5MiB", 0, false},
		{"-1", 0, false},
		{"MiB", 0, false},
		{"10XB", 0, false},
		{"9999999999TiB", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestFormatSize(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0"}, {1000, "1000"}, {1024, "1KiB"}, {10 << 20, "10MiB"}, {3 << 30, "3GiB"}, {1<<20 + 1, "1048577"},
	}
	for _, tt := range tests {
		if got := FormatSize(tt.in); got != tt.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tt.in, got, tt.want)
		}
		if back, err := ParseSize(FormatSize(tt.in)); err != nil || back != tt.in {
			t.Errorf("ParseSize(FormatSize(%d)) = %d, %v", tt.in, back, err)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"}, {time.Minute, "1m"}, {24 * time.Hour, "24h"}, {90 * time.Minute, "1h30m"},
		{time.Hour + 5*time.Second, "1h0m5s"}, {100 * time.Millisecond, "100ms"}, {90 * time.Second, "1m30s"},
	}
	for _, tt := range tests {
		if got := FormatDuration(tt.in); got != tt.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tt.in, got, tt.want)
		}
		if back, err := time.ParseDuration(FormatDuration(tt.in)); err != nil || back != tt.in {
			t.Errorf("ParseDuration(FormatDuration(%v)) = %v, %v", tt.in, back, err)
		}
	}
}

func TestListenCollisions(t *testing.T) {
	tests := []struct {
		a, b       string
		aKind      Kind
		bKind      Kind
		collide    bool
		comparable bool
	}{
		{"tcp://127.0.0.1:5570", "tcp://127.0.0.1:5570", KindEndpoint, KindEndpoint, true, true},
		{"tcp://127.0.0.1:5570", "127.0.0.1:5570", KindEndpoint, KindHostPort, true, true},
		{"tcp://*:5570", "tcp://10.0.0.1:5570", KindEndpoint, KindEndpoint, true, true},
		{"tcp://0.0.0.0:5570", "127.0.0.1:5570", KindEndpoint, KindHostPort, true, true},
		{"tcp://localhost:5570", "tcp://127.0.0.1:5570", KindEndpoint, KindEndpoint, true, true},
		{"tcp://127.0.0.1:5570", "tcp://127.0.0.1:5571", KindEndpoint, KindEndpoint, false, true},
		{"tcp://10.0.0.1:5570", "tcp://10.0.0.2:5570", KindEndpoint, KindEndpoint, false, true},
		{"ipc:///tmp/a", "ipc:///tmp/a", KindEndpoint, KindEndpoint, true, true},
		{"ipc:///tmp/a", "inproc:///tmp/a", KindEndpoint, KindEndpoint, false, true},
		{"tcp://127.0.0.1:*", "tcp://127.0.0.1:*", KindEndpoint, KindEndpoint, false, false},
		{"", "", KindHostPort, KindHostPort, false, false},
	}
	for _, tt := range tests {
		a, okA := listenOf(tt.aKind, tt.a)
		b, okB := listenOf(tt.bKind, tt.b)
		if okA && okB != tt.comparable {
			t.Errorf("%q, %q: comparable %v, want %v", tt.a, tt.b, okA && okB, tt.comparable)
		}
		if got := okA && okB && a.collides(b); got != tt.collide {
			t.Errorf("%q vs %q: collide %v, want %v", tt.a, tt.b, got, tt.collide)
		}
	}
}

func TestCoerceFileValues(t *testing.T) {
	k := func(name string) Key { x, _ := Lookup(name); return x }
	tests := []struct {
		key  string
		raw  any
		want any
		ok   bool
	}{
		{"heartbeat.liveness", float64(4), 4, true}, // JSON numbers
		{"heartbeat.liveness", int64(4), 4, true},   // TOML integers
		{"heartbeat.liveness", "4", 4, true},
		{"heartbeat.liveness", 4.5, nil, false},
		{"backoff.jitter", 1, 1.0, true},
		{"heartbeat.interval", "2s", 2 * time.Second, true},
		{"heartbeat.interval", 0, time.Duration(0), true},
		{"heartbeat.interval", 2, nil, false},
		{"console.read_only", "true", true, true},
		{"console.read_only", 1, nil, false},
		{"crawl.max_body", 4096, int64(4096), true},
		{"crawl.max_body", -1, nil, false},
		{"crawl.user_agent", nil, "", true},
		{"crawl.user_agent", 3, nil, false},
		{"console.palette", map[string]any{"a": 12}, map[string]string{"a": "12"}, true},
		{"console.palette", map[string]any{"a": []any{1}}, nil, false},
		{"console.palette", nil, map[string]string{}, true},
		{"console.palette", 3, nil, false},
	}
	for _, tt := range tests {
		got, ok := coerce(k(tt.key), tt.raw)
		if ok != tt.ok {
			t.Errorf("coerce(%s, %#v) ok = %v, want %v", tt.key, tt.raw, ok, tt.ok)
			continue
		}
		if ok && formatText(k(tt.key), got) != formatText(k(tt.key), tt.want) {
			t.Errorf("coerce(%s, %#v) = %#v, want %#v", tt.key, tt.raw, got, tt.want)
		}
	}
}
