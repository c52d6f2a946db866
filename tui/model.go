package tui

import (
	"context"
	"strconv"
	"time"

	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"

	"drover/admin"
	"drover/themes"
	"drover/tui/common"
	"drover/tui/dialog"
)

// mode is what the keyboard is talking to.
type mode int

const (
	modeNormal mode = iota
	modeFilter      // typing a filter
	modeDialog      // a confirmation dialog is open
	modeHelp        // the help screen is open
)

// pane is the state of one view: its order and filter, the cursor, the
// window of rows last fetched, and the marks.
type pane struct {
	view   admin.View
	sort   string // sort name; empty: the view's default order
	desc   bool
	filter string // canonical filter text
	key    string // ViewWaiters: the key whose waiters are listed
	// gen changes whenever sort, filter or the waiters' key change, so a
	// page fetched for the old order is not applied.
	gen uint64
	// cursor is the absolute index of the selected row, top of the first
	// visible row.
	cursor, top int
	// selID is the identity of the selected row; empty until the row at the
	// cursor is loaded.
	selID, selLabel string
	// follow keeps the Events view on the newest event.
	follow bool
	// quiet: the next window follows an action of the operator's, so a
	// selected row it removed needs no flash of its own.
	quiet  bool
	page   admin.Page
	loaded bool
	marks  map[string]mark
	// backoffs: ViewCrawls' host back-offs holding each crawl's jobs.
	backoffs map[string][]crawlBackoff
}

// flashLevel says how a flash message is styled.
type flashLevel int

const (
	flashInfo flashLevel = iota
	flashWarn
	flashError
)

// flashTTL is how long a flash message stays.
const flashTTL = 6 * time.Second

// model is the root model: the only component that returns a tea.View.
type model struct {
	common.Common
	b      Backend
	opts   Options
	ctx    context.Context
	cancel context.CancelFunc
	keys   keyMap
	// The components' keymaps, built from keys (component.go).
	viewKeys                                          map[admin.View]keymap
	tableKeys, switcherKeys, consoleKeys, refusalKeys keymap
	filterKeys, helpKeys                              keymap
	themes                                            *themes.Set
	// themePinned stops background detection from overriding a theme the
	// operator chose (option or `t`).
	themePinned bool
	help        help.Model
	editor      filterEditor

	view  admin.View
	panes map[admin.View]*pane
	// waitKey is the key whose waiters view 3 lists: the key last selected
	// in Jobs or Retries.
	waitKey, waitURL string

	// status is what the console knows of the coordinator: totals, the
	// dispatch rate, and whether answers are coming (header.go).
	coord coordStatus
	// refresh schedules the rounds of backend calls (fetch.go).
	refresh refreshState

	mode       mode
	dialog     dialog.Model
	pending    *admin.Action
	detail     *detailState
	helpScreen helpScreen
	flash      flashState
	quitting   bool

	// startCmd is a command New could not return (a flash's expiry); Init
	// returns it.
	startCmd tea.Cmd

	// Seams for the model tests, which run commands in-line and hold timers:
	// after delivers msg after d (tea.Tick in production); blocking wraps a
	// command that waits on the outside world (the Changed channel).
	after    func(d time.Duration, msg tea.Msg) tea.Cmd
	blocking func(tea.Cmd) tea.Cmd
}

// flashState is the message on the line above the hints.
type flashState struct {
	text  string
	level flashLevel
	seq   int
}

// Messages the model sends itself.
type (
	changedMsg     struct{}             // the backend signalled a change
	closedMsg      struct{}             // the backend's Changed channel closed
	pollMsg        struct{}             // periodic refresh
	coolDoneMsg    struct{ gen uint64 } // the cooldown after a refresh ended
	refreshMsg     struct{}             // refresh now (ctrl+r)
	flashExpireMsg struct{ seq int }
)

// New returns the console's root model. The model owns a context that is
// cancelled when it quits; Run ties it to the caller's context. An unknown
// Options.Theme falls back to dark with a flash (Run validates first).
func New(b Backend, opts Options) tea.Model {
	return newModel(context.Background(), b, opts)
}

