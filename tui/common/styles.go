package common

import (
	"charm.land/lipgloss/v2"

	"drover/admin"
	"drover/themes"
)

// Styles are the console's Lip Gloss styles for one theme. Selection, focus
// and state never rely on colour alone: the console adds a gutter symbol,
// brackets or a state word, and mono themes use reverse video and bold.
type Styles struct {
	Theme themes.Theme

	Text, Muted, Title, Accent lipgloss.Style
	// Tabs of the view bar.
	TabActive, TabInactive lipgloss.Style
	// ColumnTitle is a table's header row.
	ColumnTitle lipgloss.Style
	// Selected is the row under the cursor; Marked a row marked for an action.
	Selected, Marked lipgloss.Style
	// State classes for state words and badges.
	OK, Warn, Error, Info lipgloss.Style
	// Badges of the header.
	Live, Stale, Paused, ReadOnly, ReadWrite lipgloss.Style
	// Hint line and help.
	HintKey, HintDesc, HintSep, HelpDisabled lipgloss.Style
	// Dialog box and buttons.
	Border, Button, ButtonFocused lipgloss.Style
}

// NewStyles builds the styles of a theme.
func NewStyles(t themes.Theme) *Styles {
	fg := func(r themes.Role) lipgloss.Style { return lipgloss.NewStyle().Foreground(t.Color(r)) }
	s := &Styles{Theme: t}
	s.Text = fg(themes.Text)
	s.Muted = fg(themes.Muted)
	s.Title = fg(themes.Title).Bold(true)
	s.Accent = fg(themes.Accent)
	s.TabActive = fg(themes.Accent).Bold(true).Underline(true)
	s.TabInactive = fg(themes.Muted)
	s.ColumnTitle = fg(themes.Muted).Bold(true)
	s.Marked = fg(themes.Marked).Bold(true)
	s.OK = fg(themes.OK)
	s.Warn = fg(themes.Warn)
	s.Error = fg(themes.Error).Bold(true)
	s.Info = fg(themes.Info)
	s.Live = fg(themes.OK).Bold(true)
	s.Stale = fg(themes.Error).Bold(true).Reverse(true)
	s.Paused = fg(themes.Warn).Bold(true).Reverse(true)
	s.ReadOnly = fg(themes.Warn).Bold(true)
	s.ReadWrite = fg(themes.Muted)
	s.HintKey = fg(themes.Accent).Bold(true)
	s.HintDesc = fg(themes.Muted)
	s.HintSep = fg(themes.Border)
	s.HelpDisabled = fg(themes.Muted).Strikethrough(true)
	s.Border = fg(themes.Border)
	s.Button = fg(themes.Text)
	if t.Mono {
		s.Selected = lipgloss.NewStyle().Reverse(true).Bold(true)
		s.ButtonFocused = lipgloss.NewStyle().Reverse(true).Bold(true)
		s.Muted = s.Muted.Faint(true)
	} else {
		s.Selected = lipgloss.NewStyle().Foreground(t.Color(themes.SelectedFg)).
			Background(t.Color(themes.SelectedBg)).Bold(true)
		s.ButtonFocused = lipgloss.NewStyle().Foreground(t.Color(themes.SelectedFg)).
			Background(t.Color(themes.SelectedBg)).Bold(true)
	}
	return s
}

// State returns the style of a worker, job or key state word.
func (s *Styles) State(state string) lipgloss.Style {
	switch state {
	case "done", "idle", "ok":
		return s.OK
	case "backoff", "draining", "held", "requested", "throttled":
		return s.Warn
	case "failed", "lost", "internal", "external", "evicted":
		return s.Error
	case "dispatched", "busy", "claimed":
		return s.Info
	default:
		return s.Text
	}
}

// Wait returns the style of why a job waits (admin.JobRow.Wait), as the
// header colours its counts: what an operator may need to act on
// (unroutable, paused, backing off) warns, what holds jobs by design
// (politeness, a reclaim) informs, a job in the store only is muted.
func (s *Styles) Wait(w admin.Wait) lipgloss.Style {
	switch w {
	case admin.WaitUnroutable, admin.WaitPaused, admin.WaitRetry, admin.WaitHostBackoff:
		return s.Warn
	case admin.WaitPolite, admin.WaitReclaim:
		return s.Info
	case admin.WaitPaged:
		return s.Muted
	default:
		return s.Text
	}
}
