package ledger

import (
	"slices"
	"strings"
	"testing"
	"time"

	"drover/coord/id"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		wantInErr string // "" = valid
	}{
		{"zero", Config{}, ""},
		{"typical", Config{RequestTTL: 5 * time.Minute, DoneTTL: 24 * time.Hour, FailedTTL: time.Hour, Persist: true, SweepLimit: 100}, ""},
		{"one second ttl", Config{DoneTTL: time.Second, FailedTTL: time.Second}, ""},
		{"sub-second request ttl", Config{RequestTTL: time.Millisecond}, ""},
		{"negative request ttl", Config{RequestTTL: -1}, "RequestTTL"},
		{"negative done ttl", Config{DoneTTL: -time.Second}, "DoneTTL"},
		{"negative failed ttl", Config{FailedTTL: -time.Second}, "FailedTTL"},
		{"sub-second done ttl", Config{DoneTTL: 500 * time.Millisecond}, "at least 1s"},
		{"sub-second failed ttl", Config{FailedTTL: time.Nanosecond}, "FailedTTL"},
		{"done ttl too long", Config{DoneTTL: 100 * 365 * 24 * time.Hour}, "at most"},
		{"negative sweep limit", Config{SweepLimit: -1}, "SweepLimit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := New(tt.cfg)
			if tt.wantInErr == "" {
				if err != nil || l == nil {
					t.Fatalf("New(%+v) = %v, %v; want a ledger", tt.cfg, l, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantInErr) {
				t.Fatalf("New(%+v) error = %v; want one mentioning %q", tt.cfg, err, tt.wantInErr)
			}
			if !strings.Contains(err.Error(), "want") {
				t.Fatalf("New(%+v) error %q does not say what was expected", tt.cfg, err)
			}
		})
	}
}

// TestRequestRules covers every branch of request: each case sets up the
// key "k" with the given steps, then session 2 requests it.
func TestRequestRules(t *testing.T) {
	cfg := Config{DoneTTL: 10 * time.Second, FailedTTL: 2 * time.Second}
	tests := []struct {
		name    string
		setup   func(h *harness)
		session id.Session
		wantV   Verdict
		wantR   Reason
	}{
		{"absent: ok", func(h *harness) {}, 2, OK, ReasonNone},
		{"requested by self: ok again", func(h *harness) { h.request(2, 1, "k") }, 2, OK, ReasonOwner},
		{"requested by another: wait", func(h *harness) { h.request(1, 1, "k") }, 2, Wait, ReasonRequested},
		{"already waiting: wait again", func(h *harness) { h.request(1, 1, "k"); h.request(2, 1, "k") }, 2, Wait, ReasonRequested},
		{"queued: no", func(h *harness) { h.request(1, 1, "k"); h.queue(1, "k") }, 2, No, ReasonQueued},
		{"queued by self: no", func(h *harness) { h.request(2, 1, "k"); h.queue(2, "k") }, 2, No, ReasonQueued},
		{"done young: no done", func(h *harness) { h.done("k", DoneOK); h.advance(9 * time.Second) }, 2, No, ReasonDone},
		{"done old: ok", func(h *harness) { h.done("k", DoneOK); h.advance(10 * time.Second) }, 2, OK, ReasonNone},
		{"failed young: no failed", func(h *harness) { h.done("k", DoneFailed); h.advance(time.Second) }, 2, No, ReasonFailed},
		{"failed old: ok", func(h *harness) { h.done("k", DoneFailed); h.advance(2 * time.Second) }, 2, OK, ReasonNone},
		{"done then failed: failed ttl", func(h *harness) {
			h.done("k", DoneOK)
			h.done("k", DoneFailed)
			h.advance(3 * time.Second)
		}, 2, OK, ReasonNone},
		{"session zero: error", func(h *harness) {}, 0, Error, ReasonBadSession},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, cfg)
			tt.setup(h)
			v, r := h.request(tt.session, 99, "k")
			mustVerdict(t, "Request", v, r, tt.wantV, tt.wantR)
			if got := h.answers(); len(got) != 0 {
				t.Fatalf("deferred answers %+v; want none", got)
			}
		})
	}
}

