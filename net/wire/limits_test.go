package wire

import (
	"testing"
	"unicode/utf8"
)

// TestClip: a text is cut to its limit on a rune boundary, never inside a
// rune, and a negative limit leaves nothing.
func TestClip(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abc", 3, "abc"},
		{"abc", 2, "ab"},
		{"abc", 0, ""},
		{"abc", -1, ""},
		{"aé", 2, "a"}, // é is two bytes: not cut in half
		{"aé", 3, "aé"},
		{"日本", 4, "日"},
		{"日本", 2, ""},
	} {
		got := Clip(tc.s, tc.n)
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
