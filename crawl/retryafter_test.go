package crawl

import (
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"2", 2 * time.Second},
		{" 120 ", 2 * time.Minute},
		{"0", 0},
		{"-5", 0},
		{"1.5", 0},
		{"soon", 0},
		{"Sun, 29 Nov 2026 12:00:30 GMT", 30 * time.Second},
		{"Sunday, 29-Nov-26 12:01:00 GMT", time.Minute},
		{"Sun Nov 29 12:00:05 2026", 5 * time.Second},
		{"Sun, 29 Nov 2026 11:59:00 GMT", 0},
		{"99999999999999999999", 0},
		{"9999999999999", time.Duration(int64(1<<63-1)/int64(time.Second)) * time.Second},
	}
	for _, tt := range tests {
		if got := ParseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
