// Package dialog is the console's confirmation dialog for destructive
// actions. It lists what the action affects and opens with Cancel focused:
// enter on Cancel closes it without acting, so a stray enter never evicts a
// worker. Focus moves with tab, shift+tab and the arrow keys; focus is shown
// by brackets and reverse video as well as colour.
package dialog

import (
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"drover/themes"
	"drover/tui/common"
)

// Button is one of the dialog's two buttons.
type Button int

// The buttons, Cancel first: it is focused when the dialog opens.
const (
	Cancel Button = iota
	Confirm
)

// ClosedMsg is sent when the dialog closes, by a button or by esc.
type ClosedMsg struct {
	// ID is the caller's name for the dialog (the action it guards).
	ID string
	// Confirmed is true only for enter on the confirm button.
	Confirmed bool
}

// KeyMap is the dialog's keys. The dialog answers them and nothing else;
// the console's hint line shows them while the dialog is open.
type KeyMap struct {
	Switch, Press, Cancel key.Binding
}

// Keys are the dialog's keys.
var Keys = KeyMap{
	Switch: key.NewBinding(key.WithKeys("tab", "shift+tab", "left", "right", "h", "l"), key.WithHelp("tab", "switch button")),
	Press:  key.NewBinding(key.WithKeys("enter", "space"), key.WithHelp("enter", "press")),
	Cancel: key.NewBinding(key.WithKeys("esc", "q", "n"), key.WithHelp("esc", "cancel")),
}

// ShortHelp lists the keys for a hint line (help.KeyMap).
func (k KeyMap) ShortHelp() []key.Binding { return []key.Binding{k.Switch, k.Press, k.Cancel} }

// FullHelp lists the keys in one group (help.KeyMap).
func (k KeyMap) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }

// Model is an open confirmation dialog.
type Model struct {
	common.Common
	ID      string
	Title   string
	Items   []string // what the action affects, one per line
	Note    string   // what will happen
	Confirm string   // the confirm button's label, e.g. "Evict"
	focus   Button
}

// New opens a dialog with Cancel focused.
func New(c common.Common, id, title string, items []string, note, confirm string) Model {
	if confirm == "" {
		confirm = "Confirm"
	}
	return Model{Common: c, ID: id, Title: title, Items: items, Note: note, Confirm: confirm, focus: Cancel}
}

// Focused returns the focused button.
func (m Model) Focused() Button { return m.focus }

// Update handles a key press. enter or space presses the focused button,
// esc and q cancel, tab, shift+tab and the arrows move focus; other keys
// are ignored while the dialog is open.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return m, nil
	}
	switch {
	case key.Matches(k, Keys.Switch):
		if m.focus == Cancel {
			m.focus = Confirm
		} else {
			m.focus = Cancel
		}
	case key.Matches(k, Keys.Press):
		return m, m.closed(m.focus == Confirm)
	case key.Matches(k, Keys.Cancel):
		return m, m.closed(false)
	}
	return m, nil
}

func (m Model) closed(confirmed bool) tea.Cmd {
	msg := ClosedMsg{ID: m.ID, Confirmed: confirmed}
	return func() tea.Msg { return msg }
}

// View renders the dialog box, at most Width cells wide and Height lines
// tall; items that do not fit end in "… and N more".
func (m Model) View() string {
	w := min(max(m.Width-4, 20), 72)
	inner := w - 4 // border and padding
	if inner <= 0 {
		return ""
	}
	var lines []string
	lines = append(lines, m.Styles.Title.Render(fit(m.Title, inner)), "")
	var note []string
	if m.Note != "" {
		note = strings.Split(ansi.Wordwrap(common.Sanitize(m.Note), inner, " "), "\n")
		note = note[:min(len(note), 3)]
	}
	// Title, blank, items, blank, note, blank, buttons, plus the border.
	room := m.Height - 7 - len(note)
	if len(note) == 0 {
		room++
	}
	items := m.Items
	if room < 1 {
		room = 1
	}
	if len(items) > room {
		more := len(items) - (room - 1)
		items = append(items[:room-1:room-1], "… and "+strconv.Itoa(more)+" more")
	}
	for _, it := range items {
		lines = append(lines, fit("  "+it, inner))
	}
	if len(note) > 0 {
		lines = append(lines, "")
		for _, l := range note {
			lines = append(lines, m.Styles.Muted.Render(fit(l, inner)))
		}
	}
	lines = append(lines, "", m.buttons(inner))
	box := lipgloss.NewStyle().
		Border(lipgloss.RoundedBorder()).
		BorderForeground(m.Styles.Theme.Color(themes.Border)).
		Padding(0, 1).
		Width(w)
	return box.Render(strings.Join(lines, "\n"))
}

func (m Model) buttons(inner int) string {
	label := func(b Button, text string) string {
		if m.focus == b {
			return m.Styles.ButtonFocused.Render("[ " + text + " ]")
		}
		return m.Styles.Button.Render("  " + text + "  ")
	}
	row := label(Cancel, "Cancel") + "  " + label(Confirm, m.Confirm)
	if pad := inner - ansi.StringWidth(row); pad > 0 {
		row = strings.Repeat(" ", pad) + row
	}
	return row
}

func fit(s string, w int) string {
	s = common.Sanitize(s)
	if ansi.StringWidth(s) > w {
		return ansi.Truncate(s, w, "…")
	}
	return s
}