func TestRequestOwnerStaysOwner(t *testing.T) {
	h := newHarness(t, Config{})
	h.request(1, 1, "k")
	h.request(1, 2, "k")
	rec, ok := h.l.Lookup(h.now, fpOf("k"))
	if !ok || rec.State != Requested || rec.Owner != 1 || rec.Waiters != 0 {
		t.Fatalf("after two requests by session 1: %+v, %v; want requested by 1 with no waiters", rec, ok)
	}
}

func TestWaiterJoinsOnceWithNewestReqID(t *testing.T) {
	h := newHarness(t, Config{})
	h.request(1, 1, "k")
	h.request(2, 10, "k")
	h.request(3, 20, "k")
	h.request(2, 11, "k") // a retry: keeps its place, newest request id
	want := []Waiter{{2, 11, base}, {3, 20, base}}
	if got := h.l.Waiters(fpOf("k")); !slices.Equal(got, want) {
		t.Fatalf("Waiters = %+v, want %+v", got, want)
	}
	if c := h.l.Counts(); c.Waiters != 2 {
		t.Fatalf("Counts().Waiters = %d, want 2", c.Waiters)
	}
	h.release(1)
	want2 := []Answer{{Session: 2, ReqID: 11, FP: fpOf("k"), Verdict: OK, Reason: ReasonHandover}}
	if got := h.answers(); !slices.Equal(got, want2) {
		t.Fatalf("answers after release = %+v, want %+v", got, want2)
	}
}

// TestQueueRules covers every branch of queue: each case sets up "k", then
// session 1 queues it.
func TestQueueRules(t *testing.T) {
	cfg := Config{RequestTTL: 5 * time.Second, DoneTTL: 10 * time.Second}
	tests := []struct {
		name  string
		setup func(h *harness)
		wantV Verdict
		wantR Reason
	}{
		{"owner: ok", func(h *harness) { h.request(1, 1, "k") }, OK, ReasonNone},
		{"absent: unknown", func(h *harness) {}, Error, ReasonUnknown},
		{"another's: not-owner", func(h *harness) { h.request(2, 1, "k") }, Error, ReasonNotOwner},
		{"waiting on it: not-owner", func(h *harness) { h.request(2, 1, "k"); h.request(1, 1, "k") }, Error, ReasonNotOwner},
		{"queued already: wrong-state", func(h *harness) { h.request(1, 1, "k"); h.queue(1, "k") }, Error, ReasonWrongState},
		{"done: wrong-state", func(h *harness) { h.request(1, 1, "k"); h.done("k", DoneOK) }, Error, ReasonWrongState},
		{"done expired: unknown", func(h *harness) { h.done("k", DoneOK); h.advance(10 * time.Second) }, Error, ReasonUnknown},
		{"owner after release: unknown", func(h *harness) { h.request(1, 1, "k"); h.release(1) }, Error, ReasonUnknown},
		{"lease expired, no waiter: unknown", func(h *harness) { h.request(1, 1, "k"); h.advance(5 * time.Second) }, Error, ReasonUnknown},
		{"lease expired, passed on: not-owner", func(h *harness) {
			h.request(1, 1, "k")
			h.request(2, 1, "k")
			h.advance(5 * time.Second)
		}, Error, ReasonNotOwner},
		{"lease almost expired: ok", func(h *harness) { h.request(1, 1, "k"); h.advance(5*time.Second - 1) }, OK, ReasonNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, cfg)
			tt.setup(h)
			h.answers()
			v, r := h.queue(1, "k")
			mustVerdict(t, "Queue", v, r, tt.wantV, tt.wantR)
		})
	}
}

func TestQueueAnswersWaitersNo(t *testing.T) {
	h := newHarness(t, Config{})
	h.request(1, 1, "k")
	h.request(2, 5, "k")
	h.request(3, 6, "k")
	v, r := h.queue(1, "k")
	mustVerdict(t, "Queue by the owner", v, r, OK, ReasonNone)
	want := []Answer{
		{Session: 2, ReqID: 5, FP: fpOf("k"), Verdict: No, Reason: ReasonQueued},
		{Session: 3, ReqID: 6, FP: fpOf("k"), Verdict: No, Reason: ReasonQueued},
	}
	if got := h.answers(); !slices.Equal(got, want) {
		t.Fatalf("answers = %+v, want %+v", got, want)
	}
	rec, _ := h.l.Lookup(h.now, fpOf("k"))
	if rec.State != Queued || rec.Owner != 0 || rec.Waiters != 0 || rec.Key != key("k") {
		t.Fatalf("record after queue = %+v; want queued, no owner, no waiters, its key", rec)
	}
	if c := h.l.Counts(); c != (Counts{Queued: 1}) {
		t.Fatalf("Counts = %+v, want only one queued", c)
	}
}

