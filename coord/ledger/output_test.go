package ledger

import (
	"slices"
	"testing"
	"time"

	"drover/coord/id"
)

func TestWritesWhenPersisting(t *testing.T) {
	h := newHarness(t, Config{DoneTTL: 10 * time.Second, Persist: true})
	h.request(1, 1, "a") // requested: session-bound, not persisted
	h.advance(time.Second)
	h.queue(1, "a")
	h.advance(time.Second)
	h.done("a", DoneOK)
	h.l.Done(h.now, id.Key{}, fpOf("b"), DoneFailed) // done from outside, key unknown
	h.advance(10 * time.Second)
	h.request(2, 2, "a") // done expired: the record is deleted, then requested
	t1, t2 := base.Add(time.Second), base.Add(2*time.Second)
	want := []Write{
		{Op: PutQueued, FP: fpOf("a"), Key: key("a"), At: t1},
		{Op: PutDone, FP: fpOf("a"), Key: key("a"), At: t2, Outcome: DoneOK},
		{Op: PutDone, FP: fpOf("b"), At: t2, Outcome: DoneFailed},
		{Op: Delete, FP: fpOf("a"), At: h.now},
	}
	got := h.l.TakeWrites(nil)
	if !slices.EqualFunc(got, want, func(a, b Write) bool {
		return a.Op == b.Op && a.FP == b.FP && a.Key == b.Key && a.At.Equal(b.At) && a.Outcome == b.Outcome
	}) {
		t.Fatalf("writes =\n%+v\nwant\n%+v", got, want)
	}
	if again := h.l.TakeWrites(nil); len(again) != 0 {
		t.Fatalf("TakeWrites returned %d writes a second time", len(again))
	}
}

func TestNoWritesWithoutPersist(t *testing.T) {
	h := newHarness(t, Config{})
	h.request(1, 1, "a")
	h.queue(1, "a")
	h.done("a", DoneOK)
	if got := h.l.TakeWrites(nil); len(got) != 0 {
		t.Fatalf("writes without Persist: %+v", got)
	}
}

func TestRestore(t *testing.T) {
	at := base.Add(-time.Hour)
	tests := []struct {
		name   string
		writes []Write
		want   Record // State 0: absent
	}{
		{"queued", []Write{{Op: PutQueued, FP: fpOf("k"), Key: key("k"), At: at}},
			Record{FP: fpOf("k"), State: Queued, Key: key("k"), Since: at}},
		{"done", []Write{{Op: PutDone, FP: fpOf("k"), At: at, Outcome: DoneFailed}},
			Record{FP: fpOf("k"), State: Done, Since: at, Outcome: DoneFailed}},
		{"done expired", []Write{{Op: PutDone, FP: fpOf("k"), At: base.Add(-2 * time.Hour), Outcome: DoneOK}}, Record{}},
		{"queued then done", []Write{
			{Op: PutQueued, FP: fpOf("k"), Key: key("k"), At: at},
			{Op: PutDone, FP: fpOf("k"), At: at.Add(time.Minute)},
		}, Record{FP: fpOf("k"), State: Done, Since: at.Add(time.Minute)}},
		{"done then queued", []Write{
			{Op: PutDone, FP: fpOf("k"), At: at},
			{Op: PutQueued, FP: fpOf("k"), Key: key("k"), At: at.Add(time.Minute)},
		}, Record{FP: fpOf("k"), State: Queued, Key: key("k"), Since: at.Add(time.Minute)}},
		{"queued then deleted", []Write{
			{Op: PutQueued, FP: fpOf("k"), Key: key("k"), At: at},
			{Op: Delete, FP: fpOf("k")},
		}, Record{}},
		{"done then deleted", []Write{{Op: PutDone, FP: fpOf("k"), At: at}, {Op: Delete, FP: fpOf("k")}}, Record{}},
		{"unknown op ignored", []Write{{Op: WriteOp(9), FP: fpOf("k"), At: at}}, Record{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Config{DoneTTL: time.Hour, Persist: true})
			for _, w := range tt.writes {
				h.l.Restore(w)
				h.checked()
			}
			rec, ok := h.l.Lookup(h.now, fpOf("k"))
			if ok != (tt.want.State != 0) || !sameRecord(rec, tt.want) {
				t.Fatalf("Lookup = %+v, %v; want %+v", rec, ok, tt.want)
			}
			if n := len(h.l.TakeWrites(nil)) + len(h.l.TakeEvents(nil)) + len(h.l.TakeAnswers(nil)); n != 0 {
				t.Fatalf("Restore produced %d writes, events or answers; want none", n)
			}
		})
	}
}

