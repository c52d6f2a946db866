package tui

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"drover/admin"
)

// binding is one entry of a component's keymap: a key of the vocabulary
// (keyMap), the help group that lists it, and what pressing it does. A
// keymap is at once the component's dispatch table and its help: the help
// screen is generated from the keymaps, so it cannot list a key that does
// nothing nor miss one that does something (TestHelpMatchesBindings).
type binding struct {
	key   key.Binding
	group string
	// refusal: the key does nothing here but say why (another view
	// answers it); help lists it under the component that does.
	refusal bool
	run     func(m *model) tea.Cmd
}

// keymap is a component's bindings, in help order.
type keymap []binding

// find returns the binding a key press names, or nil.
func (km keymap) find(k tea.KeyPressMsg) *binding {
	for i := range km {
		if pressed(k, km[i].key) {
			return &km[i]
		}
	}
	return nil
}

// Help groups, in the order the help screen shows them.
const (
	groupMove    = "move"
	groupViews   = "views"
	groupFind    = "find"
	groupSelect  = "select"
	groupAct     = "act"
	groupConsole = "console"
)

var helpGroupOrder = []string{groupMove, groupViews, groupFind, groupSelect, groupAct, groupConsole}

// tableKeys is the table's keymap, shared by every view: moving the cursor,
// and the filter and order of the rows.
func tableKeys(k *keyMap) keymap {
	move := func(to func(m *model, p *pane) int) func(*model) tea.Cmd {
		return func(m *model) tea.Cmd { return m.moveTo(to(m, m.pane())) }
	}
	page := func(m *model) int { return max(m.visRows(), 1) }
	return keymap{
		{key: k.Up, group: groupMove, run: move(func(_ *model, p *pane) int { return p.cursor - 1 })},
		{key: k.Down, group: groupMove, run: move(func(_ *model, p *pane) int { return p.cursor + 1 })},
		{key: k.Top, group: groupMove, run: move(func(*model, *pane) int { return 0 })},
		{key: k.Bottom, group: groupMove, run: move(func(_ *model, p *pane) int { return p.page.Total - 1 })},
		{key: k.PageUp, group: groupMove, run: move(func(m *model, p *pane) int { return p.cursor - page(m) })},
		{key: k.PageDown, group: groupMove, run: move(func(m *model, p *pane) int { return p.cursor + page(m) })},
		{key: k.Filter, group: groupFind, run: (*model).openFilter},
		{key: k.Clear, group: groupFind, run: (*model).clear},
		{key: k.Sort, group: groupFind, run: (*model).nextSort},
		{key: k.Reverse, group: groupFind, run: func(m *model) tea.Cmd {
			p := m.pane()
			p.desc = !p.desc
			return m.basisChanged(p)
		}},
	}
}

// switcherKeys is the tab bar's keymap: one key per view.
func switcherKeys(k *keyMap) keymap {
	to := func(v admin.View) func(*model) tea.Cmd {
		return func(m *model) tea.Cmd { return m.switchView(v) }
	}
	return keymap{
		{key: k.Workers, group: groupViews, run: to(admin.ViewWorkers)},
		{key: k.Jobs, group: groupViews, run: to(admin.ViewJobs)},
		{key: k.Waiters, group: groupViews, run: to(admin.ViewWaiters)},
		{key: k.Retries, group: groupViews, run: to(admin.ViewRetries)},
		{key: k.Events, group: groupViews, run: to(admin.ViewEvents)},
		{key: k.Crawls, group: groupViews, run: to(admin.ViewCrawls)},
	}
}

// consoleKeys is the root model's own keymap: what works the same in
// every view.
func consoleKeys(k *keyMap) keymap {
	return keymap{
		{key: k.Pause, group: groupAct, run: (*model).startPause},
		{key: k.Theme, group: groupConsole, run: (*model).nextTheme},
		{key: k.Refresh, group: groupConsole, run: func(m *model) tea.Cmd { return m.requestRefresh(true) }},
		{key: k.Help, group: groupConsole, run: (*model).openHelp},
		{key: k.Quit, group: groupConsole, run: (*model).quit},
	}
}

// refusalKeys answers the row keys a view has no binding for: a flash
// says which view does it.
func refusalKeys(k *keyMap) keymap {
	refuse := func(b key.Binding, run func(*model) tea.Cmd) binding {
		return binding{key: b, refusal: true, run: run}
	}
	notMarkable := func(m *model) tea.Cmd {
		return m.setFlash(flashInfo, "nothing to mark in "+views[m.view].title)
	}
	return keymap{
		refuse(k.Detail, func(m *model) tea.Cmd { return m.setFlash(flashInfo, views[m.view].noDetail) }),
		refuse(k.Mark, notMarkable),
		refuse(k.MarkAll, notMarkable),
		refuse(k.Evict, func(m *model) tea.Cmd { return m.refuseAction(admin.ActEvict) }),
		refuse(k.Drain, func(m *model) tea.Cmd { return m.refuseAction(admin.ActDrain) }),
		refuse(k.Requeue, func(m *model) tea.Cmd { return m.refuseAction(admin.ActRequeue) }),
	}
}

// keymaps lists the keymaps a key press is offered to in view v, first
// match wins: the view's own, then the table's, the tab bar's, the
// console's, and last the refusals.
func (m *model) keymaps(v admin.View) []keymap {
	return []keymap{m.viewKeys[v], m.tableKeys, m.switcherKeys, m.consoleKeys, m.refusalKeys}
}

// lookup returns the binding a key press names in view v, or nil.
func (m *model) lookup(v admin.View, k tea.KeyPressMsg) *binding {
	for _, km := range m.keymaps(v) {
		if b := km.find(k); b != nil {
			return b
		}
	}
	return nil
}

// helpGroup is one titled column block of the help screen.
type helpGroup struct {
	title string
	keys  []key.Binding
}

// fullHelp generates the help screen's groups from the keymaps: every
// binding of every component but refusals, each key once, grouped in
// helpGroupOrder and in the order the components list them.
func (m *model) fullHelp() []helpGroup {
	all := []keymap{m.tableKeys, m.switcherKeys}
	for _, v := range viewOrder {
		all = append(all, m.viewKeys[v])
	}
	all = append(all, m.consoleKeys)
	byGroup := map[string][]key.Binding{}
	seen := map[key.Help]bool{}
	for _, km := range all {
		for _, b := range km {
			if b.refusal || seen[b.key.Help()] {
				continue
			}
			seen[b.key.Help()] = true
			byGroup[b.group] = append(byGroup[b.group], b.key)
		}
	}
	out := make([]helpGroup, 0, len(helpGroupOrder))
	for _, g := range helpGroupOrder {
		if len(byGroup[g]) > 0 {
			out = append(out, helpGroup{g, byGroup[g]})
		}
	}
	return out
}
