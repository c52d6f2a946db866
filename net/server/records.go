package server

import (
	"fmt"
	"time"

	"drover/admin"
	"drover/coord"
	"drover/coord/broker"
	"drover/coord/ledger"
	"drover/store"
)

// This file maps between the coordinator's durable records (coord.Record)
// and the store's (store.Record). Job states have the same numbers in both
// (store.JobQueued == broker.Queued, ...); key states map to ledger writes:
// queued ↔ PutQueued, done ↔ PutDone(DoneOK), failed ↔ PutDone(DoneFailed).

// addWrite adds one coordinator write to b. A record the store refuses is
// recorded in b (Batch.Err), which makes Apply fail the whole batch. A job
// record is mapped into scratch, whose history's room is reused from call
// to call: the batch encodes it at once.
func addWrite(b *store.Batch, w *coord.Record, scratch *store.JobRecord) error {
	switch w.Kind {
	case coord.RecordKey:
		k := &w.Key
		switch k.Op {
		case ledger.PutQueued:
			return b.PutKey(&store.KeyRecord{FP: k.FP, Key: k.Key, State: store.KeyQueued, At: k.At})
		case ledger.PutDone:
			st := store.KeyDone
			if k.Outcome != ledger.DoneOK {
				st = store.KeyFailed
			}
			return b.PutKey(&store.KeyRecord{FP: k.FP, Key: k.Key, State: st, At: k.At})
		case ledger.Delete:
			return b.DeleteKey(k.FP)
		}
		return fmt.Errorf("persist key write %s: op %v, want put-queued, put-done or delete", k.FP, k.Op)
	case coord.RecordJob:
		toStoreJob(scratch, &w.Job)
		return b.PutJob(scratch)
	case coord.RecordMeta:
		return b.PutMeta(w.Meta.Name, w.Meta.Value)
	}
	return fmt.Errorf("persist write: kind %v, want key, job or meta", w.Kind)
}

// checkWrites reports the first write addWrite cannot map (an unknown
// kind or key operation), before anything goes into a batch.
func checkWrites(ws []coord.Record) error {
	for i := range ws {
		w := &ws[i]
		switch w.Kind {
		case coord.RecordJob, coord.RecordMeta:
		case coord.RecordKey:
			switch w.Key.Op {
			case ledger.PutQueued, ledger.PutDone, ledger.Delete:
			default:
				return fmt.Errorf("write %d: key %s: op %v, want put-queued, put-done or delete", i, w.Key.FP, w.Key.Op)
			}
		default:
			return fmt.Errorf("write %d: kind %v, want key, job or meta", i, w.Kind)
		}
	}
	return nil
}

// toStoreJob maps a broker job record into r, the store's form, reusing
// the room of r.History.
func toStoreJob(r *store.JobRecord, j *coord.JobRecord) {
	h := r.History[:0]
	for _, a := range j.History {
		h = append(h, store.Attempt{Worker: a.Worker, At: a.At, Outcome: a.Outcome, Error: a.Error})
	}
	*r = store.JobRecord{
		ID: uint64(j.ID), FP: j.FP, Key: j.Key, Host: j.Host, Headers: j.Headers, Payload: j.Payload,
		State: store.JobState(j.State), Attempts: j.Attempts, Failures: j.Failures, Throttles: j.Throttles,
		RetryAt: j.RetryAt, Worker: j.Worker, LastError: j.LastError, Created: j.Created, Updated: j.Updated,
		History: h,
	}
}

// fromStoreJob is the broker's form of a persisted job record.
func fromStoreJob(r *store.JobRecord) coord.JobRecord {
	j := coord.JobRecord{
		ID: broker.JobID(r.ID), FP: r.FP, Key: r.Key, Host: r.Host, Headers: r.Headers, Payload: r.Payload,
		State: broker.JobState(r.State), Attempts: r.Attempts, Failures: r.Failures, Throttles: r.Throttles,
		RetryAt: r.RetryAt, Worker: r.Worker, LastError: r.LastError, Created: r.Created, Updated: r.Updated,
	}
	if len(r.History) > 0 {
		j.History = make([]admin.Attempt, len(r.History))
		for i, a := range r.History {
			j.History[i] = admin.Attempt{Worker: a.Worker, At: a.At, Outcome: a.Outcome, Error: a.Error}
		}
	}
	return j
}

// fromStore maps a recovered store record to the record the coordinator
// restores.
func fromStore(r *store.Record) (coord.Record, error) {
	switch r.Kind {
	case store.KindMeta:
		return coord.Record{Kind: coord.RecordMeta, Meta: coord.MetaRecord{Name: r.Meta.Name, Value: r.Meta.Value}}, nil
	case store.KindKey:
		k := &r.Key
		w := ledger.Write{FP: k.FP, Key: k.Key, At: k.At}
		switch k.State {
		case store.KeyQueued:
			w.Op = ledger.PutQueued
		case store.KeyDone:
			w.Op, w.Outcome = ledger.PutDone, ledger.DoneOK
		case store.KeyFailed:
			w.Op, w.Outcome = ledger.PutDone, ledger.DoneFailed
		default:
			return coord.Record{}, fmt.Errorf("key record %s: state %v, want queued, done or failed", k.FP, k.State)
		}
		return coord.Record{Kind: coord.RecordKey, Key: w}, nil
	case store.KindJob:
		return coord.Record{Kind: coord.RecordJob, Job: fromStoreJob(&r.Job)}, nil
	}
	return coord.Record{}, fmt.Errorf("store record: kind %v, want meta, key or job", r.Kind)
}

// restore rebuilds the fresh coordinator c from st: every record in the
// store's order (meta, keys, jobs by ascending id), then FinishRestore.
// With a bounded done set the done and failed keys stay in the store
// (looked up on demand, donelookup.go) and are only counted.
func restore(c *coord.Coordinator, st *store.Store, now func() time.Time) (coord.RestoreStats, store.Stats, error) {
	bounded := c.Config().Ledger.DoneCache > 0
	sst, err := st.RecoverWith(store.RecoverOptions{SkipDoneKeys: bounded, SkippedKey: c.RestoreStoredKey}, func(r store.Record) error {
		rec, err := fromStore(&r)
		if err != nil {
			return err
		}
		return c.RestoreRecord(rec)
	})
	if err == nil && bounded {
		err = c.RestoreStored(sst.KeysDone, sst.KeysFailed)
	}
	if err != nil {
		return coord.RestoreStats{}, sst, fmt.Errorf("restore from the store: %w", err)
	}
	stats, err := c.FinishRestore(now())
	if err != nil {
		return stats, sst, fmt.Errorf("restore from the store: %w", err)
	}
	return stats, sst, nil
}
