package tui

import (
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"drover/filter"
	"drover/tui/common"
)

// filterEditor is the filter line's component: a text input whose text is
// checked against the filter grammar on enter.
type filterEditor struct {
	input textinput.Model
	err   string // why the last enter was refused
}

// filterExample ends the editor's hint line.
const filterExample = "e.g. state=failed host=example.com worker=ID or any text"

func newFilterEditor() filterEditor {
	in := textinput.New()
	in.Prompt = "/"
	in.Placeholder = "text, state=failed, host=example.com, worker=ID"
	in.CharLimit = 256
	return filterEditor{input: in}
}

// setStyles styles the input for a theme.
func (e *filterEditor) setStyles(s *common.Styles, dark bool) {
	is := textinput.DefaultStyles(dark)
	is.Focused.Prompt = s.Accent
	is.Focused.Text = s.Text
	is.Focused.Placeholder = s.Muted
	is.Blurred.Prompt = s.Muted
	// A steady cursor: blinking would redraw twice a second over SSH.
	is.Cursor.Blink = false
	e.input.SetStyles(is)
}

// filterKeys is the editor's keymap; every other key edits the text.
func filterKeys(k *keyMap) keymap {
	return keymap{
		{key: k.Apply, run: (*model).applyFilter},
		{key: k.Cancel, run: func(m *model) tea.Cmd {
			m.closeFilter()
			return nil
		}},
		{key: k.ForceQuit, run: func(m *model) tea.Cmd {
			m.closeFilter()
			return m.quit()
		}},
	}
}

// filterHints are the editor's keys on the hint line.
func filterHints(k *keyMap) []key.Binding { return []key.Binding{k.Apply, k.Cancel} }

// openFilter opens the filter editor on the view's filter.
func (m *model) openFilter() tea.Cmd {
	m.mode = modeFilter
	m.editor.err = ""
	m.editor.input.SetValue(m.pane().filter)
	m.editor.input.CursorEnd()
	return m.editor.input.Focus()
}

// closeFilter leaves the editor, the view's filter as it was.
func (m *model) closeFilter() {
	m.mode = modeNormal
	m.editor.input.Blur()
	m.editor.err = ""
}

// applyFilter checks the text's grammar and, if it parses, makes it the
// view's filter; if not, the editor stays open saying why.
func (m *model) applyFilter() tea.Cmd {
	f, err := filter.Parse(m.editor.input.Value())
	if err != nil {
		m.editor.err = err.Error()
		return nil
	}
	m.closeFilter()
	p := m.pane()
	if f.String() == p.filter {
		return nil
	}
	p.filter = f.String()
	return m.basisChanged(p)
}

// filterKey routes a key press in the editor: its keymap, else the text.
func (m *model) filterKey(k tea.KeyPressMsg) tea.Cmd {
	if b := m.filterKeys.find(k); b != nil {
		return b.run(m)
	}
	var cmd tea.Cmd
	m.editor.input, cmd = m.editor.input.Update(k)
	m.editor.err = ""
	return cmd
}
