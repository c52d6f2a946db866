package themes

import (
	"errors"
	"image/color"
	"strings"
	"testing"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

func TestParseColor(t *testing.T) {
	tests := []struct {
		in   string
		want color.Color
		err  string // substring of the error; empty: no error
	}{
		{"#ff8800", color.RGBA{0xff, 0x88, 0x00, 0xff}, ""},
		{"#FF8800", color.RGBA{0xff, 0x88, 0x00, 0xff}, ""},
		{"#f80", color.RGBA{0xff, 0x88, 0x00, 0xff}, ""},
		{" 9 ", ansi.BasicColor(9), ""},
		{"0", ansi.BasicColor(0), ""},
		{"196", ansi.IndexedColor(196), ""},
		{"red", lipgloss.Red, ""},
		{"Bright-Blue", lipgloss.BrightBlue, ""},
		{"", nil, "empty colour"},
		{"#ff88", nil, "4 hex digits"},
		{"#gggggg", nil, "not hex"},
		{"256", nil, "0-255"},
		{"12a", nil, "0-255"},
		{"grey", nil, "unknown name"},
	}
	for _, tc := range tests {
		got, err := ParseColor(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseColor(%q) err = %v, want containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseColor(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseColor(%q) = %#v, want %#v", tc.in, got, tc.want)
		}
	}
}

func TestCustom(t *testing.T) {
	th, err := Custom("sunset", "light", map[string]string{"accent": "#ff8800", "ERROR": "196"})
	if err != nil {
		t.Fatal(err)
	}
	if th.Name != "sunset" || th.Dark || th.Mono {
		t.Errorf("theme = %+v, want a light-based colour theme named sunset", th)
	}
	if got := th.Color(Accent); got != (color.RGBA{0xff, 0x88, 0, 0xff}) {
		t.Errorf("accent = %v", got)
	}
	if got := th.Color(Error); got != ansi.IndexedColor(196) {
		t.Errorf("error = %v", got)
	}
	light, _ := ByName(NameLight)
	if th.Color(Text) != light.Color(Text) {
		t.Error("unset role should come from the base")
	}

	onMono, err := Custom("ink", "mono", map[string]string{"error": "red"})
	if err != nil {
		t.Fatal(err)
	}
	if onMono.Mono || onMono.Color(Error) != lipgloss.Red {
		t.Errorf("palette on a mono base: %+v", onMono)
	}
}

func TestCustomErrors(t *testing.T) {
	tests := []struct {
		name    string
		theme   string
		base    string
		colours map[string]string
		want    []string // every substring must appear in the error
		palette bool     // the error wraps *PaletteError
	}{
		{
			name: "bad value names role and value", theme: "x",
			colours: map[string]string{"accent": "#12345"},
			want:    []string{`theme "x"`, `role "accent"`, `colour "#12345"`, "want #RGB"}, palette: true,
		},
		{
			name: "unknown role lists roles", theme: "x",
			colours: map[string]string{"acent": "#123"},
			want:    []string{`role "acent"`, "unknown role", "want one of text, muted"}, palette: true,
		},
		{
			name: "every bad entry reported", theme: "x",
			colours: map[string]string{"ok": "nope", "warn": "999", "text": "#fff"},
			want:    []string{`role "ok"`, `colour "nope"`, `role "warn"`, `colour "999"`}, palette: true,
		},
		{name: "bad base", theme: "x", base: "neon", want: []string{`base`, `"neon"`, "want one of dark"}},
		{name: "empty name", theme: " ", want: []string{"empty name"}},
		{name: "builtin name", theme: "Dark", want: []string{"built-in"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Custom(tc.theme, tc.base, tc.colours)
			if err == nil {
				t.Fatal("want error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if IsPaletteError(err) != tc.palette {
				t.Errorf("IsPaletteError = %v, want %v", !tc.palette, tc.palette)
			}
		})
	}
}

func TestPaletteErrorsAreOrdered(t *testing.T) {
	_, err := Custom("x", "", map[string]string{"warn": "bad", "border": "bad", "ok": "bad"})
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		t.Fatalf("want joined errors, got %v", err)
	}
	var roles []string
	for _, e := range joined.Unwrap() {
		var pe *PaletteError
		if !errors.As(e, &pe) {
			t.Fatalf("not a PaletteError: %v", e)
		}
		roles = append(roles, pe.Role)
	}
	if strings.Join(roles, ",") != "border,ok,warn" {
		t.Errorf("roles in error order %v, want border,ok,warn", roles)
	}
}