func TestRestoreOverRequestedKey(t *testing.T) {
	// Not the intended use, but it must not strand the waiters.
	h := newHarness(t, Config{})
	h.request(1, 1, "k")
	h.request(2, 2, "k")
	h.l.Restore(Write{Op: PutQueued, FP: fpOf("k"), Key: key("k"), At: base})
	h.checked()
	want := []Answer{{Session: 2, ReqID: 2, FP: fpOf("k"), Verdict: No, Reason: ReasonQueued}}
	if got := h.answers(); !slices.Equal(got, want) {
		t.Fatalf("answers = %+v, want %+v", got, want)
	}
	h.request(3, 3, "j")
	h.l.Restore(Write{Op: Delete, FP: fpOf("j")}) // requested keys are not persisted: ignored
	h.checked()
	if rec, ok := h.l.Lookup(h.now, fpOf("j")); !ok || rec.Owner != 3 {
		t.Fatalf("Delete of a requested key changed it: %+v, %v", rec, ok)
	}
}

func TestTakeAppendsAndClears(t *testing.T) {
	h := newHarness(t, Config{})
	h.request(1, 1, "k")
	h.request(2, 2, "k")
	h.release(1)
	prefix := []Answer{{Session: 9}}
	got := h.l.TakeAnswers(prefix)
	if len(got) != 2 || got[0].Session != 9 || got[1].Session != 2 {
		t.Fatalf("TakeAnswers(prefix) = %+v; want the prefix then the handover", got)
	}
	if got := h.l.TakeAnswers(nil); len(got) != 0 {
		t.Fatalf("second TakeAnswers = %+v; want none", got)
	}
	evs := h.l.TakeEvents(nil)
	want := []EventKind{EventRequested, EventWaiting, EventReleased, EventHandover}
	var kinds []EventKind
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	if !slices.Equal(kinds, want) {
		t.Fatalf("event kinds = %v, want %v", kinds, want)
	}
	if got := h.l.TakeEvents(nil); len(got) != 0 {
		t.Fatalf("second TakeEvents = %+v; want none", got)
	}
}

func TestStrings(t *testing.T) {
	tests := []struct{ got, want string }{
		{OK.String(), "ok"}, {No.String(), "no"}, {Wait.String(), "wait"}, {Error.String(), "error"},
		{Verdict(0).String(), "verdict(0)"},
		{Requested.String(), "requested"}, {Queued.String(), "queued"}, {Done.String(), "done"},
		{State(0).String(), "state(0)"},
		{DoneOK.String(), "ok"}, {DoneFailed.String(), "failed"},
		{PutQueued.String(), "put-queued"}, {PutDone.String(), "put-done"}, {Delete.String(), "delete"},
		{WriteOp(0).String(), "write(0)"},
		{EventRequested.String(), "requested"}, {EventWaiting.String(), "waiting"},
		{EventQueued.String(), "queued"}, {EventDone.String(), "done"}, {EventHandover.String(), "handover"},
		{EventExpired.String(), "expired"}, {EventReleased.String(), "released"}, {EventLeft.String(), "left"},
		{EventKind(0).String(), "event(0)"}, {EventKind(200).String(), "event(200)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("String() = %q, want %q", tt.got, tt.want)
		}
	}
}

func TestSweepDeletesRestoredExpiredRecords(t *testing.T) {
	// A record that expired while the coordinator was down must leave the
	// store too: restored quietly, swept with a Delete write.
	h := newHarness(t, Config{DoneTTL: time.Hour, Persist: true})
	h.l.Restore(Write{Op: PutDone, FP: fpOf("old"), At: base.Add(-2 * time.Hour)})
	h.l.Restore(Write{Op: PutDone, FP: fpOf("new"), At: base.Add(-time.Minute)})
	if w := h.l.TakeWrites(nil); len(w) != 0 {
		t.Fatalf("Restore wrote %+v", w)
	}
	h.tick()
	want := []Write{{Op: Delete, FP: fpOf("old"), At: base}}
	if got := h.l.TakeWrites(nil); len(got) != 1 || got[0].Op != want[0].Op || got[0].FP != want[0].FP || !got[0].At.Equal(base) {
		t.Fatalf("writes after Tick = %+v, want %+v", got, want)
	}
	if c := h.l.Counts(); c.Done != 1 {
		t.Fatalf("Counts().Done = %d after the sweep, want 1", c.Done)
	}
}
