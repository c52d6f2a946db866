// Package common holds what every console component shares, in the manner
// of soft-serve's pkg/ui/common: the screen size, the styles built from the
// current theme, and the clock. Components embed Common; only the root model
// returns a tea.View.
package common

import (
	"time"
)

// Common is embedded by each component of the console.
type Common struct {
	// Width and Height are the cells the component may draw in.
	Width, Height int
	// Styles are built from the current theme; shared, never nil once the
	// root model is constructed.
	Styles *Styles
	// Clock gives the time used for ages and countdowns; injected so golden
	// tests render the same text on every run.
	Clock func() time.Time
}

// Now returns the clock's time, or time.Now when no clock was injected.
func (c Common) Now() time.Time {
	if c.Clock == nil {
		return time.Now()
	}
	return c.Clock()
}

// SetSize returns a copy with another drawing area.
func (c Common) SetSize(w, h int) Common {
	c.Width, c.Height = max(w, 0), max(h, 0)
	return c
}
