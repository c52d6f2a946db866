package themes

import (
	"image/color"
	"slices"
	"testing"

	"charm.land/lipgloss/v2"
)

func TestBuiltinsFillEveryRole(t *testing.T) {
	for _, th := range Builtins() {
		t.Run(th.Name, func(t *testing.T) {
			if th.Mono {
				if th.Palette != nil {
					t.Fatalf("mono theme has a palette: %v", th.Palette)
				}
				for _, r := range Roles() {
					if _, ok := th.Color(r).(lipgloss.NoColor); !ok {
						t.Errorf("mono %s = %v, want NoColor", r, th.Color(r))
					}
				}
				return
			}
			for _, r := range Roles() {
				c, ok := th.Palette[r]
				if !ok {
					t.Errorf("role %s missing", r)
					continue
				}
				if _, bad := c.(lipgloss.NoColor); bad {
					t.Errorf("role %s has no colour (bad literal?)", r)
				}
			}
			// Selected text must differ from its background, or the
			// selected row is unreadable.
			if th.Palette[SelectedFg] == th.Palette[SelectedBg] {
				t.Errorf("selected_fg == selected_bg")
			}
		})
	}
}

func TestByNameAndNames(t *testing.T) {
	want := []string{"dark", "light", "high-contrast", "mono"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"dark", "dark", false},
		{"Light", "light", false},
		{" high-contrast ", "high-contrast", false},
		{"mono", "mono", false},
		{"solarized", "", true},
		{"", "", true},
	}
	for _, tc := range tests {
		th, err := ByName(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("ByName(%q) err = %v, wantErr %v", tc.in, err, tc.wantErr)
			continue
		}
		if th.Name != tc.want {
			t.Errorf("ByName(%q) = %q, want %q", tc.in, th.Name, tc.want)
		}
	}
}

func TestBuiltinsAreCopies(t *testing.T) {
	th := Default()
	th.Palette[Text] = color.RGBA{1, 2, 3, 255}
	if Default().Palette[Text] == th.Palette[Text] {
		t.Fatal("changing a returned theme changed the built-in")
	}
}
