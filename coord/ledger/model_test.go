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

// The model is a deliberately naive ledger, written from the rules alone
// (maps and slices, sorting where the real one keeps lists). The randomized
// test runs both on the same random operations and requires the same
// verdicts, deferred answers, events and lookups, and the real one's
// invariants after every step.

type mWaiter struct {
	s     id.Session
	req   uint64
	since time.Time
	join  uint64 // global order of joining
}

type mKey struct {
	state   State
	key     id.Key
	owner   id.Session
	since   time.Time // lease start or queue time
	acq     uint64    // global order of acquisition (lease list and held-list order)
	waiters []mWaiter
	outcome Outcome
	doneAt  time.Time // rounded up to the second
}

type model struct {
	cfg     Config
	keys    map[id.Fingerprint]*mKey
	seq     uint64
	answers []Answer
	events  []Event
}

func newModel(cfg Config) *model { return &model{cfg: cfg, keys: make(map[id.Fingerprint]*mKey)} }

func (m *model) next() uint64 { m.seq++; return m.seq }

func (m *model) ev(k EventKind, s id.Session, fp id.Fingerprint, r Reason) {
	m.events = append(m.events, Event{k, s, fp, r})
}

func ceilSecond(t time.Time) time.Time {
	if tr := t.Truncate(time.Second); !tr.Equal(t) {
		return tr.Add(time.Second)
	}
	return t
}

func (m *model) ttl(o Outcome) time.Duration {
	if o == DoneOK {
		return m.cfg.DoneTTL
	}
	return m.cfg.FailedTTL
}

// live returns fp's record if requested, queued, or done and not expired.
func (m *model) live(now time.Time, fp id.Fingerprint) *mKey {
	k := m.keys[fp]
	if k != nil && k.state == Done {
		if ttl := m.ttl(k.outcome); ttl != 0 && !now.Before(k.doneAt.Add(ttl)) {
			return nil
		}
	}
	return k
}

// sortedFPs returns the keys whose record satisfies keep, in acquisition order.
func (m *model) sortedFPs(keep func(*mKey) bool) []id.Fingerprint {
	var fps []id.Fingerprint
	for fp, k := range m.keys {
		if keep(k) {
			fps = append(fps, fp)
		}
	}
	slices.SortFunc(fps, func(a, b id.Fingerprint) int { return int(m.keys[a].acq) - int(m.keys[b].acq) })
	return fps
}

func (m *model) expire(now time.Time) {
	if m.cfg.RequestTTL == 0 {
		return
	}
	for _, fp := range m.sortedFPs(func(k *mKey) bool {
		return k.state == Requested && !now.Before(k.since.Add(m.cfg.RequestTTL))
	}) {
		m.ev(EventExpired, m.keys[fp].owner, fp, ReasonExpired)
		m.handOver(now, fp, ReasonExpired)
	}
}

func (m *model) handOver(now time.Time, fp id.Fingerprint, cause Reason) {
	k := m.keys[fp]
	if len(k.waiters) == 0 {
		delete(m.keys, fp)
		return
	}
	w := k.waiters[0]
	k.waiters = k.waiters[1:]
	k.owner, k.since, k.acq = w.s, now, m.next()
	m.answers = append(m.answers, Answer{w.s, w.req, fp, OK, ReasonHandover})
	m.ev(EventHandover, w.s, fp, cause)
}

func (m *model) request(now time.Time, s id.Session, req uint64, fp id.Fingerprint, key id.Key) (Verdict, Reason) {
	m.expire(now)
	if s == 0 {
		return Error, ReasonBadSession
	}
	k := m.live(now, fp)
	switch {
	case k == nil:
	case k.state == Queued:
		return No, ReasonQueued
	case k.state == Done:
		return No, k.outcome.reason()
	case k.owner == s:
		return OK, ReasonOwner
	default:
		for i := range k.waiters {
			if k.waiters[i].s == s {
				k.waiters[i].req = req
				return Wait, ReasonRequested
			}
		}
		k.waiters = append(k.waiters, mWaiter{s, req, now, m.next()})
		m.ev(EventWaiting, s, fp, ReasonNone)
		return Wait, ReasonRequested
	}
	m.keys[fp] = &mKey{state: Requested, key: key, owner: s, since: now, acq: m.next()}
	m.ev(EventRequested, s, fp, ReasonNone)
	return OK, ReasonNone
}