func newModel(ctx context.Context, b Backend, opts Options) *model {
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(ctx)
	set, setErr := themes.NewSet(opts.Themes...)
	if setErr != nil {
		set, _ = themes.NewSet()
	}
	m := &model{
		b: b, opts: opts, ctx: ctx, cancel: cancel,
		keys:   newKeyMap(opts.ReadOnly),
		themes: set,
		help:   help.New(),
		editor: newFilterEditor(),
		view:   admin.ViewWorkers,
		panes:  make(map[admin.View]*pane, len(viewOrder)),
		after: func(d time.Duration, msg tea.Msg) tea.Cmd {
			return tea.Tick(d, func(time.Time) tea.Msg { return msg })
		},
		blocking: func(c tea.Cmd) tea.Cmd { return c },
	}
	m.Clock = opts.Clock
	m.tableKeys, m.switcherKeys = tableKeys(&m.keys), switcherKeys(&m.keys)
	m.consoleKeys, m.refusalKeys = consoleKeys(&m.keys), refusalKeys(&m.keys)
	m.filterKeys, m.helpKeys = filterKeys(&m.keys), helpKeys(&m.keys)
	m.viewKeys = make(map[admin.View]keymap, len(viewOrder))
	for _, v := range viewOrder {
		m.viewKeys[v] = views[v].keys(&m.keys)
	}
	for _, v := range viewOrder {
		m.panes[v] = &pane{view: v, marks: map[string]mark{}}
	}
	m.panes[admin.ViewEvents].follow = true

	th := themes.Default()
	switch {
	case opts.NoColor:
		th, _ = themes.ByName(themes.NameMono)
		m.themePinned = true
	case opts.Theme != "":
		m.themePinned = true
		if t, err := set.Get(opts.Theme); err == nil {
			th = t
		} else {
			m.startCmd = m.setFlash(flashWarn, err.Error()+"; using dark")
		}
	}
	if setErr != nil {
		m.startCmd = m.setFlash(flashWarn, "custom themes ignored: "+setErr.Error())
	}
	m.setTheme(th)
	return m
}

// setTheme rebuilds the styles of every component for a theme.
func (m *model) setTheme(t themes.Theme) {
	m.Styles = common.NewStyles(t)
	m.dialog.Styles = m.Styles
	hs := help.Styles{
		ShortKey: m.Styles.HintKey, ShortDesc: m.Styles.HintDesc, ShortSeparator: m.Styles.HintSep,
		FullKey: m.Styles.HintKey, FullDesc: m.Styles.HintDesc, FullSeparator: m.Styles.HintSep,
		Ellipsis: m.Styles.HintSep,
	}
	m.help.Styles = hs
	m.editor.setStyles(m.Styles, t.Dark)
}

// Init starts the first refresh, listens for changes, starts the poll
// timer, and asks the terminal for its background colour unless the theme
// is fixed.
func (m *model) Init() tea.Cmd {
	cmds := []tea.Cmd{m.requestRefresh(true), m.waitChanged(), m.pollTick(), m.startCmd}
	if !m.themePinned {
		cmds = append(cmds, tea.RequestBackgroundColor)
	}
	return tea.Batch(cmds...)
}

func (m *model) pane() *pane { return m.panes[m.view] }

// Update handles one message.
func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.Width, m.Height = msg.Width, msg.Height
		m.help.SetWidth(msg.Width)
		m.dialog.Width, m.dialog.Height = msg.Width, m.bodyHeight()
		m.clampAll()
		return m, m.requestRefresh(true)
	case tea.BackgroundColorMsg:
		if !m.themePinned {
			m.setTheme(themes.ForBackground(msg.IsDark()))
		}
		return m, nil
	case changedMsg:
		return m, tea.Batch(m.requestRefresh(false), m.waitChanged())
	case closedMsg:
		m.coord.closed = true
		m.coord.stale = true
		m.coord.staleErr = "the backend closed"
		return m, nil
	case pollMsg:
		return m, tea.Batch(m.requestRefresh(false), m.pollTick())
	case refreshMsg:
		return m, m.requestRefresh(true)
	case coolDoneMsg:
		if msg.gen == m.refresh.coolGen {
			m.refresh.cooling = false
		}
		return m, m.maybeFetch()
	case fetchedMsg:
		return m, m.applyFetch(msg)
	case probeMsg:
		return m, m.setFlash(msg.level, msg.text)
	case markAllMsg:
		return m, m.applyMarkAll(msg)
	case actDoneMsg:
		return m, m.applyAct(msg)
	case flashExpireMsg:
		if msg.seq == m.flash.seq {
			m.flash = flashState{}
		}
		return m, nil
	case dialog.ClosedMsg:
		return m, m.dialogClosed(msg)
	case tea.KeyPressMsg:
		return m, m.handleKey(msg)
	}
	if m.mode == modeFilter {
		var cmd tea.Cmd
		m.editor.input, cmd = m.editor.input.Update(msg)
		return m, cmd
	}
	return m, nil
}