func TestDoneRules(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(h *harness)
		outcome     Outcome
		wantAnswers []Answer
	}{
		{"absent", func(h *harness) {}, DoneOK, nil},
		{"requested, no waiters", func(h *harness) { h.request(1, 1, "k") }, DoneOK, nil},
		{"requested, waiters get no done", func(h *harness) {
			h.request(1, 1, "k")
			h.request(2, 7, "k")
			h.request(3, 8, "k")
		}, DoneOK, []Answer{{2, 7, fpOf("k"), No, ReasonDone}, {3, 8, fpOf("k"), No, ReasonDone}}},
		{"requested, waiters get no failed", func(h *harness) {
			h.request(1, 1, "k")
			h.request(2, 7, "k")
		}, DoneFailed, []Answer{{2, 7, fpOf("k"), No, ReasonFailed}}},
		{"queued", func(h *harness) { h.request(1, 1, "k"); h.queue(1, "k") }, DoneOK, nil},
		{"done again", func(h *harness) { h.done("k", DoneFailed) }, DoneOK, nil},
		{"unknown outcome counts as failed", func(h *harness) {}, Outcome(7), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			tt.setup(h)
			h.answers()
			h.advance(1500 * time.Millisecond)
			h.done("k", tt.outcome)
			if got := h.answers(); !slices.Equal(got, tt.wantAnswers) {
				t.Fatalf("answers = %+v, want %+v", got, tt.wantAnswers)
			}
			wantOutcome := DoneOK
			if tt.outcome != DoneOK {
				wantOutcome = DoneFailed
			}
			rec, ok := h.l.Lookup(h.now, fpOf("k"))
			wantSince := base.Add(2 * time.Second) // rounded up to the second
			if !ok || rec.State != Done || rec.Outcome != wantOutcome || !rec.Since.Equal(wantSince) || rec.Owner != 0 {
				t.Fatalf("Lookup = %+v, %v; want done %v since %v", rec, ok, wantOutcome, wantSince)
			}
			if c := h.l.Counts(); c != (Counts{Done: 1}) {
				t.Fatalf("Counts = %+v, want only one done", c)
			}
		})
	}
}

// TestReleaseRules: session 1 dies holding and waiting on keys.
func TestReleaseRules(t *testing.T) {
	h := newHarness(t, Config{})
	h.request(1, 1, "alone")  // no waiter: removed
	h.request(1, 2, "wanted") // waiters 2 then 3: passes to 2
	h.request(2, 3, "wanted") //
	h.request(3, 4, "wanted") //
	h.request(4, 5, "other")  // 1 waits behind 4's key: leaves the queue
	h.request(1, 6, "other")  //
	h.request(3, 7, "other")  //
	h.request(1, 8, "queued") // queued keys are not session-bound
	h.queue(1, "queued")      //
	h.advance(time.Second)
	h.answers()
	h.l.TakeEvents(nil)
	h.release(1)

	wantAnswers := []Answer{{Session: 2, ReqID: 3, FP: fpOf("wanted"), Verdict: OK, Reason: ReasonHandover}}
	if got := h.answers(); !slices.Equal(got, wantAnswers) {
		t.Fatalf("answers = %+v, want %+v", got, wantAnswers)
	}
	wantEvents := []Event{
		{EventLeft, 1, fpOf("other"), ReasonReleased},
		{EventReleased, 1, fpOf("alone"), ReasonReleased},
		{EventReleased, 1, fpOf("wanted"), ReasonReleased},
		{EventHandover, 2, fpOf("wanted"), ReasonReleased},
	}
	if got := h.l.TakeEvents(nil); !slices.Equal(got, wantEvents) {
		t.Fatalf("events = %+v, want %+v", got, wantEvents)
	}
	if _, ok := h.l.Lookup(h.now, fpOf("alone")); ok {
		t.Fatal("a released key with no waiter is still there")
	}
	rec, _ := h.l.Lookup(h.now, fpOf("wanted"))
	if rec.Owner != 2 || rec.Waiters != 1 || !rec.Since.Equal(h.now) {
		t.Fatalf("handed-over key = %+v; want owner 2, one waiter, lease since %v", rec, h.now)
	}
	if got := h.l.Waiters(fpOf("other")); len(got) != 1 || got[0].Session != 3 {
		t.Fatalf("waiters of other = %+v; want only session 3", got)
	}
	if rec, _ := h.l.Lookup(h.now, fpOf("queued")); rec.State != Queued {
		t.Fatalf("queued key after release = %+v; want still queued", rec)
	}
	h.release(1) // again: nothing left
	h.release(42)
	if got := h.answers(); len(got) != 0 {
		t.Fatalf("releasing unknown sessions answered %+v", got)
	}
}