func (m *model) answerAll(fp id.Fingerprint, k *mKey, r Reason) {
	for _, w := range k.waiters {
		m.answers = append(m.answers, Answer{w.s, w.req, fp, No, r})
	}
	k.waiters = nil
}

func (m *model) queue(now time.Time, s id.Session, fp id.Fingerprint) (Verdict, Reason) {
	m.expire(now)
	k := m.live(now, fp)
	switch {
	case k == nil:
		return Error, ReasonUnknown
	case k.state != Requested:
		return Error, ReasonWrongState
	case k.owner != s:
		return Error, ReasonNotOwner
	}
	m.answerAll(fp, k, ReasonQueued)
	k.state, k.owner, k.since, k.acq = Queued, 0, now, m.next()
	m.ev(EventQueued, s, fp, ReasonNone)
	return OK, ReasonNone
}

func (m *model) done(now time.Time, fp id.Fingerprint, o Outcome) {
	m.expire(now)
	if k := m.keys[fp]; k != nil && k.state != Done {
		m.answerAll(fp, k, o.reason())
	}
	m.keys[fp] = &mKey{state: Done, outcome: o, doneAt: ceilSecond(now)}
	m.ev(EventDone, 0, fp, o.reason())
}

func (m *model) release(now time.Time, s id.Session) {
	m.expire(now)
	type wait struct {
		fp   id.Fingerprint
		join uint64
	}
	var waits []wait
	for fp, k := range m.keys {
		for i, w := range k.waiters {
			if w.s == s {
				waits = append(waits, wait{fp, w.join})
				k.waiters = slices.Delete(k.waiters, i, i+1)
				break
			}
		}
	}
	slices.SortFunc(waits, func(a, b wait) int { return int(a.join) - int(b.join) })
	for _, w := range waits {
		m.ev(EventLeft, s, w.fp, ReasonReleased)
	}
	for _, fp := range m.sortedFPs(func(k *mKey) bool { return k.state == Requested && k.owner == s }) {
		m.ev(EventReleased, s, fp, ReasonReleased)
		m.handOver(now, fp, ReasonReleased)
	}
}

// lookup is what Ledger.Lookup should return for fp.
func (m *model) lookup(now time.Time, fp id.Fingerprint) (Record, bool) {
	k := m.live(now, fp)
	if k == nil {
		return Record{}, false
	}
	if k.state == Done {
		return Record{FP: fp, State: Done, Since: k.doneAt, Outcome: k.outcome}, true
	}
	return Record{FP: fp, State: k.state, Key: k.key, Owner: k.owner, Waiters: len(k.waiters), Since: k.since}, true
}

// modelKeys are the few keys the randomized tests work on (so that they
// collide often), with their fingerprints.
func modelKeys() (labels []string, fps []id.Fingerprint) {
	labels = []string{"a", "b", "c", "d", "e", "f"}
	for _, s := range labels {
		fps = append(fps, fpOf(s))
	}
	return labels, fps
}

type pendingKey struct {
	s  id.Session
	fp id.Fingerprint
}

