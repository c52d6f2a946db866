package ledger

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"drover/coord/id"
)

// TestModelBoundedDoneSet runs random operations against a ledger with a
// tiny bounded done set, a simulated store whose batches become durable at
// random moments, and the reactor's lookup before every operation, and
// against the (unbounded) model: the verdicts, deferred answers and events
// must be the same, and a done key the ledger no longer holds must be in
// the store, durable, with the model's time and outcome.
func TestModelBoundedDoneSet(t *testing.T) {
	sequences, steps := 2000, 80
	if testing.Short() {
		sequences = 200
	}
	labels, fps := modelKeys()
	for seq := 0; seq < sequences; seq++ {
		rng := rand.New(rand.NewPCG(uint64(seq), 0xcac4e))
		cfg := Config{
			RequestTTL: []time.Duration{0, 3 * time.Second}[rng.IntN(2)],
			DoneTTL:    []time.Duration{0, 2 * time.Second, 5 * time.Second}[rng.IntN(3)],
			FailedTTL:  []time.Duration{0, time.Second, 4 * time.Second}[rng.IntN(3)],
			Persist:    true,
			DoneCache:  1 + rng.IntN(3),
		}
		var trace strings.Builder
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("sequence %d (config %+v), after:\n%s\n%s", seq, cfg, trace.String(), fmt.Sprintf(format, args...))
		}
		l, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		st := newCacheStore(l)
		m := newModel(cfg)
		now := base.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)
		var reqID uint64
		evicted := 0
		for step := 0; step < steps; step++ {
			s := id.Session(1 + rng.IntN(3))
			ki := rng.IntN(len(labels))
			var got, want []Result
			switch op := rng.IntN(100); {
			case op < 35:
				reqID++
				fmt.Fprintf(&trace, "  %v request s=%d key=%s known=%v\n", now.Sub(base), s, labels[ki], l.Known(fps[ki]))
				st.answer(fps[ki])
				v, r := l.Request(now, s, reqID, key(labels[ki]), fps[ki])
				got = append(got, Result{v, r})
				mv, mr := m.request(now, s, reqID, fps[ki], key(labels[ki]))
				want = append(want, Result{mv, mr})
			case op < 48:
				if k := m.keys[fps[ki]]; k != nil && k.owner != 0 && rng.IntN(2) == 0 {
					s = k.owner
				}
				fmt.Fprintf(&trace, "  %v queue s=%d key=%s\n", now.Sub(base), s, labels[ki])
				st.answer(fps[ki])
				v, r := l.Queue(now, s, fps[ki])
				got = append(got, Result{v, r})
				mv, mr := m.queue(now, s, fps[ki])
				want = append(want, Result{mv, mr})
			case op < 65:
				o := Outcome(rng.IntN(2))
				fmt.Fprintf(&trace, "  %v done key=%s outcome=%v\n", now.Sub(base), labels[ki], o)
				st.answer(fps[ki])
				l.Done(now, key(labels[ki]), fps[ki], o)
				m.done(now, fps[ki], o)
			case op < 72:
				fmt.Fprintf(&trace, "  %v release s=%d\n", now.Sub(base), s)
				l.Release(now, s)
				m.release(now, s)
			case op < 78:
				fmt.Fprintf(&trace, "  %v tick\n", now.Sub(base))
				l.Tick(now)
				m.expire(now)
			case op < 92:
				n := rng.IntN(len(st.pending) + 1)
				fmt.Fprintf(&trace, "  %d of %d batches durable\n", n, len(st.pending))
				st.sync(n)
			default:
				now = now.Add(time.Duration(rng.IntN(2500)) * time.Millisecond)
			}
			st.take() // one batch per step, as the reactor's Ready

			if !slices.Equal(got, want) {
				fail("results %v, model says %v", got, want)
			}
			if err := l.check(); err != nil {
				fail("invariant broken: %v", err)
			}
			if answers := l.TakeAnswers(nil); !slices.Equal(answers, m.answers) {
				fail("answers %+v, model says %+v", answers, m.answers)
			}
			m.answers = m.answers[:0]
			if events := l.TakeEvents(nil); !slices.Equal(events, m.events) {
				fail("events %+v, model says %+v", events, m.events)
			}
			m.events = m.events[:0]
			for i, fp := range fps {
				rec, ok := l.Lookup(now, fp)
				mrec, mok := m.lookup(now, fp)
				if !ok && mok && mrec.State == Done && !l.Known(fp) {
					// Evicted: the store must hold it, durably.
					evicted++
					w, in := st.recs[fp]
					if !in || w.Op != PutDone || w.Outcome != mrec.Outcome || !ceilSecond(w.At).Equal(mrec.Since) {
						fail("%s evicted; the store has %+v (%v), model says %+v", labels[i], w, in, mrec)
					}
					continue
				}
				if ok != mok || rec != mrec && !sameRecord(rec, mrec) {
					fail("Lookup(%s) = %+v, %v; model says %+v, %v", labels[i], rec, ok, mrec, mok)
				}
			}
		}
		if seq == sequences-1 && evicted == 0 {
			t.Fatal("no sequence evicted a record: the test does not exercise the bound")
		}
	}
}