func TestLeaseExpiry(t *testing.T) {
	h := newHarness(t, Config{RequestTTL: 10 * time.Second})
	if _, ok := h.l.NextDeadline(); ok {
		t.Fatal("NextDeadline on an empty ledger reported a deadline")
	}
	h.request(1, 1, "a")
	h.advance(2 * time.Second)
	h.request(1, 2, "b")
	h.request(2, 3, "b")
	if d, ok := h.l.NextDeadline(); !ok || !d.Equal(base.Add(10*time.Second)) {
		t.Fatalf("NextDeadline = %v, %v; want %v", d, ok, base.Add(10*time.Second))
	}
	h.advance(8*time.Second - 1)
	h.tick()
	if c := h.l.Counts(); c.Requested != 2 {
		t.Fatalf("before the deadline: %d requested, want 2", c.Requested)
	}
	h.advance(1)
	h.tick() // a expires, removed
	if _, ok := h.l.Lookup(h.now, fpOf("a")); ok {
		t.Fatal("a is still there after its lease expired with no waiter")
	}
	if d, _ := h.l.NextDeadline(); !d.Equal(base.Add(12 * time.Second)) {
		t.Fatalf("NextDeadline = %v, want b's %v", d, base.Add(12*time.Second))
	}
	h.advance(2 * time.Second)
	h.tick() // b passes to 2, with a fresh lease
	want := []Answer{{Session: 2, ReqID: 3, FP: fpOf("b"), Verdict: OK, Reason: ReasonHandover}}
	if got := h.answers(); !slices.Equal(got, want) {
		t.Fatalf("answers = %+v, want %+v", got, want)
	}
	if d, _ := h.l.NextDeadline(); !d.Equal(h.now.Add(10 * time.Second)) {
		t.Fatalf("NextDeadline = %v, want the new lease's %v", d, h.now.Add(10*time.Second))
	}
	evs := h.l.TakeEvents(nil)
	wantTail := []Event{
		{EventExpired, 1, fpOf("a"), ReasonExpired},
		{EventExpired, 1, fpOf("b"), ReasonExpired},
		{EventHandover, 2, fpOf("b"), ReasonExpired},
	}
	if len(evs) < 3 || !slices.Equal(evs[len(evs)-3:], wantTail) {
		t.Fatalf("events = %+v; want them to end with %+v", evs, wantTail)
	}
	// The old owner asks again: it now waits behind the new one.
	v, r := h.request(1, 9, "b")
	mustVerdict(t, "Request by the expired owner", v, r, Wait, ReasonRequested)
}

func TestLeaseExpiresWithoutTick(t *testing.T) {
	// Answers do not depend on Tick: the next call applies due expiries.
	h := newHarness(t, Config{RequestTTL: time.Minute})
	h.request(1, 1, "k")
	h.request(2, 2, "k")
	h.advance(time.Minute)
	v, r := h.request(3, 3, "k")
	mustVerdict(t, "Request after the lease ran out", v, r, Wait, ReasonRequested)
	want := []Answer{{Session: 2, ReqID: 2, FP: fpOf("k"), Verdict: OK, Reason: ReasonHandover}}
	if got := h.answers(); !slices.Equal(got, want) {
		t.Fatalf("answers = %+v, want %+v", got, want)
	}
}