// TestModelRandomized runs thousands of random operation sequences against
// the ledger and the model, checking after every step that they agree, that
// the ledger's indexes agree with its table, that a waiter is answered
// exactly once, and (when persisting) that replaying the writes rebuilds the
// durable state.
func TestModelRandomized(t *testing.T) {
	sequences, steps := 3000, 80
	if testing.Short() {
		sequences = 300
	}
	labels, fps := modelKeys()
	for seq := 0; seq < sequences; seq++ {
		rng := rand.New(rand.NewPCG(uint64(seq), 0x5eed))
		cfg := Config{
			RequestTTL: []time.Duration{0, 3 * time.Second, 7 * time.Second}[rng.IntN(3)],
			DoneTTL:    []time.Duration{0, 2 * time.Second, 5 * time.Second}[rng.IntN(3)],
			FailedTTL:  []time.Duration{0, time.Second, 4 * time.Second}[rng.IntN(3)],
			Persist:    rng.IntN(2) == 0,
			SweepLimit: rng.IntN(4),
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
		m := newModel(cfg)
		now := base.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)
		pending := make(map[pendingKey]uint64)
		var writes []Write
		var reqID uint64

		for step := 0; step < steps; step++ {
			s := id.Session(1 + rng.IntN(4))
			if rng.IntN(50) == 0 {
				s = 0
			}
			ki := rng.IntN(len(labels))
			var got, want []Result
			var released id.Session // its requests pending an answer are void once the answers are in
			switch op := rng.IntN(100); {
			case op < 35:
				reqID++
				fmt.Fprintf(&trace, "  %v request s=%d req=%d key=%s\n", now.Sub(base), s, reqID, labels[ki])
				v, r := l.Request(now, s, reqID, key(labels[ki]), fps[ki])
				got = append(got, Result{v, r})
				mv, mr := m.request(now, s, reqID, fps[ki], key(labels[ki]))
				want = append(want, Result{mv, mr})
				if mv == Wait {
					pending[pendingKey{s, fps[ki]}] = reqID
				}
			case op < 43:
				reqID++
				n := 2 + rng.IntN(3)
				items := make([]Item, n)
				var names []string
				for i := range items {
					j := rng.IntN(len(labels))
					items[i] = Item{key(labels[j]), fps[j]}
					names = append(names, labels[j])
				}
				fmt.Fprintf(&trace, "  %v request-batch s=%d req=%d keys=%s\n", now.Sub(base), s, reqID, strings.Join(names, ","))
				got = l.RequestBatch(now, s, reqID, items, nil)
				for _, it := range items {
					mv, mr := m.request(now, s, reqID, it.FP, it.Key)
					want = append(want, Result{mv, mr})
					if mv == Wait {
						pending[pendingKey{s, it.FP}] = reqID
					}
				}
			case op < 58:
				if rng.IntN(2) == 0 { // mostly the owner, to reach the OK path
					if k := m.keys[fps[ki]]; k != nil && k.owner != 0 {
						s = k.owner
					}
				}
				fmt.Fprintf(&trace, "  %v queue s=%d key=%s\n", now.Sub(base), s, labels[ki])
				if rng.IntN(4) == 0 {
					got = l.QueueBatch(now, s, []id.Fingerprint{fps[ki]}, nil)
				} else {
					v, r := l.Queue(now, s, fps[ki])
					got = append(got, Result{v, r})
				}
				mv, mr := m.queue(now, s, fps[ki])
				want = append(want, Result{mv, mr})
			case op < 70:
				o := Outcome(rng.IntN(2))
				fmt.Fprintf(&trace, "  %v done key=%s outcome=%v\n", now.Sub(base), labels[ki], o)
				if rng.IntN(4) == 0 {
					l.DoneBatch(now, []Item{{key(labels[ki]), fps[ki]}}, o)
				} else {
					l.Done(now, key(labels[ki]), fps[ki], o)
				}
				m.done(now, fps[ki], o)
			case op < 78:
				fmt.Fprintf(&trace, "  %v release s=%d\n", now.Sub(base), s)
				l.Release(now, s)
				m.release(now, s)
				released = s
			case op < 85:
				fmt.Fprintf(&trace, "  %v tick\n", now.Sub(base))
				l.Tick(now)
				m.expire(now)
			default:
				now = now.Add(time.Duration(rng.IntN(2500)) * time.Millisecond)
				continue
			}

			if !slices.Equal(got, want) {
				fail("results %v, model says %v", got, want)
			}
			if err := l.check(); err != nil {
				fail("invariant broken: %v", err)
			}
			answers := l.TakeAnswers(nil)
			if !slices.Equal(answers, m.answers) {
				fail("answers %+v, model says %+v", answers, m.answers)
			}
			m.answers = m.answers[:0]
			for _, a := range answers {
				pk := pendingKey{a.Session, a.FP}
				req, ok := pending[pk]
				if !ok || req != a.ReqID {
					fail("answer %+v to no pending request (pending req %d, %v)", a, req, ok)
				}
				delete(pending, pk)
			}
			for pk := range pending {
				if released != 0 && pk.s == released {
					delete(pending, pk)
				}
			}
			events := l.TakeEvents(nil)
			if !slices.Equal(events, m.events) {
				fail("events %+v, model says %+v", events, m.events)
			}
			m.events = m.events[:0]
			writes = l.TakeWrites(writes)

			nWaiting := 0
			for i, fp := range fps {
				rec, ok := l.Lookup(now, fp)
				mrec, mok := m.lookup(now, fp)
				if ok != mok || rec != mrec && !sameRecord(rec, mrec) {
					fail("Lookup(%s) = %+v, %v; model says %+v, %v", labels[i], rec, ok, mrec, mok)
				}
				ws := l.Waiters(fp)
				var mws []Waiter
				if k := m.keys[fp]; k != nil {
					for _, w := range k.waiters {
						mws = append(mws, Waiter{w.s, w.req, w.since})
					}
				}
				if !slices.EqualFunc(ws, mws, func(a, b Waiter) bool {
					return a.Session == b.Session && a.ReqID == b.ReqID && a.Since.Equal(b.Since)
				}) {
					fail("Waiters(%s) = %+v, model says %+v", labels[i], ws, mws)
				}
				for _, w := range ws {
					if pending[pendingKey{w.Session, fp}] != w.ReqID {
						fail("waiter %+v on %s has no matching pending request", w, labels[i])
					}
				}
				nWaiting += len(ws)
			}
			if nWaiting != len(pending) {
				fail("%d waiters in the ledger, %d requests pending an answer", nWaiting, len(pending))
			}
			c := l.Counts()
			if c.Waiters != nWaiting || c.Requested != len(l.Requested(0, 100)) || c.Queued != len(l.Queued(0, 100)) {
				fail("Counts %+v disagree with the windows and waiter lists", c)
			}
		}
		if cfg.Persist {
			checkReplay(t, cfg, writes, l, now, fps)
		} else if len(writes) != 0 {
			t.Fatalf("sequence %d: %d writes without Persist", seq, len(writes))
		}
	}
}