// handleKey routes a key press by mode.
func (m *model) handleKey(k tea.KeyPressMsg) tea.Cmd {
	switch m.mode {
	case modeDialog:
		if pressed(k, m.keys.ForceQuit) && m.dialog.ID == quitDialog {
			return m.quitNow()
		}
		var cmd tea.Cmd
		m.dialog, cmd = m.dialog.Update(k)
		return cmd
	case modeFilter:
		return m.filterKey(k)
	case modeHelp:
		return m.helpKey(k)
	}
	return m.normalKey(k)
}

// normalKey offers a key press to the keymaps of the current view
// (component.go): the root model only routes.
func (m *model) normalKey(k tea.KeyPressMsg) tea.Cmd {
	if b := m.lookup(m.view, k); b != nil {
		return b.run(m)
	}
	return nil
}

// clear undoes one thing per press: the detail pane, then the filter, then
// the marks.
func (m *model) clear() tea.Cmd {
	p := m.pane()
	switch {
	case m.detail != nil:
		m.detail = nil
		m.clampAll()
		return nil
	case p.filter != "":
		p.filter = ""
		return m.basisChanged(p)
	case len(p.marks) > 0:
		n := len(p.marks)
		p.marks = map[string]mark{}
		return m.setFlash(flashInfo, "cleared "+plural(n, "mark"))
	}
	return nil
}

// nextSort moves the view's order to the next sortable column, and from
// the last one back to the default order.
func (m *model) nextSort() tea.Cmd {
	p := m.pane()
	names := views[p.view].sortable()
	next := ""
	if p.sort == "" {
		next = names[0]
	} else {
		for i, n := range names {
			if n == p.sort && i+1 < len(names) {
				next = names[i+1]
			}
		}
	}
	p.sort = next
	return m.basisChanged(p)
}

// basisChanged resets a pane after its order, filter or key changed: the
// old window no longer applies, the cursor goes to the top.
func (m *model) basisChanged(p *pane) tea.Cmd {
	p.gen++
	p.cursor, p.top = 0, 0
	p.selID, p.selLabel = "", ""
	p.loaded = false
	p.page = admin.Page{View: p.view}
	p.follow = p.view == admin.ViewEvents
	if m.detail != nil && m.detail.view == p.view {
		m.detail = nil
	}
	return m.requestRefresh(true)
}

// switchView shows another view; the waiters view takes the key last
// selected in Jobs or Retries.
func (m *model) switchView(v admin.View) tea.Cmd {
	if v == m.view {
		return nil
	}
	m.view = v
	m.detail = nil
	if v == admin.ViewWaiters {
		if wp := m.panes[v]; wp.key != m.waitKey {
			wp.key = m.waitKey
			wp.gen++
			wp.loaded = false
			wp.page = admin.Page{View: v}
			wp.cursor, wp.top, wp.selID, wp.selLabel = 0, 0, "", ""
		}
	}
	m.clampAll()
	return m.requestRefresh(true)
}

// nextTheme cycles the themes (mono stays while NoColor is set).
func (m *model) nextTheme() tea.Cmd {
	if m.opts.NoColor {
		return m.setFlash(flashWarn, "colour is off (NO_COLOR or --no-color): the theme stays mono")
	}
	t := m.themes.Next(m.Styles.Theme.Name)
	m.setTheme(t)
	m.themePinned = true
	return m.setFlash(flashInfo, "theme: "+t.Name)
}

// setFlash shows a message on the flash line for flashTTL.
func (m *model) setFlash(level flashLevel, text string) tea.Cmd {
	m.flash.seq++
	m.flash.text, m.flash.level = text, level
	return m.after(flashTTL, flashExpireMsg{seq: m.flash.seq})
}

// waitChanged turns the next change signal into a message.
func (m *model) waitChanged() tea.Cmd {
	if m.coord.closed {
		return nil
	}
	ch := m.b.Changed()
	ctx := m.ctx
	return m.blocking(func() tea.Msg {
		select {
		case _, ok := <-ch:
			if !ok {
				return closedMsg{}
			}
			return changedMsg{}
		case <-ctx.Done():
			return nil
		}
	})
}

func (m *model) pollTick() tea.Cmd {
	return m.after(m.opts.Poll, pollMsg{})
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
