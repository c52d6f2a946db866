package common

import (
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{999 * time.Millisecond, "0s"},
		{12 * time.Second, "12s"},
		{-12 * time.Second, "12s"},
		{65 * time.Second, "1m05s"},
		{59*time.Minute + 59*time.Second, "59m59s"},
		{2*time.Hour + 5*time.Minute + 30*time.Second, "2h05m"},
		{3*24*time.Hour + 4*time.Hour, "3d04h"},
	}
	for _, tc := range tests {
		if got := Duration(tc.d); got != tc.want {
			t.Errorf("Duration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestSinceUntil(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name string
		fn   func(now, t time.Time) string
		t    time.Time
		want string
	}{
		{"since zero", Since, time.Time{}, "-"},
		{"since past", Since, now.Add(-90 * time.Second), "1m30s"},
		{"since future clamps", Since, now.Add(time.Second), "0s"},
		{"until zero", Until, time.Time{}, "-"},
		{"until future", Until, now.Add(42 * time.Second), "in 42s"},
		{"until past", Until, now.Add(-time.Second), "now"},
		{"until now", Until, now, "now"},
	}
	for _, tc := range tests {
		if got := tc.fn(now, tc.t); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestGroupedCompactRate(t *testing.T) {
	grouped := []struct {
		n    int
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {1234567, "1,234,567"}, {-45678, "-45,678"}, {100000, "100,000"}}
	for _, tc := range grouped {
		if got := Grouped(tc.n); got != tc.want {
			t.Errorf("Grouped(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	compact := []struct {
		n    uint64
		want string
	}{{0, "0"}, {9999, "9999"}, {10000, "10k"}, {12345, "12.3k"}, {1_000_000, "1M"}, {1_234_567, "1.23M"}, {4_500_000_000, "4.5G"}}
	for _, tc := range compact {
		if got := Compact(tc.n); got != tc.want {
			t.Errorf("Compact(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	rates := []struct {
		r    float64
		want string
	}{{-1, "0/s"}, {0, "0/s"}, {12.54, "12.5/s"}, {3, "3/s"}, {3400, "3400/s"}, {34000, "34k/s"}}
	for _, tc := range rates {
		if got := Rate(tc.r); got != tc.want {
			t.Errorf("Rate(%v) = %q, want %q", tc.r, got, tc.want)
		}
	}
}

func TestSparkline(t *testing.T) {
	tests := []struct {
		vals  []float64
		width int
		want  string
	}{
		{nil, 5, ""},
		{[]float64{1, 2}, 0, ""},
		{[]float64{0, 0, 0}, 5, "▁▁▁"},
		{[]float64{0, 7, 14}, 5, "▁▄█"},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8}, 3, "▆▇█"}, // only the last three, scaled to 8
	}
	for _, tc := range tests {
		if got := Sparkline(tc.vals, tc.width); got != tc.want {
			t.Errorf("Sparkline(%v, %d) = %q, want %q", tc.vals, tc.width, got, tc.want)
		}
	}
}

func TestStateLabel(t *testing.T) {
	tests := []struct{ in, want string }{
		{"failed", "✗ failed"}, {"busy", "● busy"}, {"backoff", "↻ backoff"}, {"", "-"}, {"weird", "weird"},
	}
	for _, tc := range tests {
		if got := StateLabel(tc.in); got != tc.want {
			t.Errorf("StateLabel(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSanitize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain https://example.com/ä", "plain https://example.com/ä"},
		{"two\nlines", "two lines"},
		{"evil\x1b[2Jclear", "evil [2Jclear"},
		{"c1\u009b31m", "c1 31m"},
		{"del\x7f", "del "},
		{"", ""},
	}
	for _, tc := range tests {
		if got := Sanitize(tc.in); got != tc.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
