package themes

import (
	"fmt"
	"strings"
)

// NoColorRequested reports whether the environment asks for no colour:
// NO_COLOR set to a non-empty value (https://no-color.org). getenv is
// os.Getenv in production and a map lookup in tests.
func NoColorRequested(getenv func(string) string) bool {
	if getenv == nil {
		return false
	}
	return getenv("NO_COLOR") != ""
}

// ForBackground returns the built-in theme that suits a terminal background:
// dark for a dark one, light for a light one. Bubble Tea reports the
// background with tea.BackgroundColorMsg, whose IsDark gives the argument.
func ForBackground(isDark bool) Theme {
	if isDark {
		return Default()
	}
	t, _ := ByName(NameLight)
	return t
}

// Set is the list of themes the console offers: the built-ins followed by
// custom ones from configuration.
type Set struct {
	themes []Theme
}

// NewSet returns the built-ins followed by the custom themes. A custom theme
// whose name repeats an earlier one is an error naming it.
func NewSet(custom ...Theme) (*Set, error) {
	s := &Set{themes: Builtins()}
	for _, t := range custom {
		if t.Name == "" {
			return nil, fmt.Errorf("theme set: a custom theme has no name, want one per theme")
		}
		if _, ok := s.index(t.Name); ok {
			return nil, fmt.Errorf("theme set: theme %q defined twice, want unique names", t.Name)
		}
		s.themes = append(s.themes, t.clone())
	}
	return s, nil
}

// Names lists the set's themes in cycling order.
func (s *Set) Names() []string {
	out := make([]string, len(s.themes))
	for i, t := range s.themes {
		out[i] = t.Name
	}
	return out
}

// Get returns the theme with that name (case-insensitive).
func (s *Set) Get(name string) (Theme, error) {
	i, ok := s.index(name)
	if !ok {
		return Theme{}, fmt.Errorf("theme %q: unknown, want one of %s", name, strings.Join(s.Names(), ", "))
	}
	return s.themes[i].clone(), nil
}

// Next returns the theme after the named one, wrapping around; an unknown
// name gives the first theme.
func (s *Set) Next(name string) Theme {
	i, ok := s.index(name)
	if !ok {
		return s.themes[0].clone()
	}
	return s.themes[(i+1)%len(s.themes)].clone()
}

func (s *Set) index(name string) (int, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	for i, t := range s.themes {
		if strings.ToLower(t.Name) == n {
			return i, true
		}
	}
	return 0, false
}