func sameRecord(a, b Record) bool {
	return a.FP == b.FP && a.State == b.State && a.Key == b.Key && a.Owner == b.Owner &&
		a.Waiters == b.Waiters && a.Since.Equal(b.Since) && a.Outcome == b.Outcome
}

// checkReplay rebuilds a ledger from writes, as on restart, and requires the
// same queued and done keys as l at now; requested keys are not persisted.
func checkReplay(t *testing.T, cfg Config, writes []Write, l *Ledger, now time.Time, fps []id.Fingerprint) {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range writes {
		r.Restore(w)
	}
	if err := r.check(); err != nil {
		t.Fatalf("restored ledger: %v", err)
	}
	if len(r.TakeEvents(nil))+len(r.TakeWrites(nil))+len(r.TakeAnswers(nil)) != 0 {
		t.Fatal("Restore produced events, writes or answers on a fresh ledger")
	}
	for _, fp := range fps {
		want, ok := l.Lookup(now, fp)
		if ok && want.State == Requested {
			ok, want = false, Record{}
		}
		want.Owner, want.Waiters = 0, 0
		got, gotOK := r.Lookup(now, fp)
		if ok != gotOK || !sameRecord(got, want) {
			t.Fatalf("after replaying %d writes, Lookup(%s) = %+v, %v; want %+v, %v", len(writes), fp, got, gotOK, want, ok)
		}
	}
}
