package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"drover/coord"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/net/client"
	"drover/net/wire"
)

// TestSubmitPastLastJobID: a coordinator that has given every job ID
// (broker.Config.LastJobID, set low here: the real end is 2^32-1) answers
// a SUBMIT's new keys with status error and reason job-ids-exhausted over
// the wire, item by item; the jobs it accepted before stay queued, and it
// goes on answering.
func TestSubmitPastLastJobID(t *testing.T) {
	s, stop := runServer(t, Options{Coord: coord.Config{Broker: broker.Config{LastJobID: 2}}})
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	ctx := context.Background()
	p, err := client.Dial(ctx, client.Options{Connect: s.PeersEndpoint(), ID: "p", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	items := make([]wire.SubmitItem, 3)
	for i := range items {
		items[i].Key = id.Key{Crawler: "c", Processor: "p", URL: "http://ids.test/" + string(rune('a'+i))}
	}
	v, err := p.Submit(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 3 || v[0].Status != wire.SubmitAccepted || v[1].Status != wire.SubmitAccepted {
		t.Fatalf("answers %+v: want the first two accepted", v)
	}
	if v[2].Status != wire.SubmitError || v[2].JobID != 0 || !strings.HasPrefix(v[2].Reason, string(coord.ReasonJobIDs)) {
		t.Fatalf("third answer %+v: want error with reason %s", v[2], coord.ReasonJobIDs)
	}
	// Refused again, and the server still answers everything else.
	if v, err = p.Submit(ctx, items[2:]); err != nil || v[0].Status != wire.SubmitError {
		t.Fatalf("second submit: %+v, %v: want the refusal again", v, err)
	}
	st, err := p.Request(ctx, []id.Key{items[0].Key})
	if err != nil || st[0].Verdict != wire.VerdictNo {
		t.Fatalf("request of an accepted key: %+v, %v: want no (queued)", st, err)
	}
}
