package coord

import (
	"slices"
	"strings"
	"testing"

	"drover/admin"
	"drover/coord/id"
)

// TestKeyEventsNameTheirSession: a key's events carry its hex key and
// "session sN", also when the session is gone in the same step.
func TestKeyEventsNameTheirSession(t *testing.T) {
	c := newCoord(t, Config{})
	hello(t, c, 1, Hello{Role: RoleProducer, ID: "p"})
	hello(t, c, 7, Hello{Role: RoleProducer, ID: "q"})
	vs, err := c.Submit(t0, 1, 1, specs("http://a.test/"), nil)
	if err != nil || len(vs) != 1 || vs[0].Status != Accepted {
		t.Fatalf("submit: %+v, %v", vs, err)
	}
	if _, err := c.Request(t0, 7, 2, []id.Key{{Crawler: "c", Processor: "p", URL: "http://b.test/"}}, nil); err != nil {
		t.Fatal(err)
	}
	c.Disconnect(t0, 7) // its key is released in the step that names it
	c.Ready(t0)
	for _, tt := range []struct{ filter, key, detail string }{
		{"kind=key.queued", vs[0].FP.String(), "session s1"},
		{"kind=key.released", "", "session s7"},
	} {
		p, err := c.Query(t0, admin.Query{View: admin.ViewEvents, Filter: tt.filter, Limit: 10})
		if err != nil || len(p.Events) != 1 || p.Events[0].Key == "" || (tt.key != "" && p.Events[0].Key != tt.key) ||
			!strings.HasPrefix(p.Events[0].Detail, tt.detail) {
			t.Fatalf("%s: %+v, %v: want one event with key %q and detail %q…", tt.filter, p.Events, err, tt.key, tt.detail)
		}
	}
}

// TestKeyEventsOff: with PublishKeyEvents off, a step's output carries the
// broker's events but no key event, and the events view still holds the
// newest EventBuffer events, numbered as with key events on.
func TestKeyEventsOff(t *testing.T) {
	run := func(on bool) (outs [][]admin.Event, view []admin.Event) {
		c := newCoord(t, Config{EventBuffer: 50})
		c.PublishKeyEvents(on)
		hello(t, c, 1, Hello{Role: RoleProducer, ID: "p"})
		for step := range 3 {
			var keys []id.Key
			for i := range 40 * (step + 1) {
				keys = append(keys, id.Key{Crawler: "c", Processor: "p", URL: "http://a.test/" + string(rune('a'+step)) + "/" + strings.Repeat("x", i)})
			}
			if _, err := c.Request(t0, 1, uint64(step), keys, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Submit(t0, 1, 9, specs("http://job.test/"+string(rune('a'+step))), nil); err != nil {
				t.Fatal(err)
			}
			outs = append(outs, append([]admin.Event(nil), c.Ready(t0).Events...))
		}
		p, err := c.Query(t0, admin.Query{View: admin.ViewEvents, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return outs, p.Events
	}
	onOuts, onView := run(true)
	offOuts, offView := run(false)
	for step := range onOuts {
		var want []admin.Event
		for _, e := range onOuts[step] {
			if !strings.HasPrefix(string(e.Kind), "key.") {
				want = append(want, e)
			}
		}
		if len(want) == len(onOuts[step]) {
			t.Fatalf("step %d: no key event with key events on: %+v", step, onOuts[step])
		}
		if !slices.Equal(offOuts[step], want) {
			t.Fatalf("step %d with key events off:\n%+v\nwant the step's events without key events:\n%+v", step, offOuts[step], want)
		}
	}
	if len(onView) != 50 || !slices.Equal(onView, offView) {
		t.Fatalf("events view with key events off (%d events):\n%+v\nwant as with them on (%d events):\n%+v", len(offView), offView, len(onView), onView)
	}
}
