package redis

import (
	"testing"
	"time"

	"drover/admin"
	"drover/coord/ledger"
)

// Events added by two coordinators read back on either, newest first,
// each naming the coordinator that added it.
func TestEventsShared(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 2, ledger.Config{})
	a, b := ls[0].Events(), ls[1].Events()
	at := time.Unix(1700000000, 0).UTC()
	if err := a.Add([]admin.Event{{Seq: 1, At: at, Kind: admin.EventJobDone, JobID: 7, URL: "http://h/a", Cursor: 9}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Add([]admin.Event{{Seq: 1, At: at, Kind: admin.EventWorkerLost, Worker: "w"}}); err != nil {
		t.Fatal(err)
	}
	for _, e := range []*Events{a, b} {
		evs, err := e.Recent(10)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 2 || evs[0].Kind != admin.EventWorkerLost || evs[0].Coordinator != ls[1].Coordinator() ||
			evs[1].Kind != admin.EventJobDone || evs[1].Coordinator != ls[0].Coordinator() || evs[1].Cursor != 9 || !evs[1].At.Equal(at) {
			t.Fatalf("recent events %+v: want b's worker.lost, then a's job.done", evs)
		}
	}
	if evs, err := a.Recent(1); err != nil || len(evs) != 1 || evs[0].Kind != admin.EventWorkerLost {
		t.Fatalf("newest event %+v, %v: want b's worker.lost alone", evs, err)
	}
}
