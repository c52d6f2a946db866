package server

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"drover/admin"
	"drover/coord"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/coord/ledger"
	"drover/store"
)

// TestRecordsRoundTrip writes coordinator records to a store and recovers
// them: each comes back as it went in (a failed done key keeps its outcome,
// a job its state, counters and history).
func TestRecordsRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	k := id.Key{Crawler: "c", Processor: "p", URL: "http://a.test/"}
	fp := k.Fingerprint()
	k2 := id.Key{Crawler: "c", Processor: "p", URL: "http://a.test/2"}
	job := coord.JobRecord{
		ID: 4, FP: fp, Key: k, Host: "a.test", Headers: map[string]string{"lang": "en"}, Payload: []byte("x"),
		State: broker.Dispatched, Attempts: 2, Failures: 1, Throttles: 1, RetryAt: at.Add(time.Second),
		Worker: "w1", LastError: "timeout", Created: at, Updated: at.Add(2 * time.Second),
		History: []admin.Attempt{{Worker: "w0", At: at, Outcome: "internal", Error: "timeout"}, {Worker: "w1", At: at.Add(time.Second)}},
	}
	cases := []struct {
		name string
		rec  coord.Record
	}{
		{"queued key", coord.Record{Kind: coord.RecordKey, Key: ledger.Write{Op: ledger.PutQueued, FP: fp, Key: k, At: at}}},
		{"done key", coord.Record{Kind: coord.RecordKey, Key: ledger.Write{Op: ledger.PutDone, FP: fp, Key: k, At: at, Outcome: ledger.DoneOK}}},
		{"failed key", coord.Record{Kind: coord.RecordKey, Key: ledger.Write{Op: ledger.PutDone, FP: k2.Fingerprint(), Key: k2, At: at, Outcome: ledger.DoneFailed}}},
		{"dispatched job", coord.Record{Kind: coord.RecordJob, Job: job}},
		{"meta", coord.Record{Kind: coord.RecordMeta, Meta: coord.MetaRecord{Name: coord.MetaLastJob, Value: 4}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t, filepath.Join(t.TempDir(), "s"), "none")
			defer st.Close()
			b := st.NewBatch()
			if err := addWrite(b, &tc.rec, new(store.JobRecord)); err != nil {
				t.Fatal(err)
			}
			if err := st.Commit(b); err != nil {
				t.Fatal(err)
			}
			var got []coord.Record
			if _, err := st.Recover(func(r store.Record) error {
				rec, err := fromStore(&r)
				got = append(got, rec)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]coord.Record{tc.rec}, got); diff != "" {
				t.Fatalf("recovered records differ (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRecordsRefused: a write the store cannot take is an error, not a
// silent drop.
func TestRecordsRefused(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "s"), "none")
	defer st.Close()
	for _, rec := range []coord.Record{
		{Kind: 0},
		{Kind: coord.RecordKey, Key: ledger.Write{Op: 0}},
		{Kind: coord.RecordJob, Job: coord.JobRecord{ID: 0, State: broker.Queued}},
	} {
		if err := addWrite(st.NewBatch(), &rec, new(store.JobRecord)); err == nil {
			t.Errorf("record %+v: accepted, want an error", rec)
		}
		if rec.Kind != coord.RecordJob {
			if err := checkWrites([]coord.Record{{Kind: coord.RecordMeta}, rec}); err == nil {
				t.Errorf("checkWrites with %+v: nil, want an error", rec)
			}
		}
	}
}
