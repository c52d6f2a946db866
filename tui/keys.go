package tui

import (
	"slices"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// keyMap is the console's key vocabulary: every key defined once, with the
// text help shows for it. No key does anything by being here: a component
// answers a key only through a binding in its keymap (component.go), and
// help is generated from those keymaps.
type keyMap struct {
	Up, Down, Top, Bottom, PageUp, PageDown key.Binding
	Workers, Jobs, Waiters, Retries, Events key.Binding
	Crawls                                  key.Binding
	Filter, Clear, Sort, Reverse            key.Binding
	Detail, Mark, MarkAll                   key.Binding
	Evict, Drain, Requeue, Pause            key.Binding
	Theme, Refresh, Help, Quit              key.Binding
	// The keys of the filter editor and the help screen.
	Apply, Cancel, ForceQuit, Scroll, CloseHelp key.Binding
}

func newKeyMap(readOnly bool) keyMap {
	k := keyMap{
		Up:       key.NewBinding(key.WithKeys("k", "up"), key.WithHelp("k/↑", "move up")),
		Down:     key.NewBinding(key.WithKeys("j", "down"), key.WithHelp("j/↓", "move down")),
		Top:      key.NewBinding(key.WithKeys("g", "home"), key.WithHelp("g", "first row")),
		Bottom:   key.NewBinding(key.WithKeys("G", "end"), key.WithHelp("G", "last row")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+f"), key.WithHelp("pgdn", "page down")),
		Workers:  key.NewBinding(key.WithKeys("1"), key.WithHelp("1", "workers")),
		Jobs:     key.NewBinding(key.WithKeys("2"), key.WithHelp("2", "jobs")),
		Waiters:  key.NewBinding(key.WithKeys("3"), key.WithHelp("3", "waiters of the selected key")),
		Retries:  key.NewBinding(key.WithKeys("4"), key.WithHelp("4", "retries and host back-offs")),
		Events:   key.NewBinding(key.WithKeys("5"), key.WithHelp("5", "events")),
		Crawls:   key.NewBinding(key.WithKeys("6"), key.WithHelp("6", "crawls: jobs, pages/s, budget")),
		Filter:   key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter: text or field=value")),
		Clear:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "close pane, clear filter, marks")),
		Sort:     key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "sort by next column")),
		Reverse:  key.NewBinding(key.WithKeys("S"), key.WithHelp("S", "reverse sort")),
		Detail:   key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "detail: attempts, headers, jobs")),
		Mark:     key.NewBinding(key.WithKeys("space"), key.WithHelp("space", "mark / unmark row")),
		MarkAll:  key.NewBinding(key.WithKeys("*"), key.WithHelp("*", "mark every row the filter shows")),
		Evict:    key.NewBinding(key.WithKeys("E"), key.WithHelp("E", "evict worker(s); jobs requeued")),
		Drain:    key.NewBinding(key.WithKeys("D"), key.WithHelp("D", "drain / undrain worker(s)")),
		Requeue:  key.NewBinding(key.WithKeys("R"), key.WithHelp("R", "requeue job(s) / all failed (4)")),
		Pause:    key.NewBinding(key.WithKeys("P"), key.WithHelp("P", "pause / resume dispatch")),
		Theme:    key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "next theme")),
		Refresh:  key.NewBinding(key.WithKeys("ctrl+r"), key.WithHelp("ctrl+r", "refresh now")),
		Help:     key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:     key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit (or ctrl+c)")),

		Apply:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "apply")),
		Cancel:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
		ForceQuit: key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit")),
		Scroll:    key.NewBinding(key.WithKeys("j", "down", "k", "up"), key.WithHelp("j/k", "scroll")),
		// Any key closes help; these are the ones it names.
		CloseHelp: key.NewBinding(key.WithKeys("?", "esc", "q"), key.WithHelp("any key", "close help")),
	}
	if readOnly {
		for _, b := range k.actions() {
			b.SetEnabled(false)
		}
	}
	return k
}

// actions are the bindings a read-only console disables.
func (k *keyMap) actions() []*key.Binding {
	return []*key.Binding{&k.Evict, &k.Drain, &k.Requeue, &k.Pause}
}

// pressed reports whether msg is one of b's keys, enabled or not: a
// disabled action key still gets a flash saying why nothing happened.
func pressed(msg tea.KeyPressMsg, b key.Binding) bool {
	return slices.Contains(b.Keys(), msg.String())
}

// withDesc copies a binding with a shorter description for the hint line.
func withDesc(b key.Binding, desc string) key.Binding {
	b.SetHelp(b.Help().Key, desc)
	return b
}

// moveHint stands for the move keys on the hint lines.
var moveHint = key.NewBinding(key.WithKeys("j"), key.WithHelp("j/k", "move"))
