package themes

import (
	"slices"
	"testing"
)

func TestForBackground(t *testing.T) {
	if got := ForBackground(true).Name; got != NameDark {
		t.Errorf("dark background: %s, want dark", got)
	}
	if got := ForBackground(false).Name; got != NameLight {
		t.Errorf("light background: %s, want light", got)
	}
}

func TestNoColorRequested(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"NO_COLOR": ""}, false}, // set but empty does not count
		{map[string]string{"NO_COLOR": "1"}, true},
		{map[string]string{"NO_COLOR": "yes"}, true},
	}
	for _, tc := range tests {
		got := NoColorRequested(func(k string) string { return tc.env[k] })
		if got != tc.want {
			t.Errorf("env %v: %v, want %v", tc.env, got, tc.want)
		}
	}
	if NoColorRequested(nil) {
		t.Error("nil getenv: want false")
	}
}

func TestSet(t *testing.T) {
	custom, err := Custom("ocean", "dark", map[string]string{"accent": "#00aaff"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSet(custom)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"dark", "light", "high-contrast", "mono", "ocean"}
	if got := s.Names(); !slices.Equal(got, want) {
		t.Fatalf("Names = %v, want %v", got, want)
	}
	cycle := []struct{ from, to string }{
		{"dark", "light"}, {"light", "high-contrast"}, {"high-contrast", "mono"},
		{"mono", "ocean"}, {"ocean", "dark"}, {"nope", "dark"},
	}
	for _, c := range cycle {
		if got := s.Next(c.from).Name; got != c.to {
			t.Errorf("Next(%s) = %s, want %s", c.from, got, c.to)
		}
	}
	if _, err := s.Get("OCEAN"); err != nil {
		t.Errorf("Get(OCEAN): %v", err)
	}
	if _, err := s.Get("nope"); err == nil {
		t.Error("Get(nope): want error")
	}
	if _, err := NewSet(custom, custom); err == nil {
		t.Error("duplicate custom theme: want error")
	}
	if _, err := NewSet(Theme{}); err == nil {
		t.Error("nameless custom theme: want error")
	}
}
