package ledger

import (
	"slices"
	"testing"
	"time"

	"drover/coord/id"
)

func TestBatchesMatchSingleCalls(t *testing.T) {
	setup := func(h *harness) {
		h.request(2, 1, "held")
		h.request(2, 1, "queued")
		h.queue(2, "queued")
		h.done("done", DoneOK)
		h.done("failed", DoneFailed)
	}
	labels := []string{"new", "held", "queued", "done", "failed", "new", "mine"}
	items := make([]Item, len(labels))
	for i, s := range labels {
		items[i] = Item{Key: key(s), FP: fpOf(s)}
	}

	single := newHarness(t, Config{})
	setup(single)
	single.request(1, 1, "mine")
	var want []Result
	for _, s := range labels {
		v, r := single.request(1, 7, s)
		want = append(want, Result{v, r})
	}
	batch := newHarness(t, Config{})
	setup(batch)
	batch.request(1, 1, "mine")
	got := batch.l.RequestBatch(batch.now, 1, 7, items, nil)
	batch.checked()
	if !slices.Equal(got, want) {
		t.Fatalf("RequestBatch = %v, single requests gave %v", got, want)
	}
	wantExplicit := []Result{{OK, ""}, {Wait, ReasonRequested}, {No, ReasonQueued}, {No, ReasonDone}, {No, ReasonFailed}, {OK, ReasonOwner}, {OK, ReasonOwner}}
	if !slices.Equal(got, wantExplicit) {
		t.Fatalf("RequestBatch = %v, want %v", got, wantExplicit)
	}

	fps := []id.Fingerprint{fpOf("new"), fpOf("held"), fpOf("queued"), fpOf("absent"), fpOf("mine")}
	qs := batch.l.QueueBatch(batch.now, 1, fps, nil)
	batch.checked()
	wantQ := []Result{{OK, ""}, {Error, ReasonNotOwner}, {Error, ReasonWrongState}, {Error, ReasonUnknown}, {OK, ""}}
	if !slices.Equal(qs, wantQ) {
		t.Fatalf("QueueBatch = %v, want %v", qs, wantQ)
	}

	batch.l.DoneBatch(batch.now, []Item{{key("held"), fpOf("held")}, {key("x"), fpOf("x")}}, DoneFailed)
	batch.checked()
	wantA := []Answer{{Session: 1, ReqID: 7, FP: fpOf("held"), Verdict: No, Reason: ReasonFailed}}
	if got := batch.answers(); !slices.Equal(got, wantA) {
		t.Fatalf("answers after DoneBatch = %+v, want %+v", got, wantA)
	}
	for _, s := range []string{"held", "x"} {
		if rec, ok := batch.l.Lookup(batch.now, fpOf(s)); !ok || rec.State != Done || rec.Outcome != DoneFailed {
			t.Fatalf("%s after DoneBatch = %+v, %v; want done, failed", s, rec, ok)
		}
	}
}

func TestBatchAppliesDueExpiriesFirst(t *testing.T) {
	h := newHarness(t, Config{RequestTTL: time.Second})
	h.request(1, 1, "k")
	h.advance(time.Second)
	got := h.l.RequestBatch(h.now, 2, 5, []Item{{key("k"), fpOf("k")}}, nil)
	if !slices.Equal(got, []Result{{OK, ""}}) {
		t.Fatalf("RequestBatch after the owner's lease ran out = %v, want ok", got)
	}
}
