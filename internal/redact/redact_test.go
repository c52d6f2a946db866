package redact

import "testing"

func TestURLPassword(t *testing.T) {
	for _, c := range []struct {
		raw, want string
		hidden    bool
	}{
		{"redis://drover:s3cret@r1:6379", "redis://drover:XX@r1:6379", true},
		{"redis://:pw@[::1]:7000", "redis://:XX@[::1]:7000", true},
		{"redis://u:p@ss@host:1", "redis://u:XX@host:1", true}, // the last @ ends the user part
		{"redis://drover@r1:6379", "redis://drover@r1:6379", false},
		{"redis://r1:6379", "redis://r1:6379", false},
		{"/etc/drover/token", "/etc/drover/token", false},
		{"user:pw@host", "user:pw@host", false}, // no scheme: not a URL
	} {
		got, hidden := URLPassword(c.raw, "XX")
		if got != c.want || hidden != c.hidden {
			t.Errorf("URLPassword(%q) = %q, %v; want %q, %v", c.raw, got, hidden, c.want, c.hidden)
		}
	}
}
