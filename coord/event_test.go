package coord

import (
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
