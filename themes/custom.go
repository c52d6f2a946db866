package themes

import (
	"errors"
	"fmt"
	"image/color"
	"slices"
	"strconv"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// PaletteError is one bad entry of a custom palette: the role is unknown, or
// its colour does not parse.
type PaletteError struct {
	Theme  string // the custom theme's name
	Role   string // the role as written in configuration
	Value  string // the colour as written in configuration
	Reason string // what was wrong and what was expected
}

// Error names the theme, the role, the value and what was expected.
func (e *PaletteError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("theme %q: role %q: %s", e.Theme, e.Role, e.Reason)
	}
	return fmt.Sprintf("theme %q: role %q: colour %q: %s", e.Theme, e.Role, e.Value, e.Reason)
}

// IsPaletteError reports whether err is or wraps a *PaletteError.
func IsPaletteError(err error) bool {
	var pe *PaletteError
	return errors.As(err, &pe)
}

// colourForms says what ParseColor accepts, for error messages.
const colourForms = "want #RGB, #RRGGBB, an ANSI colour number 0-255, or a basic colour name (red, bright-blue, ...)"

// basicNames maps the 16 basic ANSI colour names to their colours.
var basicNames = map[string]ansi.BasicColor{
	"black": lipgloss.Black, "red": lipgloss.Red, "green": lipgloss.Green, "yellow": lipgloss.Yellow,
	"blue": lipgloss.Blue, "magenta": lipgloss.Magenta, "cyan": lipgloss.Cyan, "white": lipgloss.White,
	"bright-black": lipgloss.BrightBlack, "bright-red": lipgloss.BrightRed, "bright-green": lipgloss.BrightGreen,
	"bright-yellow": lipgloss.BrightYellow, "bright-blue": lipgloss.BrightBlue, "bright-magenta": lipgloss.BrightMagenta,
	"bright-cyan": lipgloss.BrightCyan, "bright-white": lipgloss.BrightWhite,
}

// ParseColor parses a colour as configuration writes it: "#RGB" or
// "#RRGGBB" hex, an ANSI colour number 0-255, or one of the 16 basic colour
// names ("red", "bright-blue", "grey" is not one). Unlike lipgloss.Color it
// reports what was wrong instead of silently giving no colour.
func ParseColor(s string) (color.Color, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	switch {
	case v == "":
		return nil, fmt.Errorf("empty colour: %s", colourForms)
	case strings.HasPrefix(v, "#"):
		digits := v[1:]
		if len(digits) != 3 && len(digits) != 6 {
			return nil, fmt.Errorf("colour %q: %d hex digits, %s", s, len(digits), colourForms)
		}
		n, err := strconv.ParseUint(digits, 16, 32)
		if err != nil {
			return nil, fmt.Errorf("colour %q: not hex, %s", s, colourForms)
		}
		if len(digits) == 3 {
			r, g, b := uint8(n>>8&0xf), uint8(n>>4&0xf), uint8(n&0xf)
			return color.RGBA{R: r * 17, G: g * 17, B: b * 17, A: 0xff}, nil
		}
		return color.RGBA{R: uint8(n >> 16), G: uint8(n >> 8), B: uint8(n), A: 0xff}, nil
	case v[0] >= '0' && v[0] <= '9':
		n, err := strconv.Atoi(v)
		if err != nil || n > 255 {
			return nil, fmt.Errorf("colour %q: not an ANSI number 0-255, %s", s, colourForms)
		}
		if n < 16 {
			return ansi.BasicColor(n), nil
		}
		return ansi.IndexedColor(n), nil
	default:
		if c, ok := basicNames[v]; ok {
			return c, nil
		}
		return nil, fmt.Errorf("colour %q: unknown name, %s", s, colourForms)
	}
}

// Custom builds a theme from configuration: the named built-in base (empty
// means dark) with the given roles replaced. Every entry is checked; the
// error joins one *PaletteError per bad entry, in role order, each naming
// the role and the bad value. A custom theme may not reuse a built-in name.
func Custom(name, base string, colours map[string]string) (Theme, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return Theme{}, errors.New("custom theme: empty name, want a name such as \"solarized\"")
	}
	if slices.Contains(Names(), strings.ToLower(name)) {
		return Theme{}, fmt.Errorf("custom theme %q: the name of a built-in theme, want another name", name)
	}
	if base == "" {
		base = NameDark
	}
	t, err := ByName(base)
	if err != nil {
		return Theme{}, fmt.Errorf("custom theme %q: base: %w", name, err)
	}
	if t.Mono {
		// A palette on a mono base makes a colour theme after all.
		t.Mono = false
	}
	if t.Palette == nil {
		t.Palette = Palette{}
	}
	t.Name = name

	keys := make([]string, 0, len(colours))
	for k := range colours {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var errs []error
	for _, k := range keys {
		v := colours[k]
		role := Role(strings.ToLower(strings.TrimSpace(k)))
		if !slices.Contains(roles, role) {
			errs = append(errs, &PaletteError{Theme: name, Role: k, Reason: "unknown role, want one of " + roleList()})
			continue
		}
		c, err := ParseColor(v)
		if err != nil {
			errs = append(errs, &PaletteError{Theme: name, Role: k, Value: v, Reason: colourForms})
			continue
		}
		t.Palette[role] = c
	}
	if len(errs) > 0 {
		return Theme{}, errors.Join(errs...)
	}
	return t, nil
}

func roleList() string {
	s := make([]string, len(roles))
	for i, r := range roles {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}