func TestNoLeaseExpiryWithZeroTTL(t *testing.T) {
	h := newHarness(t, Config{})
	h.request(1, 1, "k")
	h.advance(1000 * time.Hour)
	h.tick()
	if rec, ok := h.l.Lookup(h.now, fpOf("k")); !ok || rec.Owner != 1 {
		t.Fatalf("with RequestTTL 0 the lease expired: %+v, %v", rec, ok)
	}
	if _, ok := h.l.NextDeadline(); ok {
		t.Fatal("NextDeadline reported a deadline with RequestTTL 0")
	}
}

func TestDoneSweepIsBoundedAndComplete(t *testing.T) {
	h := newHarness(t, Config{DoneTTL: 10 * time.Second, FailedTTL: 20 * time.Second, SweepLimit: 3, Persist: true})
	for i := 0; i < 10; i++ {
		h.l.Done(h.now, key(string(rune('a'+i))), fpOf(string(rune('a'+i))), Outcome(i%2))
	}
	h.l.TakeWrites(nil)
	h.advance(10 * time.Second) // the five ok records expire; failed ones live on
	h.tick()
	if c := h.l.Counts(); c.Done != 7 {
		t.Fatalf("after one Tick with SweepLimit 3: %d done records, want 7", c.Done)
	}
	h.tick()
	h.tick()
	if c := h.l.Counts(); c.Done != 5 {
		t.Fatalf("after three Ticks: %d done records, want the 5 failed ones", c.Done)
	}
	var deleted int
	for _, w := range h.l.TakeWrites(nil) {
		if w.Op != Delete {
			t.Fatalf("sweep wrote %+v; want only deletes", w)
		}
		deleted++
	}
	if deleted != 5 {
		t.Fatalf("sweep wrote %d deletes, want 5", deleted)
	}
	h.advance(10 * time.Second)
	h.tick()
	h.tick()
	if c := h.l.Counts(); c.Done != 0 {
		t.Fatalf("after the failed TTL: %d done records, want 0", c.Done)
	}
}

func TestDoneSweepSkipsRenewedRecords(t *testing.T) {
	h := newHarness(t, Config{DoneTTL: 10 * time.Second})
	h.done("k", DoneOK)
	h.advance(5 * time.Second)
	h.done("k", DoneOK) // done again: lives 10s from now
	h.advance(5 * time.Second)
	h.tick()
	if rec, ok := h.l.Lookup(h.now, fpOf("k")); !ok || rec.State != Done {
		t.Fatalf("sweep dropped a record renewed since: %+v, %v", rec, ok)
	}
	h.advance(5 * time.Second)
	h.tick()
	if c := h.l.Counts(); c.Done != 0 {
		t.Fatalf("%d done records after the renewed one expired, want 0", c.Done)
	}
}

func TestDoneKeepsUpWithoutTick(t *testing.T) {
	// Each Done sweeps a little, so memory stays bounded by the TTL window
	// even if Tick never runs.
	h := newHarness(t, Config{DoneTTL: time.Second})
	for i := 0; i < 5000; i++ {
		h.advance(10 * time.Millisecond)
		h.l.Done(h.now, id.Key{}, nthFP(uint64(i)), DoneOK)
	}
	// A record lives its TTL plus up to 1s of rounding: at most 2s, 200 records.
	if c := h.l.Counts(); c.Done > 201 {
		t.Fatalf("%d done records held with a 1s TTL at 100 per second, want at most 201", c.Done)
	}
	if q := h.l.done.q[DoneOK].n; q > 201 {
		t.Fatalf("sweep FIFO holds %d entries, want at most 201", q)
	}
}

// TestSmallPagesConfig: Config.SmallPages reaches the ledger's memory.
func TestSmallPagesConfig(t *testing.T) {
	for _, small := range []bool{false, true} {
		l, err := New(Config{SmallPages: small})
		if err != nil {
			t.Fatal(err)
		}
		if got := l.idx.mem.Small(); got != small {
			t.Errorf("Config.SmallPages %v: the ledger's memory has small pages %v", small, got)
		}
	}
}
