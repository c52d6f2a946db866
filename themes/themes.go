// Package themes holds the console's Lip Gloss palettes: the built-in dark
// (default), light, high-contrast and mono themes, custom palettes read from
// configuration, and the rules that pick one (NO_COLOR, the terminal's
// background colour, an explicit name).
//
// A theme only assigns colours to roles; the console builds its styles from
// the roles and always shows state by word or symbol too, so a mono theme
// (or a terminal that drops colour) loses nothing but colour.
package themes

import (
	"fmt"
	"image/color"
	"slices"
	"strings"

	"charm.land/lipgloss/v2"
)

// Role names one colour slot of a palette. Custom palettes in configuration
// are maps from these names to colours.
type Role string

// The roles every palette fills.
const (
	Text       Role = "text"        // ordinary cell text
	Muted      Role = "muted"       // secondary text: column titles, hints, ages
	Accent     Role = "accent"      // keys in hints, the active view tab, the focused button
	Title      Role = "title"       // the header's product line
	SelectedFg Role = "selected_fg" // text of the selected row
	SelectedBg Role = "selected_bg" // background of the selected row
	Marked     Role = "marked"      // rows marked with space or *
	OK         Role = "ok"          // live, done, idle
	Warn       Role = "warn"        // backoff, draining, PAUSED
	Error      Role = "error"       // failed, lost, STALE
	Info       Role = "info"        // dispatched, busy, flash messages
	Border     Role = "border"      // dialog and pane borders
)

// roles lists every role in display order.
var roles = []Role{Text, Muted, Accent, Title, SelectedFg, SelectedBg, Marked, OK, Warn, Error, Info, Border}

// Roles returns every role a palette fills, in a stable order.
func Roles() []Role { return slices.Clone(roles) }

// Palette assigns a colour to each role. A missing role renders in the
// terminal's default colour.
type Palette map[Role]color.Color

// Theme is a named palette.
type Theme struct {
	// Name is how configuration, the --theme flag and the console's `t` key
	// refer to the theme.
	Name string
	// Dark says the palette is meant for a dark terminal background.
	Dark bool
	// Mono themes carry no colour at all: the console marks selection and
	// focus with reverse video, bold and symbols only.
	Mono bool
	// Palette holds the colours; nil for a mono theme.
	Palette Palette
}

// Color returns the colour of a role, or lipgloss.NoColor{} (the terminal's
// default) for a mono theme or a role the palette leaves out.
func (t Theme) Color(r Role) color.Color {
	if t.Mono {
		return lipgloss.NoColor{}
	}
	if c, ok := t.Palette[r]; ok && c != nil {
		return c
	}
	return lipgloss.NoColor{}
}

// Names of the built-in themes.
const (
	NameDark         = "dark"
	NameLight        = "light"
	NameHighContrast = "high-contrast"
	NameMono         = "mono"
)

// builtins in the order the console's `t` key cycles through them.
var builtins = []Theme{
	{
		Name: NameDark, Dark: true,
		Palette: Palette{
			Text: hex("#D8DEE9"), Muted: hex("#7B8496"), Accent: hex("#7AA2F7"), Title: hex("#BB9AF7"),
			SelectedFg: hex("#FFFFFF"), SelectedBg: hex("#2E4A7D"), Marked: hex("#E0AF68"),
			OK: hex("#9ECE6A"), Warn: hex("#E0AF68"), Error: hex("#F7768E"), Info: hex("#7DCFFF"),
			Border: hex("#565F89"),
		},
	},
	{
		Name: NameLight, Dark: false,
		Palette: Palette{
			Text: hex("#1F2328"), Muted: hex("#656D76"), Accent: hex("#0969DA"), Title: hex("#8250DF"),
			SelectedFg: hex("#FFFFFF"), SelectedBg: hex("#0969DA"), Marked: hex("#953800"),
			OK: hex("#1A7F37"), Warn: hex("#9A6700"), Error: hex("#CF222E"), Info: hex("#0550AE"),
			Border: hex("#8C959F"),
		},
	},
	{
		// High contrast sticks to the 16 basic ANSI colours, which every
		// terminal (and every SSH hop) renders, bright on black.
		Name: NameHighContrast, Dark: true,
		Palette: Palette{
			Text: lipgloss.BrightWhite, Muted: lipgloss.White, Accent: lipgloss.BrightCyan, Title: lipgloss.BrightYellow,
			SelectedFg: lipgloss.Black, SelectedBg: lipgloss.BrightYellow, Marked: lipgloss.BrightMagenta,
			OK: lipgloss.BrightGreen, Warn: lipgloss.BrightYellow, Error: lipgloss.BrightRed, Info: lipgloss.BrightCyan,
			Border: lipgloss.BrightWhite,
		},
	},
	{Name: NameMono, Dark: true, Mono: true},
}

// hex parses a colour literal of this file; the literals are constants, so a
// bad one is a programming error caught by the package's tests.
func hex(s string) color.Color {
	c, err := ParseColor(s)
	if err != nil {
		return lipgloss.NoColor{}
	}
	return c
}

// Names returns the built-in theme names in the order `t` cycles them.
func Names() []string {
	out := make([]string, len(builtins))
	for i, t := range builtins {
		out[i] = t.Name
	}
	return out
}

// Builtins returns the built-in themes in the order `t` cycles them.
func Builtins() []Theme {
	out := make([]Theme, len(builtins))
	for i, t := range builtins {
		out[i] = t.clone()
	}
	return out
}

// Default returns the default theme (dark).
func Default() Theme { return builtins[0].clone() }

// ByName returns the built-in theme with that name (case-insensitive).
func ByName(name string) (Theme, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, t := range builtins {
		if t.Name == n {
			return t.clone(), nil
		}
	}
	return Theme{}, fmt.Errorf("theme %q: unknown, want one of %s", name, strings.Join(Names(), ", "))
}

// clone copies the palette so callers cannot change the built-ins.
func (t Theme) clone() Theme {
	if t.Palette != nil {
		p := make(Palette, len(t.Palette))
		for k, v := range t.Palette {
			p[k] = v
		}
		t.Palette = p
	}
	return t
}
