package tui

import (
	"strings"
	"testing"

	"drover/tui/dialog"

	"charm.land/bubbles/v2/key"
)

// helpEntry is one key line of the help screen as the operator reads it.
type helpEntry struct {
	key, desc string
	disabled  bool
}

// parseHelp reads the key lines off a rendered help screen of the given
// width: columns of width/cols cells, each line a marker (space, or ✗ for
// a disabled key), the key padded to six cells, a space, the description.
// Group titles and blank lines are skipped.
func parseHelp(t *testing.T, screen string, width, cols int) []helpEntry {
	t.Helper()
	colW := width / cols
	var out []helpEntry
	for _, line := range strings.Split(screen, "\n")[1:] {
		r := []rune(line)
		for c := 0; c < cols; c++ {
			if c*colW >= len(r) {
				break
			}
			cell := r[c*colW : min((c+1)*colW, len(r))]
			if len(cell) < 9 || (cell[0] != ' ' && cell[0] != '✗') || cell[1] == ' ' {
				continue // a title, a blank or the scroll hint
			}
			out = append(out, helpEntry{
				key:      strings.TrimSpace(string(cell[1:7])),
				desc:     strings.TrimSpace(string(cell[8:])),
				disabled: cell[0] == '✗',
			})
		}
	}
	return out
}

// helpKeyAliases are the key names help shows in short form.
var helpKeyAliases = map[string]string{"↑": "up", "↓": "down", "pgdn": "pgdown"}

// TestHelpMatchesBindings reads the help screen as text and checks it
// against the keymaps the console routes keys through: every binding of
// every view is on the help screen, and every line of the help screen is a
// key that lookup, the routing itself, sends to a binding with that help
// text in some view (not shadowed by another binding of the same key).
func TestHelpMatchesBindings(t *testing.T) {
	const width, height = 200, 60
	for _, ro := range []bool{false, true} {
		h := newHarness(t, seedBackend(), Options{ReadOnly: ro}, width, height)
		h.keys("?")
		entries := parseHelp(t, h.screen(), width, min(width/helpColumnWidth, len(helpGroupOrder)))
		shown := map[key.Help]helpEntry{}
		for _, e := range entries {
			if _, dup := shown[key.Help{Key: e.key, Desc: e.desc}]; dup {
				t.Errorf("read-only %v: help lists %s %q twice", ro, e.key, e.desc)
			}
			shown[key.Help{Key: e.key, Desc: e.desc}] = e
		}
		if len(shown) < 25 {
			t.Fatalf("read-only %v: parsed only %d help lines from:\n%s", ro, len(shown), h.screen())
		}
		m := h.m

		// Every binding is on the help screen, disabled ones marked.
		for _, v := range viewOrder {
			for _, km := range m.keymaps(v) {
				for _, b := range km {
					e, ok := shown[b.key.Help()]
					if !ok {
						t.Errorf("read-only %v, view %s: binding %v (%s %q) is not on the help screen",
							ro, v, b.key.Keys(), b.key.Help().Key, b.key.Help().Desc)
						continue
					}
					if e.disabled == b.key.Enabled() {
						t.Errorf("read-only %v: %s shown disabled=%v, binding enabled=%v", ro, e.key, e.disabled, b.key.Enabled())
					}
				}
			}
		}

		// Every help line is bound: each key the line names, pressed in
		// some view, is routed to a binding with that line's help.
		for h := range shown {
			names := strings.Split(h.Key, "/")
			if h.Key == "/" {
				names = []string{"/"}
			}
			for _, name := range names {
				if alias, ok := helpKeyAliases[name]; ok {
					name = alias
				}
				bound := false
				for _, v := range viewOrder {
					if b := m.lookup(v, keyPress(name)); b != nil && !b.refusal && b.key.Help() == h {
						bound = true
					}
				}
				if !bound {
					t.Errorf("read-only %v: help line %s %q: pressing %q runs no binding with that help", ro, h.Key, h.Desc, name)
				}
			}
		}
	}
}

// TestNoKeyAnsweredTwice checks that within each view no key is in two
// bindings that do different things (the second would never run).
func TestNoKeyAnsweredTwice(t *testing.T) {
	h := newHarness(t, seedBackend(), Options{}, 120, 40)
	for _, v := range viewOrder {
		owner := map[string]key.Help{}
		for _, km := range h.m.keymaps(v) {
			for _, b := range km {
				for _, k := range b.key.Keys() {
					if prev, ok := owner[k]; ok && prev != b.key.Help() {
						if !b.refusal {
							t.Errorf("view %s: key %q answers %q and %q", v, k, prev.Desc, b.key.Help().Desc)
						}
						continue
					}
					owner[k] = b.key.Help()
				}
			}
		}
	}
}

// TestModeHintsMatchBindings checks the hint lines of the filter editor,
// the help screen and the dialog: each hint is on the line and each of its
// keys is answered by that mode's keymap.
func TestModeHintsMatchBindings(t *testing.T) {
	h := newHarness(t, seedBackend(), Options{}, 160, 30)
	check := func(mode string, hints []key.Binding, km keymap) {
		t.Helper()
		line := h.screen()[strings.LastIndex(h.screen(), "\n")+1:]
		for _, b := range hints {
			if want := b.Help().Key + " " + b.Help().Desc; !strings.Contains(line, want) {
				t.Errorf("%s: hint line %q lacks %q", mode, line, want)
			}
			if km == nil {
				continue
			}
			for _, k := range b.Keys() {
				if km.find(keyPress(k)) == nil {
					t.Errorf("%s: hint %q names key %q that the mode does not answer", mode, b.Help().Desc, k)
				}
			}
		}
	}
	h.keys("/")
	check("filter", filterHints(&h.m.keys), h.m.filterKeys)
	h.keys("esc", "?")
	check("help", helpHints(&h.m.keys), h.m.helpKeys)
	h.keys("esc", "P")
	if h.m.mode != modeDialog {
		t.Fatal("P did not open the pause dialog")
	}
	check("dialog", dialog.Keys.ShortHelp(), nil)
	h.keys("esc")
	for _, v := range viewOrder {
		h.m.view = v
		check(string(v), views[v].hints(&h.m.keys)[:2], nil)
	}
}
