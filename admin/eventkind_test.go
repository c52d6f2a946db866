package admin

import "testing"

// IsKey tells the ledger's kinds (key.*) from the others by their topic,
// not by a word that begins alike.
func TestEventKindIsKey(t *testing.T) {
	var keys []EventKind
	for _, k := range EventKinds() {
		if k.IsKey() {
			keys = append(keys, k)
		}
	}
	if len(keys) != 8 || keys[0] != EventKeyRequested || keys[7] != EventKeyLeft {
		t.Errorf("key kinds %v: want the 8 from key.requested to key.left", keys)
	}
	for _, k := range []EventKind{EventJobDone, EventHostBackoff, "keyboard.pressed", "key"} {
		if k.IsKey() {
			t.Errorf("%q.IsKey() = true, want false", k)
		}
	}
}
